// Issue 12 items 5-6: each MoE token dispatcher with its own collectives, SequentialMLP when
// grouped GEMM is off, and what hides the expert-parallel communication (MG8 token_dispatcher.py,
// MG2 transformer_config.py, MG9 combined_1f1b.py).
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/schedule/schedule.h"
#include "projector/workload/workload.h"
#include "support/job_builders.h"

namespace projector {
namespace {

const Op* find(const LayerWork& lw, const std::string& name) {
  for (const Op& op : lw.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// Mixtral 8x7B on one node: 4096 tokens per microbatch, h = 4096, top-2 over 8 experts (16
// experts when EP is 16).
ModelSpec mixtral_model(int experts) {
  ModelSpec m = testing::mixtral_8x7b();
  for (LayerSpec& l : m.layers) l.moe.num_experts = experts;
  return m;
}

JobSpec mixtral(MoeDispatcher d, int ep = 8, int nodes = 1) {
  JobSpec job =
      testing::make_job(mixtral_model(std::max(8, ep)), {.ep = ep, .nodes = nodes, .gbs = 64});
  job.runtime.moe_dispatcher = d;
  job.runtime.moe_dedup_dispatch = d == MoeDispatcher::kFlex;
  return job;
}

// Selective recompute of the moe module checkpoints the MoE layer's whole forward, so its token
// dispatch and combine run again before the backward (MG8 moe_layer.py custom_forward); moe_act
// replays only the activation.
TEST(MoeDispatch, MoeRecomputeReplaysTheDispatch) {
  const auto replayed = [](RecomputeModule module, const std::string& name) {
    JobSpec job = mixtral(MoeDispatcher::kFlex);
    job.runtime.recompute.granularity = RecomputeGranularity::kSelective;
    job.runtime.recompute.modules = {module};
    for (const Op& op : build_layer_work(job, 0).ops) {
      if (op.recompute && op.name == name + ".recompute") return true;
    }
    return false;
  };
  EXPECT_TRUE(replayed(RecomputeModule::kMoe, "moe.dispatch"));
  EXPECT_TRUE(replayed(RecomputeModule::kMoe, "moe.combine"));
  EXPECT_TRUE(replayed(RecomputeModule::kMlp, "moe.dispatch"));  // mlp = the MoE layer here
  EXPECT_FALSE(replayed(RecomputeModule::kMoeAct, "moe.dispatch"));
  EXPECT_TRUE(replayed(RecomputeModule::kMoeAct, "moe.experts.act"));
  EXPECT_FALSE(replayed(RecomputeModule::kLayernorm, "moe.combine"));
}

// allgather (Megatron's default): every token of the ETP x EP group is gathered (4096 tokens x
// 8 ranks x h x 2 B), plus the routing map and probabilities (5 B per token and expert); the
// outputs are reduce-scattered back in the probabilities' dtype. No all-to-all.
TEST(MoeDispatch, AllGatherGathersEveryToken) {
  JobSpec job = mixtral(MoeDispatcher::kAllGather);
  LayerWork lw = build_layer_work(job, 0);
  const Op* ag = find(lw, "moe.dispatch_all_gather");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->group, GroupKind::kEtpEp);
  EXPECT_EQ(ag->group_size, 8);
  EXPECT_DOUBLE_EQ(ag->bytes, 4096.0 * 8 * 4096 * 2);
  EXPECT_DOUBLE_EQ(find(lw, "moe.dispatch_all_gather_probs")->bytes, 4096.0 * 8 * 5 * 8);
  EXPECT_DOUBLE_EQ(find(lw, "moe.combine_reduce_scatter")->bytes, 4096.0 * 8 * 4096 * 2);
  EXPECT_EQ(find(lw, "moe.dispatch_a2a"), nullptr);
  job.runtime.moe_probs_fp32 = true;
  lw = build_layer_work(job, 0);
  EXPECT_DOUBLE_EQ(find(lw, "moe.combine_reduce_scatter")->bytes, 4096.0 * 8 * 4096 * 4);
  // The experts see the same rows as with the all-to-all dispatcher: 4096 x 2 x 8 / 8 per expert.
  EXPECT_EQ(find(lw, "moe.experts.fc1")->gemm.m, 8192);
}

// alltoall: one copy per (token, chosen expert) over EP, 4096 x 2 x h x 2 B; flex: one fused
// dispatch over ETP x EP, deduplicated per destination GPU (here: one node).
TEST(MoeDispatch, AllToAllAndFlexMoveTheRoutedCopies) {
  const LayerWork a2a = build_layer_work(mixtral(MoeDispatcher::kAllToAll), 0);
  EXPECT_DOUBLE_EQ(find(a2a, "moe.dispatch_a2a")->bytes, 4096.0 * 2 * 4096 * 2);
  EXPECT_EQ(find(a2a, "moe.dispatch_a2a")->group, GroupKind::kEp);
  const LayerWork flex = build_layer_work(mixtral(MoeDispatcher::kFlex), 0);
  const Op* d = find(flex, "moe.dispatch");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->group, GroupKind::kEtpEp);
  // 8 experts over 8 GPUs, top-2: 7 x P(a given other GPU is hit) = 7 x (1 - C(7,2)/C(8,2))
  // copies instead of 2 x 7/8.
  const double dedup = 7.0 * (1.0 - 21.0 / 28.0) / (2.0 * 7.0 / 8.0);
  EXPECT_NEAR(d->bytes / (4096.0 * 2 * 4096 * 2), dedup, 1e-12);
  EXPECT_NE(find(flex, "moe.combine"), nullptr);
}

// moe_grouped_gemm false: Megatron's SequentialMLP runs one GEMM per local expert. 2 local
// experts (EP 4): each fc1 is 4096 x 2 x 8 / 8 = ... rows per expert, priced twice.
TEST(MoeDispatch, SequentialMlpIsOneGemmPerExpert) {
  JobSpec job = mixtral(MoeDispatcher::kAllToAll, 4);
  const Op grouped = *find(build_layer_work(job, 0), "moe.experts.fc1");
  EXPECT_EQ(grouped.kind, OpKind::kGroupedGemm);
  for (LayerSpec& l : job.model.layers) l.moe.grouped_gemm = false;
  const LayerWork lw = build_layer_work(job, 0);
  const Op& seq = *find(lw, "moe.experts.fc1");
  EXPECT_EQ(seq.kind, OpKind::kGemm);
  EXPECT_EQ(seq.steps, 2);
  EXPECT_EQ(seq.gemm.m, grouped.gemm.m);  // rows of one expert
  EXPECT_DOUBLE_EQ(seq.flops, grouped.flops);
  // The backward keeps the total work: dgrad and wgrad FLOPs equal the forward's.
  const Op* dgrad = find(lw, "moe.experts.fc1.dgrad");
  ASSERT_NE(dgrad, nullptr);
  EXPECT_DOUBLE_EQ(dgrad->flops, grouped.flops);
  // Priced: two GEMMs of one expert's shape take twice one GEMM, on the compute stream with the
  // framework's gaps between kernels (1 / (1 - kernel_gap_fraction)).
  PerfOptions po;
  po.with_memory = false;
  po.keep_op_table = true;
  const PerfReport rep = project_performance(job, po);
  bool seen = false;
  for (const PricedOp& op : rep.chunks[0].ops) {
    if (op.op.name != "moe.experts.fc1") continue;
    CostCache cache(job.cluster.accelerator, job.cluster.network);
    EXPECT_NEAR(op.time_s,
                2.0 * cache.gemm(seq.gemm).time_s / (1.0 - job.runtime.kernel_gap_fraction), 1e-12);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

double exposed_ep_ms(const JobSpec& job) {
  PerfOptions po;
  po.with_memory = false;
  return project_performance(job, po).exposed.ep_s;
}

// DeepEP is a kernel, not an overlap switch: with EP across two nodes and no overlap setting the
// dispatch / combine stay exposed. moe_shared_expert_overlap hides them behind the shared experts.
TEST(MoeDispatch, DeepEpAloneHidesNothing) {
  ModelSpec model = mixtral_model(16);
  for (LayerSpec& l : model.layers) l.moe.shared_expert_ffn_hidden_size = 14336;
  JobSpec job = testing::make_job(model, {.ep = 16, .nodes = 2, .gbs = 64});
  job.runtime.moe_dispatcher = MoeDispatcher::kFlex;
  job.runtime.moe_dispatch_kernel = MoeDispatchKernel::kDeepEp;
  job.runtime.deepep = job.runtime.moe_dedup_dispatch = true;
  const double plain = exposed_ep_ms(job);
  EXPECT_GT(plain, 0.0);
  job.runtime.moe_overlap.add(MoeOverlap::kSharedExperts);
  const double hidden = exposed_ep_ms(job);
  EXPECT_LT(hidden, plain);
  const LayerWork lw = build_layer_work(job, 0);
  EXPECT_EQ(find(lw, "moe.dispatch")->overlap, Overlap::kWithSharedExperts);
}

// overlap_moe_expert_parallel_comm: Megatron's combined 1F1B adds one warm-up forward and runs
// each steady-state forward together with the backward that follows it (MG7 schedules.py
// :966-970; with PP 1: F0, (F1, B0), (F2, B1), ...).
TEST(MoeDispatch, CombinedOneFOneBPairsForwardAndBackward) {
  const schedule::ScheduleTable t = schedule::build_1f1b(1, 4, true);
  ASSERT_EQ(t.actions.size(), 8u);
  EXPECT_EQ(t.actions[0].phase, schedule::Phase::kF);
  EXPECT_FALSE(t.actions[0].overlap_with_next);
  EXPECT_TRUE(t.actions[1].overlap_with_next);  // F1 with BW0
  EXPECT_EQ(t.actions[1].microbatch, 1);
  EXPECT_EQ(t.actions[2].phase, schedule::Phase::kBW);
  EXPECT_EQ(t.actions[2].microbatch, 0);
  const schedule::ScheduleTable i = schedule::build_interleaved(4, 2, 8, 0, true);
  const schedule::ScheduleTable plain = schedule::build_interleaved(4, 2, 8);
  // Rank 3: warm-up (pp - r - 1) x 2 + (vpp - 1) x pp = 4 forwards, one more when combined; the
  // first steady-state forward follows before the first backward.
  auto warmup = [](const schedule::ScheduleTable& s) {
    int n = 0;
    for (const schedule::Action& a : s.rank_actions(3)) {
      if (a.phase != schedule::Phase::kF) break;
      ++n;
    }
    return n;
  };
  EXPECT_EQ(warmup(plain), 4 + 1);
  EXPECT_EQ(warmup(i), 5 + 1);
  EXPECT_THROW(schedule::build_schedule({ScheduleKind::kZeroBubble, 4, 1, 8, false, 0, true}),
               InputError);
}

// The pairs hide EP communication behind the other microbatch's compute: a faster iteration
// than the plain schedule; with PP 1 one more microbatch is in flight (memory).
TEST(MoeDispatch, CombinedOneFOneBHidesEpCommunication) {
  JobSpec job = mixtral(MoeDispatcher::kAllToAll, 16, 2);
  PerfOptions po;
  po.with_memory = false;
  const double plain = project_performance(job, po).iteration_s;
  const double plain_mem = project_memory(job).ranks[0].in_flight.total_chunk_microbatches();
  job.runtime.moe_overlap.add(MoeOverlap::kOtherMicrobatch);
  const double delayed_off = project_performance(job, po).iteration_s;
  job.runtime.moe_overlap.add(MoeOverlap::kDelayedWgrad);
  const double delayed_on = project_performance(job, po).iteration_s;
  EXPECT_LT(delayed_off, plain);
  EXPECT_LE(delayed_on, delayed_off);  // deferred expert wgrads are cover too
  // Without a pipeline the combined schedule runs F(i) beside B(i - 1) layer by layer, the
  // forward's layer k beside the backward's layer L - 1 - k (MG9 combined_1f1b.py): the backward
  // frees as the forward saves, so one microbatch stays in flight, as in plain 1F1B.
  EXPECT_EQ(project_memory(job).ranks[0].in_flight.total_chunk_microbatches(), plain_mem);
}

}  // namespace
}  // namespace projector
