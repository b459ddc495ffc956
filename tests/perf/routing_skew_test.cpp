// The routing-skew bracket (PerfOptions::routing_skew_bracket): a dropless expert-parallel job
// projected with balanced routing is projected again with the busiest EP rank receiving the
// memory projection's upper-bound share of the routed tokens (MemoryOptions::
// moe_dropless_imbalance_upper). Expected values come from moe_rank_load_factor (model/job.h) and
// from the balanced projection of the same job.
#include <gtest/gtest.h>

#include <cmath>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "support/job_builders.h"

namespace projector {
namespace {

JobSpec dropless_ep(int ep, int experts, int topk) {
  return testing::make_dropless_ep_job(ep, experts, topk);
}

PerfOptions bracket_on() {
  PerfOptions po;
  po.with_memory = false;
  po.keep_op_table = false;
  po.routing_skew_bracket = true;
  return po;
}

TEST(RoutingSkew, BracketUsesTheMemoryUpperShare) {
  const JobSpec job = dropless_ep(8, 64, 2);
  const PerfReport rep = project_performance(job, bracket_on());
  ASSERT_TRUE(rep.routing_skew.applies);
  const double target = MemoryOptions{}.moe_dropless_imbalance_upper;
  EXPECT_NEAR(rep.routing_skew.load_factor, target, 1e-6);
  // The CV it reports gives that factor through the one load model.
  JobSpec skewed = job;
  skewed.runtime.moe_routing = MoeRouting::kLearned;
  skewed.runtime.moe_expert_load_cv = rep.routing_skew.expert_load_cv;
  EXPECT_NEAR(moe_rank_load_factor(skewed, skewed.model.layers[0].moe), target, 1e-6);
  // ... and is the projection of that job: same iteration time, slower than balanced.
  PerfOptions po = bracket_on();
  po.routing_skew_bracket = false;
  const PerfReport direct = project_performance(skewed, po);
  EXPECT_NEAR(rep.routing_skew.iteration_s, direct.iteration_s, 1e-9 * direct.iteration_s);
  EXPECT_GT(rep.routing_skew.iteration_s, rep.iteration_s);
  EXPECT_LT(rep.routing_skew.tokens_per_s_per_gpu, rep.tokens_per_s_per_gpu);
  // Off unless asked for: the balanced projection alone.
  EXPECT_FALSE(project_performance(job, po).routing_skew.applies);
}

// When one rank cannot receive the target share, the bracket takes the cap EP x min(topk, local)
// / topk: top-6 over 4 experts per rank on EP 2 -> 2 x 4 / 6 = 1.333x; top-4 over 2 experts per
// rank on EP 2 -> 1x, i.e. no skew is possible and there is no bracket.
TEST(RoutingSkew, CappedByWhatOneRankCanReceive) {
  const PerfReport rep = project_performance(dropless_ep(2, 8, 6), bracket_on());
  ASSERT_TRUE(rep.routing_skew.applies);
  EXPECT_NEAR(rep.routing_skew.load_factor, 2.0 * 4.0 / 6.0, 1e-6);
  EXPECT_FALSE(project_performance(dropless_ep(2, 4, 4), bracket_on()).routing_skew.applies);
}

TEST(RoutingSkew, NotForPaddedBalancedOrMeasuredRouting) {
  JobSpec padded = dropless_ep(8, 64, 2);
  for (LayerSpec& l : padded.model.layers) l.moe.capacity_factor = 1.25;
  EXPECT_FALSE(project_performance(padded, bracket_on()).routing_skew.applies);
  JobSpec measured = dropless_ep(8, 64, 2);
  measured.runtime.moe_routing = MoeRouting::kLearned;
  measured.runtime.moe_expert_load_cv = 0.5;  // a measured spread is the projection itself
  EXPECT_FALSE(project_performance(measured, bracket_on()).routing_skew.applies);
  JobSpec forced = dropless_ep(8, 64, 2);
  forced.runtime.moe_routing = MoeRouting::kForced;  // moe_router_force_load_balancing and kin
  EXPECT_FALSE(project_performance(forced, bracket_on()).routing_skew.applies);
  const JobSpec no_ep = dropless_ep(1, 8, 2);
  EXPECT_FALSE(project_performance(no_ep, bracket_on()).routing_skew.applies);
}

}  // namespace
}  // namespace projector
