// The accelerator catalogue: every entry loads, and its facts equal the vendor figures recorded in
// /work/shared/reference/hardware_specs.yaml (quoted in each comment) and its calibration equals
// the published measurement it cites (ratio computed by hand in the comment).
#include "projector/hardware/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "hardware/hw_test_util.h"

namespace projector {
namespace {

using testing::data_dir;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

double peak(const AcceleratorSpec& a, Dtype d) {
  return a.peak_tflops[static_cast<int>(d)];
}
double gemm(const AcceleratorSpec& a, Dtype d) {
  return a.calibration.gemm_peak_fraction[static_cast<int>(d)];
}

TEST(Catalog, ListsTheAccelerators) {
  const std::vector<std::string> expected = {
      "a100_40gb", "a100_80gb", "b200",     "b300",
      "gb200",     "gb300",     "h100_sxm", "h100_sxm_96gb_500w",
      "h20",       "h200",      "h800",     "mi250x",
      "mi300a",    "mi300x",    "mi325x",   "mi350x",
      "mi355x",    "mi455x",    "rubin",    "tpu7x",
      "tpu_v4",    "tpu_v5e",   "tpu_v5p",  "tpu_v6e"};
  EXPECT_EQ(list_accelerators(data_dir()), expected);
}

TEST(Catalog, EveryEntryLoadsWithItsDefaultNetwork) {
  const auto all = load_accelerator_catalog(data_dir());
  ASSERT_EQ(all.size(), 24u);
  for (const auto& a : all) {
    SCOPED_TRACE(a.name);
    EXPECT_FALSE(a.display_name.empty());
    EXPECT_FALSE(a.vendor.empty());
    EXPECT_TRUE(a.status == "shipping" || a.status == "announced") << a.status;
    EXPECT_GT(peak(a, Dtype::kBf16), 0.0);
    EXPECT_GT(a.hbm_bytes, 0.0);
    EXPECT_GT(a.hbm_bw_bytes_per_s, 0.0);
    // Announced parts may lack a published CU/SM count (GEMMs then use the roofline).
    if (a.status == "shipping") {
      EXPECT_GT(a.compute_units, 0);
    }
    const NetworkSpec net = default_network_for(a, data_dir());
    EXPECT_EQ(net.name, a.default_network);
    EXPECT_TRUE(net.unknown_keys.empty());
  }
}

// Vendor peaks, dense TFLOP/s (hardware_specs.yaml devices.*.compute.peak_tflops).
TEST(Catalog, PeaksEqualVendorFigures) {
  struct Case {
    const char* name;
    Dtype dtype;
    double tflops;
  };
  const Case cases[] = {
      {"mi300x", Dtype::kBf16, 1307.4},  // 2100 MHz x 304 CU x 2048 flop/clk
      {"mi300x", Dtype::kFp8, 2614.9},
      {"mi300x", Dtype::kFp32, 163.4},
      {"mi300x", Dtype::kTf32, 653.7},
      {"mi325x", Dtype::kBf16, 1307.4},
      {"mi355x", Dtype::kBf16, 2500.0},
      {"mi355x", Dtype::kFp8, 5000.0},
      {"mi355x", Dtype::kFp4, 10100.0},
      {"mi350x", Dtype::kBf16, 2300.0},  // Primus torchtitan patch, 2200 MHz
      {"mi250x", Dtype::kBf16, 191.5},   // 383 per package / 2 GCDs (torchtitan)
      {"a100_80gb", Dtype::kBf16, 312.0},
      {"a100_80gb", Dtype::kTf32, 156.0},
      {"a100_40gb", Dtype::kFp16, 312.0},
      {"h100_sxm", Dtype::kBf16, 989.4},  // 1830 MHz x 528 TCs x 512 FMA x 2
      {"h100_sxm", Dtype::kFp8, 1978.9},
      {"h200", Dtype::kBf16, 989.4},
      {"h800", Dtype::kFp8, 1978.9},
      {"b200", Dtype::kBf16, 2250.0},
      {"b200", Dtype::kFp8, 4500.0},
      {"b200", Dtype::kFp4, 9000.0},
      {"gb200", Dtype::kBf16, 2500.0},
      {"gb200", Dtype::kFp4, 10000.0},
      {"tpu_v4", Dtype::kBf16, 275.0},
      {"tpu_v5e", Dtype::kBf16, 197.0},
      {"tpu_v5p", Dtype::kBf16, 459.0},
      {"tpu_v5p", Dtype::kFp8, 459.0},
      {"tpu_v6e", Dtype::kBf16, 918.0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " " + std::string(to_string(c.dtype)));
    const AcceleratorSpec a = load_accelerator(c.name, data_dir());
    EXPECT_DOUBLE_EQ(peak(a, c.dtype), c.tflops);
    EXPECT_DOUBLE_EQ(a.peak_flops(c.dtype), c.tflops * 1e12);
  }
  // MI325X fp8: hardware_specs lists S1's rounded 2610; same CDNA3 compute as MI300X (2614.9).
  EXPECT_NEAR(peak(load_accelerator("mi325x", data_dir()), Dtype::kFp8), 2610.0, 5.0);
}

TEST(Catalog, UnsupportedDtypesHaveNoPeakAndNoFraction) {
  const AcceleratorSpec h100 = load_accelerator("h100_sxm", data_dir());
  EXPECT_EQ(peak(h100, Dtype::kMxfp8), 0.0);  // Hopper: no MX formats
  EXPECT_EQ(peak(h100, Dtype::kFp4), 0.0);
  EXPECT_EQ(gemm(h100, Dtype::kFp4), 0.0);
  const AcceleratorSpec a100 = load_accelerator("a100_80gb", data_dir());
  EXPECT_EQ(peak(a100, Dtype::kFp8), 0.0);  // Ampere: no fp8
  const AcceleratorSpec mi355 = load_accelerator("mi355x", data_dir());
  EXPECT_EQ(peak(mi355, Dtype::kTf32), 0.0);  // CDNA4: no tf32
}

// HBM capacity as labelled (binary-sized stacks, stored as GiB) and bandwidth in decimal TB/s.
TEST(Catalog, HbmEqualsVendorFigures) {
  struct Case {
    const char* name;
    double gib;
    double tb_per_s;
  };
  const Case cases[] = {
      {"mi300x", 192, 5.3},     {"mi325x", 256, 6.0},     {"mi350x", 288, 8.0},
      {"mi355x", 288, 8.0},     {"mi250x", 64, 1.64},  // 128 GiB, 3.28 TB/s per package / 2
      {"a100_40gb", 40, 1.555}, {"a100_80gb", 80, 2.039}, {"h100_sxm", 80, 3.35},
      {"h800", 80, 3.35},       {"h200", 141, 4.8},       {"b200", 180, 8.0},
      {"gb200", 186, 8.0},      {"tpu_v4", 32, 1.2},      {"tpu_v5e", 16, 0.819},
      {"tpu_v5p", 95, 2.765},   {"tpu_v6e", 32, 1.638},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const AcceleratorSpec a = load_accelerator(c.name, data_dir());
    EXPECT_DOUBLE_EQ(a.hbm_bytes, c.gib * kGiB);
    EXPECT_NEAR(a.hbm_bw_bytes_per_s, c.tb_per_s * 1e12, 1e6);
  }
  // 192 GiB is 206158430208 bytes, not 192e9.
  EXPECT_DOUBLE_EQ(load_accelerator("mi300x", data_dir()).hbm_bytes, 206158430208.0);
}

TEST(Catalog, CachesClocksAndScaleUp) {
  const AcceleratorSpec mi300 = load_accelerator("mi300x", data_dir());
  EXPECT_DOUBLE_EQ(mi300.l2_bytes, 32 * kMiB);    // 4 MiB x 8 XCDs
  EXPECT_DOUBLE_EQ(mi300.llc_bytes, 256 * kMiB);  // Infinity Cache
  EXPECT_DOUBLE_EQ(mi300.lds_bytes_per_cu, 64 * 1024.0);
  EXPECT_EQ(mi300.compute_units, 304);
  EXPECT_EQ(mi300.dies, 8);
  EXPECT_DOUBLE_EQ(mi300.boost_clock_mhz, 2100.0);
  EXPECT_DOUBLE_EQ(mi300.sustained_clock_mhz, 1207.0);           // MAF median clock
  EXPECT_DOUBLE_EQ(mi300.scaleup_bw_bytes_per_s, 7 * 64 * 1e9);  // 7 xGMI links x 64 GB/s
  EXPECT_EQ(mi300.scaleup_topology, "mesh");
  const AcceleratorSpec mi355 = load_accelerator("mi355x", data_dir());
  EXPECT_DOUBLE_EQ(mi355.lds_bytes_per_cu, 160 * 1024.0);
  EXPECT_DOUBLE_EQ(mi355.scaleup_bw_bytes_per_s, 7 * 76.5 * 1e9);
  const AcceleratorSpec h100 = load_accelerator("h100_sxm", data_dir());
  EXPECT_DOUBLE_EQ(h100.scaleup_bw_bytes_per_s, 450e9);
  EXPECT_EQ(h100.scaleup_topology, "switch");
  EXPECT_EQ(h100.compute_units, 132);
  EXPECT_DOUBLE_EQ(h100.l2_bytes, 50 * kMiB);
  EXPECT_EQ(load_accelerator("gb200", data_dir()).default_gpus_per_node, 4);
  EXPECT_EQ(load_accelerator("tpu_v5p", data_dir()).scaleup_topology, "torus");
  EXPECT_DOUBLE_EQ(load_accelerator("tpu_v5p", data_dir()).scaleup_bw_bytes_per_s, 600e9);
  EXPECT_EQ(load_accelerator("tpu_v4", data_dir()).boost_clock_mhz, 0.0);  // not published
}

// Calibration values fitted on kernel rows say so (scripts/fit_kernels.py, data/kernels), and the
// values without rows keep the sources they had: Primus' constants on MI300X for the classes no
// MI300X kernel row measures (the rates themselves are checked against the rows in
// tests/kernels/kernels_test.cpp).
TEST(Catalog, FittedFractionsCiteTheirKernelRows) {
  auto cal = [](const char* n) { return load_accelerator(n, data_dir()).calibration; };
  const auto h100 = cal("h100_sxm");
  for (Dtype d : {Dtype::kBf16, Dtype::kFp8}) {
    const std::string& src = h100.gemm_peak_fraction_source[static_cast<int>(d)];
    EXPECT_EQ(src.rfind("fit (scripts/fit_kernels.py)", 0), 0u) << src;
    EXPECT_NE(src.find("rows of data/kernels with accelerator h100_sxm"), std::string::npos) << src;
  }
  const auto mi300 = cal("mi300x");
  EXPECT_DOUBLE_EQ(mi300.hbm_permute_fraction.value, 0.057);  // Primus constants (P7)
  EXPECT_DOUBLE_EQ(mi300.hbm_optimizer_fraction.value, 0.21);
  EXPECT_DOUBLE_EQ(mi300.hbm_loss_fraction.value, 0.65);
  EXPECT_NE(mi300.hbm_elementwise_fraction.source.find("data/kernels"), std::string::npos);
  // A100: one STREAM copy row and the fused norm forwards; the fit lands within 2 % of the
  // STREAM copy alone, 1.61 / 2.039 TB/s (the norm kernels are single memory-bound passes).
  const Sourced& a100 = cal("a100_80gb").hbm_elementwise_fraction;
  EXPECT_NEAR(a100.value, 1.61 / 2.039, 0.02 * 1.61 / 2.039);
  EXPECT_EQ(a100.source.rfind("fit (scripts/fit_kernels.py)", 0), 0u) << a100.source;
  // GB200 (the B200's die and HBM) borrows the B200 fit, as an estimate that says so.
  EXPECT_DOUBLE_EQ(cal("gb200").hbm_elementwise_fraction.value,
                   cal("b200").hbm_elementwise_fraction.value);
  EXPECT_EQ(cal("gb200").hbm_elementwise_fraction.source.rfind("estimate:", 0), 0u);
  // No permute rows on H100: the H200 kernels' fraction, borrowed and said so.
  EXPECT_DOUBLE_EQ(h100.hbm_permute_fraction.value, cal("h200").hbm_permute_fraction.value);
  EXPECT_EQ(h100.hbm_permute_fraction.source.rfind("estimate:", 0), 0u);
}

// Every number carries a source; every fraction is a fraction.
TEST(Catalog, EveryValueHasASourceAndSaneRange) {
  for (const auto& a : load_accelerator_catalog(data_dir())) {
    SCOPED_TRACE(a.name);
    for (const char* f :
         {"peak_tflops.bf16", "compute_units", "dies", "boost_clock_mhz", "sustained_clock_mhz",
          "hbm_capacity", "hbm_bandwidth", "l2", "llc", "lds_per_cu", "default_gpus_per_node",
          "scaleup_bandwidth", "scaleup_topology", "status"}) {
      EXPECT_FALSE(a.source_of(f).empty()) << f;
    }
    const auto& c = a.calibration;
    for (Dtype d : kAllDtypes) {
      const int i = static_cast<int>(d);
      if (a.peak_tflops[i] > 0.0) {
        EXPECT_GT(c.gemm_peak_fraction[i], 0.0) << to_string(d);
        EXPECT_LE(c.gemm_peak_fraction[i], 1.0) << to_string(d);
        EXPECT_FALSE(c.gemm_peak_fraction_source[i].empty()) << to_string(d);
      }
    }
    for (const Sourced* s :
         {&c.attention_fwd_fraction, &c.attention_bwd_fraction, &c.hbm_elementwise_fraction,
          &c.hbm_permute_fraction, &c.hbm_optimizer_fraction, &c.hbm_loss_fraction,
          &c.kernel_launch_s, &c.runtime_context_bytes, &c.comm_buffer_bytes_per_group,
          &c.workspace_bytes, &c.fragmentation_fraction, &c.fragmentation_upper_fraction,
          &c.comm_compute_interference}) {
      EXPECT_FALSE(s->source.empty());
    }
    // The backward runs below the forward's fraction unless both are measured (a TPU's fwd+bwd
    // rows can put its backward above its forward).
    if (c.attention_bwd_fraction.source.find("fit (scripts/fit_kernels.py)") == std::string::npos) {
      EXPECT_LE(c.attention_bwd_fraction.value, c.attention_fwd_fraction.value);
    }
    EXPECT_LE(c.fragmentation_fraction.value, c.fragmentation_upper_fraction.value);
    EXPECT_LE(c.kernel_launch_s.value, 1e-4);
    if (a.sustained_clock_mhz > 0.0) {
      EXPECT_LE(a.sustained_clock_mhz, a.boost_clock_mhz);
    }
  }
}

// The byte-valued overheads are stored in bytes whatever unit the file uses.
TEST(Catalog, OverheadUnitsConvertToBytes) {
  const auto c = load_accelerator("h100_sxm", data_dir()).calibration;
  EXPECT_DOUBLE_EQ(c.runtime_context_bytes.value, 1.5 * kGiB);  // file: 1.5 GiB
  EXPECT_DOUBLE_EQ(c.workspace_bytes.value, 64 * kMiB);         // file: 64 MiB
  EXPECT_DOUBLE_EQ(c.kernel_launch_s.value, 2.8e-6);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// The 500 W Grand Teton H100: same die and peaks as h100_sxm, 96 GiB, and a sustained clock from
// the DVFS cube law f ~ P^(1/3): 1830 MHz x (500/700)^(1/3) = 1636 MHz.
TEST(Catalog, PowerCappedH100) {
  const AcceleratorSpec full = load_accelerator("h100_sxm", data_dir());
  const AcceleratorSpec capped = load_accelerator("h100_sxm_96gb_500w", data_dir());
  EXPECT_DOUBLE_EQ(capped.peak_tflops[static_cast<int>(Dtype::kBf16)],
                   full.peak_tflops[static_cast<int>(Dtype::kBf16)]);
  EXPECT_NEAR(capped.sustained_clock_mhz, 1830.0 * std::cbrt(500.0 / 700.0), 1.0);
  EXPECT_DOUBLE_EQ(capped.hbm_bytes, 96.0 * 1024 * 1024 * 1024);
}

}  // namespace
}  // namespace projector
