// `projector memory|performance|both` on recommendation configs: outputs in samples/s and per-rank
// GiB, the JSON `recsys` objects, `--scan-nodes`, and exit code 2 naming the key for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/recsys_jobs.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

using testing::run_cli;

TEST(RecsysCli, MemoryPerformanceBoth) {
  const std::string dcn = testing::torchrec_fixture("readme_dcnv2_adagrad_lbs16384");
  const testing::CliResult mem = run_cli("memory --config " + dcn + " --hardware a100_40gb");
  EXPECT_EQ(mem.exit_code, 0) << mem.out;
  EXPECT_NE(mem.out.find("opt state"), std::string::npos) << mem.out;
  EXPECT_NE(mem.out.find("FITS"), std::string::npos) << mem.out;
  const testing::CliResult perf = run_cli("performance --config " + dcn + " --hardware a100_40gb");
  EXPECT_EQ(perf.exit_code, 0) << perf.out;
  EXPECT_NE(perf.out.find("Samples/s/GPU"), std::string::npos) << perf.out;
  const std::string hstu = testing::torchrec_fixture("primus_dlrm_v4_hstu");
  const testing::CliResult both = run_cli("both --config " + hstu + " --json -");
  ASSERT_EQ(both.exit_code, 0) << both.out;
  const auto j = nlohmann::json::parse(both.out);
  EXPECT_GT(j["recsys"]["samples_per_s"].get<double>(), 0.0);
  EXPECT_TRUE(j["recsys"]["breakdown_ms"].contains("embedding"));
  EXPECT_EQ(j["memory"]["recsys"]["ranks"].size(), 8u);
}

TEST(RecsysCli, ScanNodes) {
  const testing::CliResult r =
      run_cli("performance --config " + testing::torchrec_fixture("readme_dot_adagrad_lbs2048") +
              " --hardware a100_40gb --scan-nodes 1,2,4");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("samples/s/GPU"), std::string::npos) << r.out;
}

TEST(RecsysCli, BadInputExitsTwoNamingTheKey) {
  testing::TempDir dir;
  const std::string head =
      "framework: torchrec_dlrm\nembedding_dim: 16\ndense_arch_layer_sizes: 32,16\n";
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {head + "num_embeddings_per_feature: 10,0\n", "num_embeddings_per_feature", "bad.yaml:4:"},
      {head + "num_embeddings_per_feature: 10,20\nmulti_hot_sizes: 1\n", "multi_hot_sizes",
       "bad.yaml:5:"},
      {head + "num_embeddings: 10\nembedding_sharding: diagonal\n", "embedding_sharding",
       "bad.yaml:5:"}};
  for (const auto& [yaml, key, where] : cases) {
    const std::string cfg = dir.write("bad.yaml", yaml);
    const testing::CliResult r = run_cli("performance --config " + cfg);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(key), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(where), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace projector
