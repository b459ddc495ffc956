// `projector profile` and the benchmark modes end to end, including the bad-trace exits.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace projector::testing {
namespace {

std::string qwen_args(const char* trace) {
  return "profile --trace " + profile_data(trace) + " --config " + profile_data(kQwenConfig) +
         " --gpus-per-node 1";
}

TEST(ProfileCli, WritesTheMeasuredProfileAndTheFittedValues) {
  TempDir dir;
  const std::string json = dir.path() + "/p.json";
  const std::string fitted = dir.path() + "/fitted.yaml";
  const CliResult r = run_cli(qwen_args(kQwenH100) + " --json " + json + " --fitted " + fitted);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The hardware came from the trace's device (no --hardware given).
  EXPECT_NE(r.out.find("on h100_sxm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attributed to known op classes: 100.00 %"), std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["kind"], "measured_profile");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["layers"]["forward"]["layers"], 24);
  std::ifstream f(fitted);
  const std::string y((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(y.find("calibration.gemm_peak_fraction.bf16: {value:"), std::string::npos) << y;
}

TEST(ProfileCli, BenchmarkAndBothModes) {
  TempDir dir;
  const std::string json = dir.path() + "/p.json";
  ASSERT_EQ(run_cli(qwen_args(kQwenMi300x) + " --json " + json).exit_code, 0);
  const std::string perf = "performance --config " + profile_data(kQwenConfig) +
                           " --gpus-per-node 1 --hardware mi300x --profile " + json;
  const CliResult both = run_cli(perf + " --profiling-mode both");
  ASSERT_EQ(both.exit_code, 0) << both.out;
  EXPECT_NE(both.out.find("op class (pipeline rank 0)"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("iteration"), std::string::npos);
  const CliResult js = run_cli(perf + " --profiling-mode benchmark --json -");
  ASSERT_EQ(js.exit_code, 0) << js.out;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["chunks"][0]["ops"][1]["provenance"].get<std::string>().rfind("measured: ", 0), 0u);
  EXPECT_GT(j["benchmark"]["step_equivalent_ms"].get<double>(), 0.0);
  // More nodes: the restoration is listed.
  const CliResult wide = run_cli("performance --config " + profile_data(kQwenConfig) +
                                 " --hardware mi300x --nodes 2 --profiling-mode benchmark "
                                 "--profile " +
                                 json);
  ASSERT_EQ(wide.exit_code, 0) << wide.out;
  EXPECT_NE(wide.out.find("DP 1 -> 16 GPU(s) on 2 node(s), DP 16"), std::string::npos) << wide.out;
}

TEST(ProfileCli, BadTracesExitTwoWithTheReason) {
  TempDir dir;
  struct Case {
    std::string trace, config, want;
  };
  // Not JSON.
  const std::string yaml = profile_data(kQwenConfig);
  // Truncated gzip.
  std::ifstream f(profile_data(kQwenH100), std::ios::binary);
  const std::string gz((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string cut = dir.write("cut.json.gz", gz.substr(0, gz.size() / 3));
  // Synthetic: a CPU-only trace.
  const std::string cpu = dir.write(
      "cpu.json", R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0,)"
                  R"( "dur": 4}]})");
  const Case cases[] = {
      {yaml, kQwenConfig, "not valid JSON"},
      {cut, kQwenConfig, "truncated gzip"},
      {cpu, kQwenConfig, "no GPU kernels"},
      {profile_data(kHtaMi250), kQwenConfig, "no transformer layer"},
      {profile_data(kQwenH100), "../../../examples/llama3.1_8B-BF16-pretrain.yaml",
       "24 transformer layers"},
      {profile_data(kQwenH100) + ".missing", kQwenConfig, "file not found"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_cli("profile --trace " + c.trace + " --config " +
                                profile_data(c.config) + " --gpus-per-node 1");
    EXPECT_EQ(r.exit_code, 2) << c.trace << "\n" << r.out;
    EXPECT_NE(r.out.find(c.want), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  }
}

TEST(ProfileCli, BenchmarkModesNeedAProfile) {
  const std::string base = "performance --config " + profile_data(kQwenConfig) +
                           " --gpus-per-node 1 --hardware h100_sxm";
  CliResult r = run_cli(base + " --profiling-mode benchmark");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--profile"), std::string::npos) << r.out;
  r = run_cli("memory --config " + profile_data(kQwenConfig) + " --memory-mode benchmark");
  EXPECT_EQ(r.exit_code, 2);
  TempDir dir;
  const std::string json = dir.path() + "/p.json";
  ASSERT_EQ(run_cli(qwen_args(kQwenH100) + " --json " + json).exit_code, 0);
  r = run_cli("memory --config " + profile_data(kQwenConfig) +
              " --gpus-per-node 1 --hardware h100_sxm --memory-mode benchmark --profile " + json);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("forward-only"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace projector::testing
