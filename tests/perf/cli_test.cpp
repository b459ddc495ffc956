// `projector performance`, `both`, `workload` end to end on the bundled default example.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["kind"], "performance");
  const auto& res = j["results"];
  const double iter_s = res["iteration_time_ms"].get<double>() / 1e3;
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

TEST(PerformanceCli, BenchmarkModeIsReserved) {
  const testing::CliResult r =
      run_cli("performance -c " + kExample + " --profiling-mode benchmark");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--profiling-mode"), std::string::npos) << r.out;
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

TEST(PerformanceCli, ScheduleComparisonAndNodeScan) {
  const testing::CliResult r = run_cli(
      "performance -c " + kExample + " --pp 2 --pipeline-schedule-algorithm all --scan-nodes 1,2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Pipeline schedules compared"), std::string::npos);
  EXPECT_NE(r.out.find("zero-bubble"), std::string::npos);
  EXPECT_NE(r.out.find("Scaling over data parallelism"), std::string::npos);
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
