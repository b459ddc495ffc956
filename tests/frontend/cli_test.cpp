// The CLI binary end to end: `config`, `models`, and exit code 2 on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.h"

namespace {

const std::string kBinary = PROJECTOR_BINARY;
const std::string kTestData = PROJECTOR_TEST_DATA_DIR;
const std::string kRepo = std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/..";

using Result = projector::testing::CliResult;
Result run(const std::string& args) {
  return projector::testing::run_cli(args);
}

TEST(Cli, ConfigJsonForTheDefaultExample) {
  const Result r =
      run("config --config " + kRepo + "/examples/llama3.1_8B-BF16-pretrain.yaml --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["model"]["name"], "llama3.1_8B");
  EXPECT_EQ(j["model"]["num_layers"], 32);
  // Llama 3.1 8B model card: 8.03B parameters.
  EXPECT_NEAR(j["model"]["params_total"].get<double>() / 1e9, 8.03, 0.005);
  EXPECT_EQ(j["parallel"]["dp"], 8);
  EXPECT_EQ(j["runtime"]["num_microbatches"], 8);  // 128 / (2 x 8)
  EXPECT_EQ(j["cluster"]["accelerator"], "mi300x");
  EXPECT_FALSE(j["defaults"].empty());
}

TEST(Cli, ConfigTextShowsRunsDefaultsAndFlags) {
  const Result r = run("config -c " + kRepo +
                       "/examples/deepseek_v3-BF16-pretrain.yaml --gpu-arch gfx950 --nodes 32");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("layers 3-60 (58x)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("VPP 2"), std::string::npos);
  EXPECT_NE(r.out.find("32 node(s)"), std::string::npos);
  EXPECT_NE(r.out.find("defaults applied"), std::string::npos);
}

TEST(Cli, EveryExampleResolves) {
  for (const char* ex : {"llama3.1_8B-BF16-pretrain.yaml", "llama3.1_70B-FP8-pretrain-mi355x.yaml",
                         "deepseek_v3-BF16-pretrain.yaml", "mixtral_8x7B-BF16-pretrain.yaml",
                         "inline-gpt-1.3B.yaml"}) {
    const Result r = run(std::string("config --exp ") + kRepo + "/examples/" + ex);
    EXPECT_EQ(r.exit_code, 0) << ex << "\n" << r.out;
    EXPECT_EQ(r.out.find("unknown key"), std::string::npos) << ex << "\n" << r.out;
  }
}

TEST(Cli, BadInputExitsWithCode2) {
  const std::string d = kTestData + "/";
  for (const std::string& args :
       {"config --config " + d + "malformed.yaml", "config --config " + d + "duplicate_key.yaml",
        "config --config " + d + "heads_not_divisible_by_tp.yaml",
        "config --config " + d + "unknown_model.yaml", "config --config " + d + "nothere.yaml",
        "config --config " + d + "primus_llama3_8B-BF16-pretrain.yaml --pp 3",
        "config --config " + d + "primus_llama3_8B-BF16-pretrain.yaml --gbs 24",
        "config --config " + d + "primus_llama3_8B-BF16-pretrain.yaml --tp 0",
        std::string("models show no_such_model")}) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
  }
  const Result r = run("config --config " + d + "heads_not_divisible_by_tp.yaml");
  // One line naming file, line and key.
  EXPECT_NE(r.out.find("heads_not_divisible_by_tp.yaml:9:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensor_model_parallel_size"), std::string::npos) << r.out;
}

TEST(Cli, ModelsListAndShow) {
  Result r = run("models list");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("llama3.1_405B"), std::string::npos);
  EXPECT_NE(r.out.find("qwen3_235B_A22B"), std::string::npos);
  r = run("models show mixtral_8x7B_v0.1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("46.70"), std::string::npos) << r.out;  // Mistral AI: 46.7B total
  EXPECT_NE(r.out.find("source:"), std::string::npos);
}

}  // namespace

namespace {

// World sizes are computed in 64 bits and bounded; every CLI integer is bounded like a config
// integer. (300,000,000 nodes x 8 GPUs used to print DP = -1894967296.)
TEST(Cli, HugeNodeCountsAreRefusedNotWrapped) {
  const std::string cfg = kRepo + "/examples/llama3.1_8B-BF16-pretrain.yaml";
  Result r = run("performance -c " + cfg + " --nodes 300000000");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("2400000000 GPUs is more than"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-1894967296"), std::string::npos) << r.out;
  r = run("performance -c " + cfg + " --nodes 3000000000");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("not in range"), std::string::npos) << r.out;
  r = run("sweep -c " + cfg + " --nodes 300000000");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  r = run("config -c " + cfg + " --gbs 99999999999");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

TEST(Cli, UnknownFrameworkListsTheRegisteredBackEnds) {
  const Result r = run("config -c " + kTestData + "/unknown_framework.yaml");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown_framework.yaml:3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("registered: megatron"), std::string::npos) << r.out;
}

// --train-tokens / --gpu-hour-cost (issue 27): the plan lines, and bad values refused with exit 2.
TEST(Cli, TimeToTrainAndItsRefusals) {
  const std::string cfg = kRepo + "/examples/llama3.1_8B-BF16-pretrain.yaml";
  Result r = run("performance -c " + cfg + " --train-tokens 15T --gpu-hour-cost 2.5");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("Time to train"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("days for 15T tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("USD at 2.5 USD per GPU-hour"), std::string::npos) << r.out;
  // MI300X: board power while computing, its measured idle power (EN5) while waiting.
  EXPECT_NE(r.out.find("750 W per GPU while computing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("191 W while waiting (EN5"), std::string::npos) << r.out;
  r = run("both -c " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("Time to train"), std::string::npos) << r.out;
  for (const char* bad : {" --train-tokens 15X", " --train-tokens -1", " --gpu-hour-cost 2",
                          " --train-tokens 1T --gpu-hour-cost -2"}) {
    r = run("performance -c " + cfg + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.out;
  }
  r = run("performance -c " + cfg + " --train-tokens 15X");
  EXPECT_NE(r.out.find("--train-tokens"), std::string::npos) << r.out;
}

}  // namespace
