// The sweep over torchtitan layouts (SpaceOptions::fsdp2_native): FSDP2 with every HSDP
// replicate degree that divides DP, torchtitan's AC modes and pipeline schedules; each candidate
// re-laid out with torchtitan's semantics (reshard after forward unless PP, gradient accumulation
// per microbatch without PP).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/sweep/sweep.h"

namespace projector::sweep {
namespace {

JobSpec titan_base() {
  LoadRequest r;
  r.config_path = std::string(PROJECTOR_TEST_DATA_DIR) + "/torchtitan/upstream/llama3_8b.toml";
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.env = fixed_environment({});
  r.hardware = "h100_sxm";
  r.cli.nodes = 2;
  return load_job(r);
}

TEST(TorchtitanSweep, NativeAxes) {
  const JobSpec base = titan_base();
  SpaceOptions space;
  space.fsdp2_native = true;
  // TP 1, PP 1 / 2, MBS 1 on 16 GPUs (GBS 16): every schedule, AC mode and replicate degree.
  const Grid g = parse_grid("tp=1; pp=1,2; cp=1; mbs=1");
  const Enumeration en = enumerate(base, g, space);
  std::set<int> replicas;
  std::set<std::string> ac, schedules;
  for (const Candidate& c : en.legal) {
    EXPECT_EQ(c.sharding, Sharding::kFsdp2);
    EXPECT_EQ(c.dp % c.dp_replicate, 0) << describe(c);
    replicas.insert(c.dp_replicate);
    ac.insert(to_string(c.recompute));
    schedules.insert(std::string(to_string(c.schedule)));
    if (c.schedule == ScheduleKind::kInterleaved) {
      EXPECT_EQ(c.vpp, 2);  // 2 stages per rank
    }
  }
  // DP 16 (PP 1) and 8 (PP 2): every divisor of 16 is a replicate degree somewhere.
  EXPECT_EQ(replicas, (std::set<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(ac, (std::set<std::string>{"none", "op", "every2", "full"}));
  EXPECT_TRUE(schedules.count("1f1b") && schedules.count("interleaved") &&
              schedules.count("zbv-formatted"));
  // DualPipeV is enumerated too; with 2 microbatches on PP 2 it needs 4 and is illegal.
  EXPECT_GT(en.illegal_by_rule[static_cast<int>(Rule::kDualPipeMicrobatches)], 0u);
  // Replicate degrees that do not divide DP are counted as illegal, not dropped.
  EXPECT_GT(en.illegal_by_rule[static_cast<int>(Rule::kWorldDense)], 0u);
}

// A candidate is re-laid out with torchtitan's semantics.
TEST(TorchtitanSweep, CandidateSemantics) {
  const JobSpec base = titan_base();
  Candidate c;
  c.sharding = Sharding::kFsdp2;
  c.dp_replicate = 2;
  c.mbs = 1;
  c.recompute = {RecomputeKind::kEveryN, 2};
  c.schedule = ScheduleKind::k1F1B;
  const JobSpec j = make_job(base, c, 2);
  EXPECT_EQ(j.parallel.fsdp, FsdpKind::kFsdp2);
  EXPECT_EQ(j.parallel.dp_replicate, 2);
  EXPECT_TRUE(j.parallel.reshard_after_forward);
  EXPECT_EQ(j.runtime.accumulation_rounds, j.num_microbatches());  // every microbatch a round
  EXPECT_EQ(j.runtime.recompute.layer_ids.size(), 16u);
  c.pp = 2;
  c.recompute = {RecomputeKind::kOpPolicy, 0};
  const JobSpec p = make_job(base, c, 2);
  EXPECT_FALSE(p.parallel.reshard_after_forward);
  EXPECT_EQ(p.runtime.accumulation_rounds, 1);
  EXPECT_EQ(p.runtime.recompute.granularity, RecomputeGranularity::kOpPolicy);
  EXPECT_NE(describe(c).find("replicate=2"), std::string::npos);
}

// The CLI picks the torchtitan axes for a torchtitan config and ranks real projections.
TEST(TorchtitanSweep, Cli) {
  const std::string cfg =
      std::string(PROJECTOR_TEST_DATA_DIR) + "/torchtitan/upstream/llama3_8b.toml";
  const std::string csv = ::testing::TempDir() + "titan_sweep.csv";
  const std::string cmd = std::string(PROJECTOR_BINARY) + " sweep --config " + cfg +
                          " --hardware h100_sxm --nodes 1 --grid 'tp=1,2; pp=1; cp=1; mbs=1' -j 2"
                          " --top 3 --csv " +
                          csv + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  std::size_t rows = 0, fsdp2 = 0;
  while (std::getline(in, line)) {
    ++rows;
    fsdp2 += line.find("fsdp2") != std::string::npos ? 1 : 0;
  }
  EXPECT_GT(rows, 0u);
  EXPECT_EQ(fsdp2, rows);
}

}  // namespace
}  // namespace projector::sweep
