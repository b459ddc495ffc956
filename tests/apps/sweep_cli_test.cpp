// `projector sweep` on a config whose own layout the rules refuse: the search replaces the layout
// anyway, so it starts from parallel sizes 1 and says why; anything else refused stays an error.
#include <gtest/gtest.h>

#include <string>

#include "support/cli_runner.h"

namespace projector {
namespace {

using testing::run_cli;

// 30 layers on PP 4: Megatron asserts (30 mod 4 = 2), and so do `memory` and the builder.
const std::string kRefusedLayout = " --config " + testing::repo_root() +
                                   "/examples/llama3.1_8B-BF16-pretrain.yaml --set num_layers=30 "
                                   "--set pipeline_model_parallel_size=4";

TEST(SweepCli, SearchesFromAStatedLayoutTheRulesRefuse) {
  const testing::CliResult memory = run_cli("memory" + kRefusedLayout);
  EXPECT_EQ(memory.exit_code, 2);
  EXPECT_NE(memory.out.find("30 layers are not divisible by PP x VPP = 4 x 1"), std::string::npos);

  const testing::CliResult sweep =
      run_cli("sweep" + kRefusedLayout + " --grid 'tp=1; pp=1,2; cp=1; mbs=1' --top 1");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("the config's own layout is refused"), std::string::npos);
  // PP 1 and PP 2 divide 30 layers: layouts were projected, the best one printed.
  EXPECT_NE(sweep.out.find("Top 1 by tokens_per_s_per_gpu"), std::string::npos) << sweep.out;
}

TEST(SweepCli, OtherRefusalsStayErrors) {
  const testing::CliResult r = run_cli("sweep --config " + testing::repo_root() +
                                       "/examples/llama3.1_8B-BF16-pretrain.yaml "
                                       "--set num_layers=0 --top 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("num_layers: must be between 1 and 16384"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("own layout is refused"), std::string::npos);
}

}  // namespace
}  // namespace projector
