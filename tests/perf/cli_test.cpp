// `projector performance`, `both`, `workload` end to end on the bundled default example.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "support/cli_runner.h"

namespace projector {
namespace {

using testing::run_cli;

const std::string kExample = testing::repo_root() + "/examples/llama3.1_8B-BF16-pretrain.yaml";

// The JSON's throughput must follow from its own iteration time: tokens/s = GBS x seq / time
// (GBS 128, seq 8192 in the example), per GPU over 8 GPUs; MFU = model TFLOP/s / bf16 peak.
TEST(PerformanceCli, JsonIsSelfConsistent) {
  const testing::CliResult r = run_cli("performance -c " + kExample + " --json -");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 4);
  EXPECT_EQ(j["kind"], "performance");
  const auto& res = j["results"];
  const double iter_s = res["iteration_time_ms"].get<double>() / 1e3;
  // The calibrated range brackets the point values, a rate's range mirrors the time's.
  const auto& tr = res["tokens_per_s_per_gpu_interval"];
  const auto& it = res["iteration_time_ms_interval"];
  ASSERT_TRUE(tr.is_array()) << res.dump();
  EXPECT_LE(tr[0].get<double>(), res["tokens_per_s_per_gpu"].get<double>());
  EXPECT_GE(tr[1].get<double>(), res["tokens_per_s_per_gpu"].get<double>());
  const double tokens_ms = res["tokens_per_s_per_gpu"].get<double>() * iter_s * 1e3;
  EXPECT_NEAR(tr[0].get<double>() * it[1].get<double>(), tokens_ms, 1e-6 * tokens_ms);
  EXPECT_NEAR(tr[1].get<double>() * it[0].get<double>(), tokens_ms, 1e-6 * tokens_ms);
  EXPECT_GE(res["regime"]["runs"].get<int>(), 8);
  EXPECT_NEAR(res["tokens_per_s"].get<double>(), 128.0 * 8192 / iter_s, 1e-6 * 128 * 8192 / iter_s);
  EXPECT_NEAR(res["tokens_per_s_per_gpu"].get<double>(), res["tokens_per_s"].get<double>() / 8,
              1e-6);
  EXPECT_NEAR(res["mfu_pct"].get<double>(),
              100.0 * res["model_tflops_per_gpu"].get<double>() / 1307.4, 0.05);
  EXPECT_EQ(j["job"]["schedule"]["algorithm"], "1f1b");
  EXPECT_FALSE(j["chunks"][0]["ops"].empty());
  EXPECT_FALSE(j["defaults"].empty());
}

TEST(PerformanceCli, BothCarriesMemory) {
  const testing::CliResult r = run_cli("both -c " + kExample + " --json -");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "both");
  EXPECT_GT(j["memory"]["peak"]["point_bytes"].get<double>(), 0.0);
  EXPECT_EQ(j["memory"]["verdict"], "FITS");
}

TEST(PerformanceCli, BenchmarkModeNeedsAProfile) {
  const testing::CliResult r =
      run_cli("performance -c " + kExample + " --profiling-mode benchmark");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--profiling-mode benchmark"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--profile PROFILE.json"), std::string::npos) << r.out;
}

TEST(PerformanceCli, ClockAboveBoostIsRejected) {
  const testing::CliResult r = run_cli("performance -c " + kExample + " --gpu-clock-mhz 5000");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--gpu-clock-mhz"), std::string::npos) << r.out;
}

// The trace is Chrome trace-event JSON: one complete event per simulated action, all durations
// positive; 8 microbatches x (F + BW) on one pipeline rank = 16 compute events, then the
// optimizer step.
TEST(PerformanceCli, TraceIsChromeJson) {
  const std::string path = ::testing::TempDir() + "/projector_trace.json";
  const testing::CliResult r = run_cli("performance -c " + kExample + " --trace " + path);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream f(path);
  const nlohmann::json j = nlohmann::json::parse(f);
  int compute = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GT(e["dur"].get<double>(), 0.0);
    if (e["tid"] == 0 && e["name"] != "optimizer.step") ++compute;
  }
  EXPECT_EQ(compute, 16);
  std::remove(path.c_str());
}

// The first number after `label` at the start of a table row ("  1f1b   14111.6 ...").
double row_value(const std::string& out, const std::string& label) {
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream row(line);
    std::string first;
    double value = 0.0;
    if (row >> first && first == label && row >> value) return value;
  }
  return -1.0;
}

// With the same work, ZB-H1 fills the 1F1B bubble with deferred weight gradients (Qi et al.
// 2023), so its iteration is shorter; the node scan keeps the global batch, so 2 nodes halve the
// microbatches per DP rank and must shorten the iteration, and 1 node is the 1.00x baseline.
TEST(PerformanceCli, ScheduleComparisonAndNodeScan) {
  const testing::CliResult r = run_cli(
      "performance -c " + kExample + " --pp 2 --pipeline-schedule-algorithm all --scan-nodes 1,2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const double one_f_one_b = row_value(r.out, "1f1b");
  const double zero_bubble = row_value(r.out, "zero-bubble");
  ASSERT_GT(one_f_one_b, 0.0) << r.out;
  ASSERT_GT(zero_bubble, 0.0) << r.out;
  EXPECT_LT(zero_bubble, one_f_one_b);
  const auto scan = r.out.find("Scaling over data parallelism");
  ASSERT_NE(scan, std::string::npos);
  const std::string table = r.out.substr(scan);
  // Rows: nodes GPUs DP micro/DP iter_ms ...
  std::istringstream lines(table);
  std::string line;
  std::vector<std::vector<double>> rows;
  while (std::getline(lines, line)) {
    std::istringstream row(line);
    std::vector<double> v;
    double x = 0.0;
    while (row >> x) v.push_back(x);
    if (v.size() >= 5) rows.push_back(v);
  }
  ASSERT_EQ(rows.size(), 2u) << table;
  EXPECT_EQ(rows[0][3], 2 * rows[1][3]);  // microbatches per DP rank halve
  EXPECT_LT(rows[1][4], rows[0][4]);      // and the iteration gets shorter
  EXPECT_NE(table.find("1.00x"), std::string::npos);
}

TEST(WorkloadCli, PrintsOpsWithProvenance) {
  const testing::CliResult r = run_cli("workload -c " + kExample);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("attn.qkv"), std::string::npos);
  EXPECT_NE(r.out.find("kernel-model"), std::string::npos);
  EXPECT_NE(r.out.find("layers 0-31 (32x"), std::string::npos);
}

}  // namespace
}  // namespace projector
