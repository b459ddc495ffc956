// relayout (job/layout.h): a built job re-laid out decides its layout-dependent switches as its
// framework's profile does, from the rules the builder kept; the sweep reaches them through it.
#include <gtest/gtest.h>

#include "projector/job/builder.h"
#include "projector/job/layout.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/sweep/sweep.h"
#include "support/job_builders.h"
#include "support/model_builders.h"

namespace projector {
namespace {

// Llama 3.1 8B on one node at TP 1, sequence parallelism left to the profile's rule.
JobSpec built(std::optional<WhenRule> sp_rule, std::optional<bool> stated = std::nullopt) {
  JobDraft d = testing::make_draft(testing::llama31_8b(), {.gbs = 64});
  d.sequence_parallel = stated;
  if (sp_rule) d.profile.sequence_parallel.value = *sp_rule;
  d.profile.overlap_param_gather.value = WhenRule::kWithDistributedOptimizer;
  d.overlap_param_gather = std::nullopt;
  return finalize_job(d, testing::make_cluster({.gbs = 64}));
}

LayoutChoice tp(const JobSpec& job, int t) {
  LayoutChoice c = layout_choice(job);
  c.tp = t;
  c.etp = t;
  return c;
}

TEST(Relayout, SequenceParallelFollowsTheProfileRule) {
  JobSpec with_tp = built(WhenRule::kWithTp);
  EXPECT_FALSE(with_tp.parallel.sequence_parallel);  // TP 1
  relayout(with_tp, tp(with_tp, 2));
  EXPECT_TRUE(with_tp.parallel.sequence_parallel);
  relayout(with_tp, tp(with_tp, 1));
  EXPECT_FALSE(with_tp.parallel.sequence_parallel);  // Megatron turns it off at TP 1

  JobSpec never = built(WhenRule::kNever);
  relayout(never, tp(never, 2));
  EXPECT_FALSE(never.parallel.sequence_parallel);

  // A stated value wins over the profile, and still has no effect at TP 1.
  JobSpec stated = built(WhenRule::kNever, true);
  EXPECT_FALSE(stated.parallel.sequence_parallel);
  EXPECT_EQ(stated.parallel.sequence_parallel_rule, WhenRule::kAlways);
  relayout(stated, tp(stated, 4));
  EXPECT_TRUE(stated.parallel.sequence_parallel);
}

// Megatron's pipeline sends overlap only with virtual stages (MG25): the with_vpp rule kept by the
// builder decides again when the sweep changes VPP; a stated false stays false.
TEST(Relayout, PipelineSendOverlapFollowsVirtualStages) {
  JobDraft d = testing::make_draft(testing::llama31_8b(), {.pp = 2, .gbs = 64});
  JobSpec job = finalize_job(d, testing::make_cluster({.pp = 2, .gbs = 64}));
  EXPECT_EQ(job.parallel.p2p_overlap_rule, WhenRule::kWithVpp);
  EXPECT_FALSE(job.parallel.p2p_overlap);
  LayoutChoice c = layout_choice(job);
  c.vpp = 2;
  c.schedule = ScheduleKind::kInterleaved;
  relayout(job, c);
  EXPECT_TRUE(job.parallel.p2p_overlap);
  d.p2p_overlap = false;
  JobSpec stated = finalize_job(d, testing::make_cluster({.pp = 2, .gbs = 64}));
  relayout(stated, c);
  EXPECT_FALSE(stated.parallel.p2p_overlap);
  // Without a framework rule (a profile that states none), sends run beside the compute.
  d.p2p_overlap.reset();
  d.profile.p2p_overlap.value.reset();
  EXPECT_TRUE(finalize_job(d, testing::make_cluster({.pp = 2, .gbs = 64})).parallel.p2p_overlap);
}

// a2a+p2p: the all-to-all level must divide CP (kCpHierarchy); CP 1 has no levels to check.
TEST(Relayout, HierarchicalCpLevelMustDivideCp) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.cp = 8, .nodes = 2, .gbs = 16});
  job.parallel.cp_comm_type = CpCommType::kA2aP2p;
  job.parallel.cp_a2a_size = 4;
  const RuleFacts facts = rule_facts(job, RulePurpose::kSearch);
  EXPECT_EQ(facts.cp_a2a, 4);
  LayoutChoice c = layout_choice(job);
  EXPECT_EQ(check_layout(facts, c), LayoutRule::kLegal);
  c.cp = 2;
  EXPECT_EQ(check_layout(facts, c), LayoutRule::kCpHierarchy);
  c.cp = 4;
  EXPECT_EQ(check_layout(facts, c), LayoutRule::kLegal);
  // Llama 3.1 8B's 8 KV heads at TP 4 leave 2 per rank, which a level of 4 cannot split (CP 4 x
  // TP 4 fills the 16 GPUs); at TP 2 each rank keeps 4 (and 16 query heads).
  c.tp = c.etp = 4;
  EXPECT_EQ(check_layout(facts, c), LayoutRule::kCpHierarchy);
  c.tp = c.etp = 2;
  c.cp = 8;
  EXPECT_EQ(check_layout(facts, c), LayoutRule::kLegal);
}

TEST(Relayout, OverlapParamGatherFollowsTheSharding) {
  JobSpec job = built(WhenRule::kWithTp);
  job.parallel.distributed_optimizer = false;
  relayout(job, layout_choice(job));
  EXPECT_FALSE(job.parallel.overlap_param_gather);
  job.parallel.distributed_optimizer = true;
  relayout(job, layout_choice(job));
  EXPECT_TRUE(job.parallel.overlap_param_gather);
}

// The sweep lays candidates out through relayout: the same TP 2 candidate gets sequence
// parallelism under a profile that ties it to TP and none under one that never sets it, and the
// projected activation memory differs accordingly.
TEST(Relayout, AProfileChangeReachesTheSweep) {
  const sweep::Candidate c{
      .tp = 2, .pp = 1, .vpp = 1, .cp = 1, .ep = 1, .etp = 2, .mbs = 1, .recompute = {}};
  const JobSpec on = sweep::make_job(built(WhenRule::kWithTp), c, 0);
  const JobSpec off = sweep::make_job(built(WhenRule::kNever), c, 0);
  EXPECT_TRUE(on.parallel.sequence_parallel);
  EXPECT_FALSE(off.parallel.sequence_parallel);
  EXPECT_EQ(on.parallel.tp, 2);
  EXPECT_EQ(off.dp(), on.dp());
}

// The sweep's selective candidate takes the framework's selective set (the profile's
// selective_recompute, kept on the job), not Megatron's core_attn whatever the framework.
TEST(Relayout, SelectiveRecomputeIsTheFrameworksSet) {
  JobDraft d = testing::make_draft(testing::llama31_8b(), {.gbs = 64});
  d.profile.selective_recompute.value = RecomputeModules{RecomputeModule::kMlp};
  const JobSpec base = finalize_job(d, testing::make_cluster({.gbs = 64}));
  EXPECT_EQ(base.runtime.selective_default, RecomputeModules{RecomputeModule::kMlp});
  sweep::Candidate c;
  c.tp = c.etp = 1;
  c.pp = c.vpp = 1;
  c.mbs = 1;
  c.recompute = {sweep::RecomputeKind::kSelective, 0};
  const JobSpec j = sweep::make_job(base, c, 0);
  EXPECT_EQ(j.runtime.recompute.granularity, RecomputeGranularity::kSelective);
  EXPECT_EQ(j.runtime.recompute.modules, RecomputeModules{RecomputeModule::kMlp});
}

}  // namespace
}  // namespace projector
