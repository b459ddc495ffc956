// `projector hardware list|show` end to end through the built binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "projector/hardware/catalog.h"

namespace {

struct CliResult {
  int exit_code;
  std::string out;
};

CliResult run(const std::string& args) {
  const std::string cmd = std::string(PROJECTOR_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) out += buf.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(HardwareCli, ListShowsPeaksHbmAndNetworks) {
  const CliResult r = run("hardware list");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // mi300x row: bf16 1307.4, fp8 2614.9, 192 GiB, 5.30 TB/s, default network mi300x_ib400.
  EXPECT_NE(r.out.find("1307.4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2614.9"), std::string::npos);
  EXPECT_NE(r.out.find("mi300x_ib400"), std::string::npos);
  EXPECT_NE(r.out.find("primus_mi355x"), std::string::npos);
}

TEST(HardwareCli, ShowJsonCarriesValuesAndSources) {
  const CliResult r = run("hardware show h100 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], "h100_sxm");
  EXPECT_DOUBLE_EQ(j["peak_tflops"]["bf16"]["value"].get<double>(), 989.4);
  EXPECT_FALSE(j["peak_tflops"]["bf16"]["source"].get<std::string>().empty());
  EXPECT_DOUBLE_EQ(j["hbm_bw_bytes_per_s"]["value"].get<double>(), 3.35e12);
  // The library's value, with the kernel-row fit it came from (scripts/fit_kernels.py).
  const projector::AcceleratorSpec h =
      projector::load_accelerator("h100_sxm", projector::default_data_dir());
  EXPECT_DOUBLE_EQ(j["calibration"]["gemm_peak_fraction"]["bf16"]["value"].get<double>(),
                   h.calibration.gemm_peak_fraction[static_cast<int>(projector::Dtype::kBf16)]);
  EXPECT_NE(j["calibration"]["gemm_peak_fraction"]["bf16"]["source"].get<std::string>().find(
                "data/kernels"),
            std::string::npos);
}

TEST(HardwareCli, ShowNetworkAndUnknownName) {
  const CliResult net = run("hardware show primus_mi300x --json");
  ASSERT_EQ(net.exit_code, 0) << net.out;
  const auto j = nlohmann::json::parse(net.out);
  EXPECT_DOUBLE_EQ(j["hardware_config"]["node_bw"].get<double>(), 448.0);
  const CliResult bad = run("hardware show not_a_gpu");
  EXPECT_EQ(bad.exit_code, 2);  // InputError
  EXPECT_NE(bad.out.find("unknown accelerator"), std::string::npos) << bad.out;
}

TEST(HardwareCli, ListShowsStatusAndProvenance) {
  const CliResult r = run("hardware list");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto row = [&](const std::string& name) {
    const auto at = r.out.find("\n" + name + " ");
    return at == std::string::npos ? std::string()
                                   : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(row("gb300").find("shipping"), std::string::npos) << row("gb300");
  EXPECT_NE(row("gb300").find("NV1"), std::string::npos) << row("gb300");  // peaks' source id
  EXPECT_NE(row("gb300").find("borrowed from gb200"), std::string::npos) << row("gb300");
  EXPECT_NE(row("rubin").find("announced"), std::string::npos) << row("rubin");
  EXPECT_NE(row("rubin").find("~8333.0"), std::string::npos) << row("rubin");  // estimated bf16
  EXPECT_NE(row("h100_sxm").find("own"), std::string::npos) << row("h100_sxm");
}

// Issue 30: cells were cut to 16 characters ("package 383 bf1."). Now every column is as wide as
// its widest cell: each header starts where its column's cells start, and no cell ends in a cut.
TEST(HardwareCli, ListCutsNoCellAndAlignsTheColumns) {
  const CliResult r = run("hardware list");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream in(r.out);
  std::string header;
  std::getline(in, header);
  const std::size_t peaks = header.find("peaks from");
  const std::size_t hbm = header.find("HBM from");
  ASSERT_NE(peaks, std::string::npos);
  int rows = 0;
  for (std::string line; std::getline(in, line) && !line.empty(); ++rows) {
    EXPECT_EQ(line.find(". "), std::string::npos) << "a cut cell: " << line;
    ASSERT_GT(line.size(), hbm) << line;
    EXPECT_NE(line[peaks], ' ') << line;  // a source id starts under its header
    EXPECT_EQ(line[peaks - 1], ' ') << line;
    EXPECT_NE(line[hbm], ' ') << line;
    EXPECT_EQ(line[hbm - 1], ' ') << line;
  }
  EXPECT_GE(rows, 20);
  // A prose source without an id is pointed to `show`, not cut.
  EXPECT_NE(r.out.find("see show"), std::string::npos) << r.out;
}

TEST(HardwareCli, ShowReportsBorrowedEfficiency) {
  const CliResult r = run("hardware show GB300");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("efficiency borrowed from gb200, not measured on gb300"), std::string::npos)
      << r.out;
  const CliResult j = run("hardware show tpu7x --json");
  ASSERT_EQ(j.exit_code, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["derived_from"]["value"], "tpu_v5p");
  EXPECT_EQ(doc["devices_per_chip"]["value"], 2);
  EXPECT_EQ(doc["calibration_note"], "efficiency borrowed from tpu_v5p, not measured on tpu7x");
  EXPECT_EQ(doc["status"]["value"], "shipping");
  EXPECT_DOUBLE_EQ(doc["scaleup_bw_bytes_per_s"]["value"].get<double>(), 600e9);
}

// DeepEP's per-SM copy rate: the B200 fit shows its rule and rate in GB/s per SM; the GB200, with
// no sweep of its own, shows the B200's value and says it is borrowed; a part without it shows no
// row (the links alone bound its dispatch).
TEST(HardwareCli, ShowsTheEpKernelRateWithItsDerivation) {
  const CliResult b = run("hardware show b200");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  const auto row = b.out.find("calibration.ep_kernel_unit_bytes_per_s");
  ASSERT_NE(row, std::string::npos) << b.out;
  const std::string line = b.out.substr(row, b.out.find('\n', row) - row);
  EXPECT_NE(line.find("GB/s per SM"), std::string::npos) << line;
  EXPECT_NE(line.find("smallest of the SM counts"), std::string::npos) << line;
  const auto g = nlohmann::json::parse(run("hardware show gb200 --json").out);
  const auto b_json = nlohmann::json::parse(run("hardware show b200 --json").out);
  EXPECT_DOUBLE_EQ(g["calibration"]["ep_kernel_unit_bytes_per_s"]["value"].get<double>(),
                   b_json["calibration"]["ep_kernel_unit_bytes_per_s"]["value"].get<double>());
  EXPECT_NE(g["calibration"]["ep_kernel_unit_bytes_per_s"]["source"].get<std::string>().find(
                "same SM reaches on b200"),
            std::string::npos);
  EXPECT_EQ(run("hardware show h100").out.find("ep_kernel_unit_bytes_per_s"), std::string::npos);
}

// Facts side by side for pairs across vendors and kinds (GPU/TPU, shipping/announced).
TEST(HardwareCli, CompareAnyPair) {
  const char* pairs[][2] = {
      {"h100", "h20"}, {"mi355x", "tpu7x"}, {"gb300", "rubin"}, {"tpu_v4", "mi300a"}};
  for (const auto& p : pairs) {
    SCOPED_TRACE(std::string(p[0]) + " vs " + p[1]);
    const CliResult r = run(std::string("hardware compare ") + p[0] + " " + p[1] + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_FALSE(doc.contains("projection"));
    bool saw_bf16 = false;
    for (const auto& f : doc["facts"]) {
      if (f["field"] != "peak_tflops.bf16") continue;
      saw_bf16 = true;
      // The ratio is the second bf16 peak over the first, read back from `hardware show`.
      const auto a =
          nlohmann::json::parse(run(std::string("hardware show ") + p[0] + " --json").out);
      const auto b =
          nlohmann::json::parse(run(std::string("hardware show ") + p[1] + " --json").out);
      EXPECT_NEAR(f["ratio"].get<double>(),
                  b["peak_tflops"]["bf16"]["value"].get<double>() /
                      a["peak_tflops"]["bf16"]["value"].get<double>(),
                  1e-9);
    }
    EXPECT_TRUE(saw_bf16);
  }
  const CliResult text = run("hardware compare h100 h20");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("efficiency borrowed from h100_sxm, not measured on h20"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(run("hardware compare h100 no_such_part").exit_code, 2);
}

// With a config, the job is projected on both: the speed-up is the ratio of the two projections'
// tokens/s per GPU, and each side equals `performance --hardware` on its own.
TEST(HardwareCli, CompareProjectsTheConfigOnBoth) {
  const std::string cfg =
      std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../examples/inline-gpt-1.3B.yaml";
  const CliResult r = run("hardware compare mi300x h100 --config " + cfg + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& proj = doc["projection"];
  const double a = proj["a"]["tokens_per_s_per_gpu"].get<double>();
  const double b = proj["b"]["tokens_per_s_per_gpu"].get<double>();
  ASSERT_GT(a, 0.0);
  EXPECT_NEAR(proj["speedup_tokens_per_s_per_gpu"].get<double>(), b / a, 1e-9);
  const CliResult perf = run("performance --config " + cfg + " --hardware h100 --json -");
  ASSERT_EQ(perf.exit_code, 0) << perf.out;
  const auto pj = nlohmann::json::parse(perf.out);
  EXPECT_NEAR(pj["results"]["tokens_per_s_per_gpu"].get<double>(), b, 1e-6 * b);
  EXPECT_EQ(pj["job"]["calibration_note"], "");
  EXPECT_TRUE(pj["job"]["calibration_derived_from"].is_null());
}

// The performance report carries the borrowed-efficiency note (text and JSON).
TEST(HardwareCli, PerformanceReportCarriesTheNote) {
  const std::string cfg =
      std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../examples/inline-gpt-1.3B.yaml";
  const CliResult text = run("performance --config " + cfg + " --hardware gb300");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("efficiency borrowed from gb200, not measured on gb300"),
            std::string::npos)
      << text.out;
  const CliResult json = run("performance --config " + cfg + " --hardware rubin --json -");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["job"]["accelerator_status"], "announced");
  EXPECT_EQ(j["job"]["calibration_derived_from"], "gb200");
  EXPECT_EQ(j["job"]["calibration_note"], "efficiency borrowed from gb200, not measured on rubin");
  bool noted = false;
  for (const auto& n : j["notes"])
    noted = noted || n.get<std::string>().find("announced") == 0 ||
            n.get<std::string>().find("rubin is announced") == 0;
  EXPECT_TRUE(noted) << j["notes"].dump();
}

}  // namespace
