// `projector validate` gates end to end on one bundled run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"

namespace projector {
namespace {

using testing::run_cli;

const std::string kRuns = testing::repo_root() + "/data/validation/calibration_runs.yaml";
const std::string kRun = "megatron-gpt3-175b-a100x1024";

// The gates compare with the run's own error: a bound just above it passes, just below fails.
TEST(ValidateCli, ErrorGates) {
  const std::string json_path = ::testing::TempDir() + "validate_cli_test.json";
  const testing::CliResult base =
      run_cli("validate " + kRuns + " --run " + kRun + " --json " + json_path);
  ASSERT_EQ(base.exit_code, 0) << base.out;
  std::ifstream in(json_path);
  const auto j = nlohmann::json::parse(in);
  std::remove(json_path.c_str());
  const double err = std::abs(j["runs"][0]["throughput_error_pct"].get<double>());
  ASSERT_GT(err, 0.2);
  const std::string above = std::to_string(err + 0.1);
  const std::string below = std::to_string(err - 0.1);
  EXPECT_EQ(run_cli("validate " + kRuns + " --run " + kRun + " --max-error " + above).exit_code, 0);
  const testing::CliResult fail =
      run_cli("validate " + kRuns + " --run " + kRun + " --max-error " + below);
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_NE(fail.out.find(kRun + ": throughput error"), std::string::npos) << fail.out;
  EXPECT_EQ(run_cli("validate " + kRuns + " --run " + kRun + " --max-mape " + above).exit_code, 0);
  EXPECT_EQ(run_cli("validate " + kRuns + " --run " + kRun + " --max-mape " + below).exit_code, 1);
}

// The memory gate on a run that publishes its peak: passes above its error, fails below.
TEST(ValidateCli, MemoryGate) {
  const std::string run = "torchtitan-llama3.1-8b-fsdp-compile-float8-h100x8";
  const std::string json_path = ::testing::TempDir() + "validate_cli_memory.json";
  ASSERT_EQ(run_cli("validate " + kRuns + " --run " + run + " --json " + json_path).exit_code, 0);
  std::ifstream in(json_path);
  const auto j = nlohmann::json::parse(in);
  std::remove(json_path.c_str());
  const double err = std::abs(j["runs"][0]["memory_error_pct"].get<double>());
  ASSERT_GT(err, 1.0);
  const std::string base = "validate " + kRuns + " --run " + run + " --max-memory-error ";
  EXPECT_EQ(run_cli(base + std::to_string(err + 0.1)).exit_code, 0);
  const testing::CliResult fail = run_cli(base + std::to_string(err - 0.1));
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_NE(fail.out.find(run + ": peak memory error"), std::string::npos) << fail.out;
}

}  // namespace
}  // namespace projector
