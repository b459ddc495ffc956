#include "projector/perf/perf.h"

#include <gtest/gtest.h>

#include <cmath>

#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "support/job_builders.h"

namespace projector {
namespace {

using testing::JobShape;

// One stage, one replica: the pipeline is m back-to-back microbatches, so the simulated makespan
// is exactly m x (F + B + W) of the single chunk, and the iteration adds the optimizer step.
TEST(Performance, SingleStageIsSumOfMicrobatches) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.gpn = 1, .gbs = 4});
  PerfOptions po;
  po.with_memory = false;
  const PerfReport rep = project_performance(job, po);
  ASSERT_EQ(rep.num_microbatches, 4);
  const ChunkTiming& c = rep.chunks.at(0);
  EXPECT_NEAR(rep.pipeline_s, 4 * (c.f_s + c.b_s + c.w_s), 1e-9);
  EXPECT_NEAR(rep.iteration_s, rep.pipeline_s + rep.optimizer_s, 1e-12);
  EXPECT_NEAR(rep.tokens_per_s, 4 * 4096 / rep.iteration_s, 1e-6);
}

// Balanced 1F1B with p stages and m microbatches: makespan = (m + p - 1) x (F + B + W) plus the
// P2P hops of the fill and drain (Narayanan et al. 2021). Llama 3.1 8B has 32 layers: 4 stages of
// 8, embedding and output make the end stages a little heavier, so compare with the busiest stage.
TEST(Performance, OneFOneBMakespan) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.pp = 4, .gpn = 4, .gbs = 16});
  PerfOptions po;
  po.with_memory = false;
  const PerfReport rep = project_performance(job, po);
  ASSERT_EQ(rep.schedule, ScheduleKind::k1F1B);
  double slowest = 0, sum_stage = 0;
  for (const ChunkTiming& c : rep.chunks) {
    slowest = std::max(slowest, c.f_s + c.b_s + c.w_s);
    sum_stage += c.f_s + c.b_s + c.w_s;
  }
  const double lower = 16 * slowest + (sum_stage - slowest);
  EXPECT_GE(rep.pipeline_s, lower - 1e-9);
  EXPECT_LE(rep.pipeline_s, (16 + 3) * slowest + 6 * rep.p2p_s + 1e-9);
  // Bubble over ideal on the busiest stage: the other stages' fill and drain over its m chunks,
  // (sum - slowest) / (m x slowest); (p-1)/m = 3/16 when the stages are balanced. The output stage
  // (a 128k-vocabulary head and its eager cross entropy) is the heaviest.
  EXPECT_NEAR(rep.bubble_over_ideal, (sum_stage - slowest) / (16 * slowest), 0.03);
  EXPECT_LT(rep.bubble_over_ideal, 3.0 / 16.0);
}

// Overlapping the DP gradient reduce-scatter with the backward can only shorten the iteration,
// and the exposed DP time must drop.
TEST(Performance, GradReduceOverlapHelps) {
  JobShape s{.tp = 1, .nodes = 2, .gpn = 8, .gbs = 64};
  s.overlap_grad = false;
  const PerfReport off = project_performance(testing::make_job(testing::llama31_8b(), s));
  s.overlap_grad = true;
  const PerfReport on = project_performance(testing::make_job(testing::llama31_8b(), s));
  EXPECT_LT(on.iteration_s, off.iteration_s);
  EXPECT_LT(on.exposed.dp_s, off.exposed.dp_s);
}

// Megatron-Core's overlap_param_gather gathers bucket by bucket: the forward pre-hook of each DDP
// bucket waits for its all-gather and dispatches the next one, so only the first bucket delays the
// first forward and the rest runs beside it. Off, the whole gather t is exposed; on, t / n is
// (n = ceil(params / max(40M, 1M x DP)), the bucket rule), plus at most the interference the
// hidden part costs the forward it runs beside (DP 8 in one node: the gather is shorter than F).
TEST(Performance, ParamGatherOverlapsTheFirstForwardBucketByBucket) {
  const JobShape s{.tp = 1, .nodes = 1, .gpn = 8, .gbs = 16};
  JobDraft d = testing::make_draft(testing::llama31_8b(), s);
  d.overlap_param_gather = false;
  const PerfReport off = project_performance(finalize_job(d, testing::make_cluster(s)));
  const JobSpec job = testing::make_job(testing::llama31_8b(), s);
  const PerfReport on = project_performance(job);
  const double t = off.param_gather_exposed_s;
  ASSERT_GT(t, 0.0);
  ASSERT_LT(t, on.chunks.at(0).f_s);
  EXPECT_EQ(on.param_gather_exposed_s, 0.0);
  const double n = std::ceil(static_cast<double>(model_params(job.model).total) / 40e6);
  const double interference = job.cluster.accelerator.calibration.comm_compute_interference.value;
  EXPECT_GE(on.iteration_s, off.iteration_s - t + t / n - 1e-9);
  EXPECT_LE(on.iteration_s, off.iteration_s - t + t / n + interference * t + 1e-9);
}

// TP comm overlap hides the sequence-parallel all-gather behind the QKV GEMM that follows it (a
// longer op), but like every overlap the hidden collective slows that compute by the accelerator's
// interference factor: what it adds to the compute stream is interference x its own time, not 0.
TEST(Performance, OverlappedTpCollectiveCostsItsInterference) {
  JobDraft d = testing::make_draft(testing::llama31_8b(), {.tp = 2, .gbs = 8, .sp = true});
  d.tp_comm_overlap = true;
  const JobSpec job = finalize_job(d, testing::make_cluster({.tp = 2, .gbs = 8, .sp = true}));
  const PerfReport rep = project_performance(job);
  const double interference = job.cluster.accelerator.calibration.comm_compute_interference.value;
  ASSERT_GT(interference, 0.0);
  const auto& ops = rep.chunks.at(0).ops;
  int checked = 0;
  for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].op.name != "attn.sp_all_gather") continue;
    ASSERT_EQ(ops[i + 1].op.name, "attn.qkv");
    ASSERT_GT(ops[i + 1].time_s, ops[i].time_s);
    EXPECT_NEAR(ops[i].exposed_s, interference * ops[i].time_s, 1e-12);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// Megatron's ddp_bucket_size counts parameters (DistributedDataParallelConfig.bucket_size):
// stating the rule's own 40M parameters (DP 16: max(40M, 16M)) changes nothing, whatever the
// gradient width; read as 40 MB of fp32 gradient it would be four times as many buckets, which is
// what 10M parameters are.
TEST(Performance, StatedDdpBucketSizeCountsParameters) {
  const JobShape s{.tp = 1, .nodes = 2, .gpn = 8, .gbs = 64};
  JobDraft d = testing::make_draft(testing::llama31_8b(), s);
  const PerfReport rule = project_performance(finalize_job(d, testing::make_cluster(s)));
  d.parallel.ddp_bucket_size_params = 40'000'000;
  const JobSpec stated_job = finalize_job(d, testing::make_cluster(s));
  ASSERT_EQ(stated_job.parallel.ddp_bucket_size_params, 40'000'000);
  const PerfReport stated = project_performance(stated_job);
  EXPECT_DOUBLE_EQ(stated.iteration_s, rule.iteration_s);
  d.parallel.ddp_bucket_size_params = 0;
  d.parallel.ddp_bucket_size_bytes = 40'000'000;  // bytes: 10M fp32 gradients per bucket
  const PerfReport bytes = project_performance(finalize_job(d, testing::make_cluster(s)));
  EXPECT_NE(bytes.iteration_s, rule.iteration_s);
  // 10M parameters are the same buckets as 40 MB of fp32 gradient (the profile's main grads).
  d.parallel.ddp_bucket_size_bytes = 0;
  d.parallel.ddp_bucket_size_params = 10'000'000;
  const PerfReport ten_m = project_performance(finalize_job(d, testing::make_cluster(s)));
  EXPECT_DOUBLE_EQ(ten_m.iteration_s, bytes.iteration_s);
}

// Model FLOP rate identities: TFLOP/s/GPU = model FLOPs / (iteration x GPUs); MFU = that / peak.
TEST(Performance, MetricIdentities) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.tp = 2, .gbs = 32, .sp = true});
  const PerfReport rep = project_performance(job);
  EXPECT_NEAR(rep.model_tflops_per_gpu,
              rep.flops.model_flops / rep.iteration_s / rep.world_size / 1e12, 1e-9);
  EXPECT_NEAR(rep.mfu,
              rep.model_tflops_per_gpu * 1e12 / job.cluster.accelerator.peak_flops(Dtype::kBf16),
              1e-12);
  EXPECT_GT(rep.mfu, 0.2);  // a healthy dense job on H100s runs at 30-60% MFU
  EXPECT_LT(rep.mfu, 0.8);
  EXPECT_TRUE(rep.has_memory);
}

// Interleaving shrinks the bubble: (p-1)/(v m) instead of (p-1)/m.
TEST(Performance, InterleavingShrinksBubble) {
  const JobSpec flat = testing::make_job(testing::llama31_8b(), {.pp = 4, .gpn = 4, .gbs = 8});
  const JobSpec inter =
      testing::make_job(testing::llama31_8b(), {.pp = 4, .vpp = 2, .gpn = 4, .gbs = 8});
  const PerfReport a = project_performance(flat);
  const PerfReport b = project_performance(inter);
  EXPECT_EQ(b.schedule, ScheduleKind::kInterleaved);
  EXPECT_LT(b.bubble_over_ideal, a.bubble_over_ideal);
  EXPECT_NEAR(b.bubble_over_ideal, 3.0 / 16.0, 0.06);
}

// Megatron's plain 1F1B waits for its sends (MG25): at PP 2 rank 0 sends each microbatch's
// activation after its F and rank 1 each gradient after its B, so each waits m x the transfer;
// letting them run beside the compute (interleaved Megatron, torchtitan) can only be faster.
TEST(Performance, BlockingSendsWaitOncePerTransfer) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.pp = 2, .gpn = 2, .gbs = 8});
  ASSERT_FALSE(job.parallel.p2p_overlap);  // the Megatron-LM profile's with_vpp rule
  PerfOptions po;
  po.with_memory = false;
  const PerfReport blocking = project_performance(job, po);
  ASSERT_GT(blocking.p2p_s, 0.0);
  ASSERT_EQ(blocking.num_microbatches, 8);
  for (const schedule::RankStats& r : blocking.simulation.ranks) {
    EXPECT_NEAR(r.p2p_blocked_s, 8 * blocking.p2p_s, 1e-12);
  }
  job.parallel.p2p_overlap = true;
  const PerfReport async = project_performance(job, po);
  for (const schedule::RankStats& r : async.simulation.ranks) EXPECT_EQ(r.p2p_blocked_s, 0.0);
  EXPECT_GT(blocking.pipeline_s, async.pipeline_s);
  EXPECT_LE(blocking.pipeline_s, async.pipeline_s + 2 * 8 * blocking.p2p_s + 1e-12);
}

}  // namespace
}  // namespace projector
