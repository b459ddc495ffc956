// Issue 12 item 13: memory, performance and both take one option set (Primus' shared projection
// options), CLI11 parse errors read like every other input error, and --export_config writes the
// resolved config as a Primus experiment in its own keys.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli_runner.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using testing::run_cli;

const std::string kExample = testing::repo_root() + "/examples/llama3.1_8B-BF16-pretrain.yaml";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProjectionOptions, EveryCommandTakesTheSharedSet) {
  testing::TempDir dir;
  for (const std::string cmd : {"memory", "performance", "both"}) {
    const std::string yaml = dir.path() + "/" + cmd + ".yaml";
    const testing::CliResult r =
        run_cli(cmd + " -c " + kExample + " --data_path ./data --backend_path " + dir.path() +
                " --export_config " + yaml + " --gpu-clock-mhz 1800 --profiling-mode simulate");
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.out;
    EXPECT_EQ(r.out.find("warning"), std::string::npos) << cmd << ": " << r.out;
    EXPECT_NE(read_file(yaml).find("framework: megatron"), std::string::npos) << cmd;
  }
}

// A negative or zero clock, an unknown flag and a bad choice are parse errors: one line with the
// `projector: error:` prefix, exit 2. --help still exits 0.
TEST(ProjectionOptions, ParseErrorsAreInputErrors) {
  for (const std::string cmd : {"memory", "performance", "both"}) {
    for (const std::string bad : {" --gpu-clock-mhz -5", " --gpu-clock-mhz=-1.5",
                                  " --gpu-clock-mhz 0", " --bogus", " --profiling-mode fast"}) {
      const testing::CliResult r = run_cli(cmd + " -c " + kExample + bad);
      EXPECT_EQ(r.exit_code, 2) << cmd << bad << ": " << r.out;
      EXPECT_EQ(r.out.rfind("projector: error: ", 0), 0u) << cmd << bad << ": " << r.out;
      EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
    }
    EXPECT_EQ(run_cli(cmd + " --help").exit_code, 0);
  }
  EXPECT_NE(run_cli("memory -c " + kExample + " --gpu-clock-mhz -5").out.find("--gpu-clock-mhz"),
            std::string::npos);
}

// The clock scales compute time only: a 1000 MHz job is slower than the same job at 2000 MHz, and
// its memory is the same.
TEST(ProjectionOptions, ClockChangesTimeNotMemory) {
  auto run = [](const std::string& mhz) {
    const testing::CliResult r =
        run_cli("both -c " + kExample + " --gpu-clock-mhz " + mhz + " --json -");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json slow = run("1000"), fast = run("2000");
  EXPECT_GT(slow["results"]["iteration_time_ms"].get<double>(),
            fast["results"]["iteration_time_ms"].get<double>());
  EXPECT_DOUBLE_EQ(slow["memory"]["peak"]["point_bytes"].get<double>(),
                   fast["memory"]["peak"]["point_bytes"].get<double>());
}

// --export_config FILE.yaml: a Primus experiment whose overrides hold the merged arguments and the
// layout the CLI flags chose; projecting it again gives the same job. Any other name: the JSON job.
TEST(ProjectionOptions, ExportConfigRoundTrips) {
  testing::TempDir dir;
  const std::string yaml = dir.path() + "/resolved.yaml";
  const std::string flags = " --tp 2 --mbs 1 --gbs 64";
  const testing::CliResult first =
      run_cli("memory -c " + kExample + flags + " --export_config " + yaml + " --json -");
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const std::string text = read_file(yaml);
  EXPECT_NE(text.find("modules:\n  pre_trainer:\n    framework: megatron"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tensor_model_parallel_size: 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("micro_batch_size: 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("global_batch_size: 64\n"), std::string::npos) << text;
  const testing::CliResult again = run_cli("memory -c " + yaml + " --json -");
  ASSERT_EQ(again.exit_code, 0) << again.out;
  const nlohmann::json a = nlohmann::json::parse(first.out), b = nlohmann::json::parse(again.out);
  EXPECT_TRUE(b["warnings"].empty()) << b["warnings"];
  EXPECT_DOUBLE_EQ(a["peak"]["point_bytes"].get<double>(), b["peak"]["point_bytes"].get<double>());
  EXPECT_EQ(b["parallel"]["tp"], 2);

  const std::string json_path = dir.path() + "/resolved.json";
  ASSERT_EQ(run_cli("memory -c " + kExample + " --export_config " + json_path).exit_code, 0);
  const nlohmann::json job = nlohmann::json::parse(read_file(json_path));
  EXPECT_EQ(job["model"]["num_layers"], 32);
}

}  // namespace
}  // namespace projector
