// The parts added for issue 20 (GB300, B300, H20, Rubin, MI300A, MI455X, TPU7x) and the TPU fabric
// facts: each expected value is typed here from the figure the cited source publishes (rack or
// board totals, bidirectional link rates, sparse peaks) and converted by hand in the test, so a
// slip in the data file's arithmetic fails. Source ids: docs/hardware.md "Sources".
#include <gtest/gtest.h>

#include <string>

#include "hardware/hw_test_util.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

using testing::data_dir;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

AcceleratorSpec get(const char* name) {
  return load_accelerator(name, data_dir());
}
double peak(const AcceleratorSpec& a, Dtype d) {
  return a.peak_tflops[static_cast<int>(d)];
}
double extra(const AcceleratorSpec& a, const std::string& format) {
  for (const auto& e : a.extra_peak_tflops) {
    if (e.format == format) return e.tflops;
  }
  return -1.0;
}
bool is_estimate(const AcceleratorSpec& a, const std::string& field) {
  return a.source_of(field).rfind("estimate:", 0) == 0;
}

// NV1: GB300 NVL72 rack, 72 GPUs; tensor rates quoted with 2:4 sparsity except FP4's dense figure.
TEST(VendorFigures, Gb300FromTheNvl72Rack) {
  const AcceleratorSpec a = get("gb300");
  EXPECT_EQ(a.status, "shipping");
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kBf16), 360e3 / 72 / 2);  // FP16/BF16 360 PF sparse
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp16), 360e3 / 72 / 2);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp8), 720e3 / 72 / 2);   // FP8/FP6 720 PF sparse
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kTf32), 180e3 / 72 / 2);  // TF32 180 PF sparse
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp4), 1080e3 / 72);      // FP4 1,080 PF dense
  EXPECT_NEAR(peak(a, Dtype::kFp32), 6e3 / 72, 0.05);       // FP32 6 PF
  EXPECT_NEAR(extra(a, "fp64"), 100.0 / 72, 0.01);          // FP64 100 TF
  EXPECT_DOUBLE_EQ(extra(a, "nvfp4"), 15000.0);             // NV2: 15 PF dense NVFP4
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 288 * kGiB);                // NV2: 288 GB HBM3E
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 576e12 / 72);      // 576 TB/s per rack
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 1.8e12 / 2);   // NVLink 5, 1.8 TB/s bidirectional
  EXPECT_NEAR(a.scaleup_bw_bytes_per_s, 130e12 / 72 / 2, 0.01 * 900e9);  // 130 TB/s per rack
  EXPECT_EQ(a.scaleup_domain, 72);
  EXPECT_DOUBLE_EQ(a.scaleout_bw_bytes_per_s, 800e9 / 8);  // ConnectX-8, 800 Gb/s per GPU
  EXPECT_EQ(a.compute_units, 160);
  EXPECT_EQ(a.default_gpus_per_node, 4);
}

// GK2: HGX B300, 8 GPUs: FP4 144 | 105 PF (sparse | dense), FP8 72 PF, BF16 36 PF, TF32 18 PF
// sparse, FP32 600 TF, FP64 10 TF.
TEST(VendorFigures, B300FromTheHgxBoard) {
  const AcceleratorSpec a = get("b300");
  EXPECT_EQ(a.status, "shipping");
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp4), 105e3 / 8);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp8), 72e3 / 8 / 2);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kBf16), 36e3 / 8 / 2);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kTf32), 18e3 / 8 / 2);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp32), 600.0 / 8);
  EXPECT_DOUBLE_EQ(extra(a, "fp64"), 10.0 / 8);
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 288 * kGiB);
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 8e12);
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 14.4e12 / 8 / 2);  // 14.4 TB/s NVLink per board
  EXPECT_DOUBLE_EQ(a.scaleout_bw_bytes_per_s, 800e9 / 8);       // 8x 800 Gb/s per node
}

// H20A: FP16/BF16 148, INT8/FP8 296, TF32 74, FP32 44, FP64 1; 96 GB HBM3 at 4.0 TB/s; NVLink
// 900 GB/s bidirectional.
TEST(VendorFigures, H20) {
  const AcceleratorSpec a = get("h20");
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kBf16), 148.0);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp8), 296.0);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kTf32), 74.0);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp32), 44.0);
  EXPECT_DOUBLE_EQ(extra(a, "fp64"), 1.0);
  EXPECT_EQ(peak(a, Dtype::kFp4), 0.0);  // Hopper: no fp4
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 96 * kGiB);
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 4.0e12);
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 900e9 / 2);
  EXPECT_EQ(a.compute_units, 78);
}

// NV3 (CES 2026): per Rubin GPU NVFP4 training 35 PF, 288 GB HBM4 at 22 TB/s, NVLink 6 3.6 TB/s;
// NV4 (GTC 2025): 1.2 EF FP8 training per 72-GPU rack; CX9 1.6 Tb/s per GPU.
TEST(VendorFigures, RubinIsAnnouncedAndItsUnpublishedPeaksAreMarkedEstimates) {
  const AcceleratorSpec a = get("rubin");
  EXPECT_EQ(a.status, "announced");
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp4), 35000.0);
  EXPECT_NEAR(peak(a, Dtype::kFp8), 1.2e6 / 72, 1.0);
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 288 * kGiB);
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 22e12);
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 3.6e12 / 2);
  EXPECT_DOUBLE_EQ(a.scaleout_bw_bytes_per_s, 1.6e12 / 8);
  EXPECT_EQ(a.compute_units, 0);  // not published: roofline GEMMs
  EXPECT_TRUE(is_estimate(a, "peak_tflops.bf16"));
  EXPECT_NEAR(peak(a, Dtype::kBf16), peak(a, Dtype::kFp8) / 2, 1.0);
  EXPECT_FALSE(is_estimate(a, "peak_tflops.fp8"));
  EXPECT_FALSE(is_estimate(a, "peak_tflops.fp4"));
}

// AMD1/R3: peak = clock x CUs x flop/clk/CU; CDNA 3 does 2048 bf16 flop/clk/CU (MI300X: 1307.4 at
// 2100 MHz x 304 CUs). MI300A: 228 CUs at 2100 MHz, 128 GB HBM3 at 5.3 TB/s.
TEST(VendorFigures, Mi300aFromTheCdna3PerCuRate) {
  const AcceleratorSpec a = get("mi300a");
  EXPECT_NEAR(peak(a, Dtype::kBf16), 2100e6 * 228 * 2048 / 1e12, 0.05);
  EXPECT_NEAR(peak(a, Dtype::kFp8), 2 * 2100e6 * 228 * 2048 / 1e12, 0.1);
  EXPECT_EQ(peak(a, Dtype::kMxfp8), 0.0);
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 128 * kGiB);
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 5.3e12);
  EXPECT_EQ(a.default_gpus_per_node, 4);
  EXPECT_EQ(a.scaleup_topology, "mesh");
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 3 * 2 * 64e9);  // 2 links to each of 3 peers
}

// AMD2: MI455X 40 PF FP4, 20 PF FP8, 432 GB HBM4 at 19.6 TB/s, 3.6 TB/s scale-up, 300 GB/s
// scale-out; Helios = 72 GPUs.
TEST(VendorFigures, Mi455xIsAnnounced) {
  const AcceleratorSpec a = get("mi455x");
  EXPECT_EQ(a.status, "announced");
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp4), 40000.0);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp8), 20000.0);
  EXPECT_TRUE(is_estimate(a, "peak_tflops.bf16"));
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 432 * kGiB);
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 19.6e12);
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 3.6e12 / 2);
  EXPECT_DOUBLE_EQ(a.scaleout_bw_bytes_per_s, 300e9);
  EXPECT_EQ(a.scaleup_domain, 72);
}

// G5/G6: TPU7x per chip BF16 2307, FP8 4614, 192 GiB, 7.37 TB/s, ICI 1.2 TB/s bidirectional, two
// TensorCores = two JAX devices, 9216-chip pod, 4 chips per VM.
TEST(VendorFigures, Tpu7xIronwood) {
  const AcceleratorSpec a = get("tpu7x");
  EXPECT_EQ(a.status, "shipping");
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kBf16), 2307.0);
  EXPECT_DOUBLE_EQ(peak(a, Dtype::kFp8), 4614.0);
  EXPECT_DOUBLE_EQ(a.hbm_bytes, 192 * kGiB);
  EXPECT_DOUBLE_EQ(a.hbm_bw_bytes_per_s, 7.37e12);
  EXPECT_DOUBLE_EQ(a.scaleup_bw_bytes_per_s, 1.2e12 / 2);
  EXPECT_EQ(a.devices_per_chip, 2);
  EXPECT_EQ(a.scaleup_domain, 9216);
  EXPECT_EQ(a.default_gpus_per_node, 4);
  EXPECT_EQ(a.torus_dims, 3);
  EXPECT_EQ(a.derived_from, "tpu_v5p");
}

// G1-G4 and SB: torus shape, wraparound rule, ports, per-link rate and DCN per chip.
TEST(VendorFigures, TpuInterconnects) {
  struct Case {
    const char* name;
    int dims;
    const char* wraparound;
    int domain;
    int links;
    double link_gb_s;  // one direction: the Cloud TPU per-chip figure over the chip's links
                       // (SB rounds v5e / v5p to 4.5e10 / 9e10 B/s); v4: SB
    double dcn_gb_s;   // per chip, one direction; 0 = not published
    int devices;
  };
  const Case cases[] = {
      {"tpu_v4", 3, "cube_multiples", 4096, 6, 45, 0, 1},
      {"tpu_v5e", 2, "full_axis", 256, 4, 50, 2 * 100 / 8.0 / 8, 1},  // 400 / 4 / 2; 2x 100 Gb/s
                                                                      // DCN per 8 chips
      {"tpu_v5p", 3, "cube_multiples", 8960, 6, 100, 50 / 8.0, 1},    // 1200 / 6 / 2; 50 Gb/s
      {"tpu_v6e", 2, "full_axis", 256, 4, 100, 0, 1},                 // 800 / 4 / 2
      {"tpu7x", 3, "cube_multiples", 9216, 6, 100, 0, 2},             // 1200 / 6 / 2
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const AcceleratorSpec a = get(c.name);
    EXPECT_EQ(a.scaleup_topology, "torus");
    EXPECT_EQ(a.torus_dims, c.dims);
    EXPECT_EQ(a.torus_wraparound, c.wraparound);
    EXPECT_EQ(a.scaleup_domain, c.domain);
    EXPECT_EQ(a.scaleup_links, c.links);
    EXPECT_DOUBLE_EQ(a.scaleup_link_bw_bytes_per_s, c.link_gb_s * 1e9);
    EXPECT_DOUBLE_EQ(a.scaleout_bw_bytes_per_s, c.dcn_gb_s * 1e9);
    EXPECT_EQ(a.devices_per_chip, c.devices);
  }
  // Per-chip ICI from the Cloud TPU tables (bidirectional): v5e 400, v5p 1200, v6e 800 GB/s.
  EXPECT_DOUBLE_EQ(get("tpu_v5e").scaleup_bw_bytes_per_s, 400e9 / 2);
  EXPECT_DOUBLE_EQ(get("tpu_v5p").scaleup_bw_bytes_per_s, 1200e9 / 2);
  EXPECT_DOUBLE_EQ(get("tpu_v6e").scaleup_bw_bytes_per_s, 800e9 / 2);
}

// GPUs: NVLink / xGMI domain and per-link rate times links equals the per-GPU scale-up figure.
TEST(VendorFigures, LinksTimesLinkRateIsTheScaleUpBandwidth) {
  for (const char* name : {"a100_80gb", "h100_sxm", "h200", "b200", "gb200", "gb300", "b300", "h20",
                           "mi300x", "mi355x", "mi300a"}) {
    SCOPED_TRACE(name);
    const AcceleratorSpec a = get(name);
    ASSERT_GT(a.scaleup_links, 0);
    EXPECT_NEAR(a.scaleup_links * a.scaleup_link_bw_bytes_per_s, a.scaleup_bw_bytes_per_s, 1e6);
  }
}

}  // namespace
}  // namespace projector
