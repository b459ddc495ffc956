// The job builder's weighted layer split (LayerSplit::Kind::kWeighted, torchtitan's
// generate_llm_fqn_per_model_part): the embedding and the output head count as layers.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "support/job_builders.h"

namespace projector {
namespace {

std::vector<int> split(int layers, int pp, int vpp, int first_weight, int last_weight) {
  testing::JobShape s;
  s.pp = pp;
  s.vpp = vpp;
  s.gbs = 64;
  s.nodes = 1;
  JobDraft d = testing::make_draft(testing::make_dense({layers, 1024, 4096, 8, 8, 32000}), s);
  d.layer_split.kind = LayerSplit::Kind::kWeighted;
  d.layer_split.first_weight = first_weight;
  d.layer_split.last_weight = last_weight;
  d.schedule = vpp > 1 ? ScheduleKind::kInterleaved : ScheduleKind::k1F1B;
  const JobSpec j = finalize_job(d, testing::make_cluster(s));
  std::vector<int> out;
  for (const VirtualStage& st : j.parallel.stages) out.push_back(st.num_layers);
  return out;
}

// 32 layers + 2 weights over 8 stages: 34 = 8 x 4 + 2, so stages 0 and 1 get 5 before the first
// gives up 1 for the embedding and the last 1 for the output: 4 5 4 4 4 4 4 3.
TEST(WeightedSplit, TorchtitanDefaultWeights) {
  EXPECT_EQ(split(32, 4, 2, 1, 1), (std::vector<int>{4, 5, 4, 4, 4, 4, 4, 3}));
  EXPECT_EQ(split(32, 2, 1, 1, 1), (std::vector<int>{16, 16}));
  // Weights 0: plain balanced.
  EXPECT_EQ(split(30, 4, 1, 0, 0), (std::vector<int>{8, 8, 7, 7}));
  // Heavier output weight: 30 + 1 + 3 = 34 over 4: 9 9 8 8 -> 8 9 8 5.
  EXPECT_EQ(split(30, 4, 1, 1, 3), (std::vector<int>{8, 9, 8, 5}));
}

TEST(WeightedSplit, RefusesWeightsLargerThanAStage) {
  EXPECT_THROW(split(4, 4, 1, 3, 1), JobRuleError);  // 8 / 4 = 2 per stage < 3
}

}  // namespace
}  // namespace projector
