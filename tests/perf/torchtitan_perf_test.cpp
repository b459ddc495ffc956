// Performance effects of the job-model features the torchtitan back-end uses: accumulation
// rounds as separate pipeline flushes, HSDP and reshard_after_forward communication, per-op
// recompute in the workload, and the PaLM FLOP convention torchtitan logs.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/job_builders.h"

namespace projector {
namespace {

using testing::JobShape;

JobSpec fsdp2_job(JobShape s, int replicate = 1, bool reshard = true) {
  return testing::make_fsdp2_job(s, replicate, reshard);
}

// Two rounds of 4 microbatches take twice the simulated flush of one round of 4; the optimizer
// steps once.
TEST(TorchtitanPerf, AccumulationRoundsRepeatTheFlush) {
  JobShape s;
  s.pp = 2;
  s.gbs = 16;  // DP 4, MBS 1: 4 microbatches
  const JobSpec one = fsdp2_job(s);
  s.gbs = 32;
  JobSpec two = fsdp2_job(s);
  two.runtime.accumulation_rounds = 2;
  const PerfReport a = project_performance(one);
  const PerfReport b = project_performance(two);
  EXPECT_NEAR(b.pipeline_s, 2.0 * a.pipeline_s, 1e-9);
  EXPECT_NEAR(b.optimizer_s, a.optimizer_s, 1e-12);
  EXPECT_NEAR(b.iteration_s - b.optimizer_s, 2.0 * (a.iteration_s - a.optimizer_s), 1e-9);
  EXPECT_EQ(b.table.microbatches, 4);
}

// HSDP: a reduce-scatter in the shard group and an all-reduce of the shard across replicas.
TEST(TorchtitanPerf, HsdpGradientSync) {
  JobShape s;
  s.nodes = 2;
  s.gbs = 16;
  const JobSpec j = fsdp2_job(s, 2);
  const Workload w = build_workload(j);
  const IterationWork& it = w.ranks[0].iteration;
  ASSERT_EQ(it.grad_sync.size(), 2u);
  EXPECT_EQ(it.grad_sync[0].collective, CollectiveKind::kReduceScatter);
  EXPECT_EQ(it.grad_sync[0].group, GroupKind::kDpCpShard);
  EXPECT_EQ(it.grad_sync[0].group_size, 8);
  EXPECT_EQ(it.grad_sync[1].collective, CollectiveKind::kAllReduce);
  EXPECT_EQ(it.grad_sync[1].group, GroupKind::kDpCpReplicate);
  EXPECT_EQ(it.grad_sync[1].group_size, 2);
  EXPECT_DOUBLE_EQ(it.grad_sync[1].bytes, it.grad_sync[0].bytes / 8.0);
  // The shard group is 8 consecutive ranks (one node), the replicate group spans the nodes.
  EXPECT_EQ(job_group(j, GroupKind::kDpCpShard).nodes, 1);
  EXPECT_EQ(job_group(j, GroupKind::kDpCpReplicate).nodes, 2);
  // Without reshard after forward one gather per unit instead of two.
  const JobSpec keep = fsdp2_job(s, 2, false);
  EXPECT_EQ(build_workload(keep).ranks[0].iteration.param_gather.size(),
            it.param_gather.size() / 2);
}

// Per-op SAC replays wk (the 8 KV heads of the fused QKV GEMM), wo and w3, not wq / wv / w1 /
// w2, and never the attention core.
TEST(TorchtitanPerf, OpPolicyReplaysTheUnsavedMatmuls) {
  JobShape s;
  JobSpec j = fsdp2_job(s);
  j.runtime.recompute.granularity = RecomputeGranularity::kOpPolicy;
  const LayerWork lw = build_layer_work(j, 0);
  std::int64_t qkv_n = -1;
  bool core = false, out_proj = false, fc2 = false;
  for (const Op& op : lw.ops) {
    if (!op.recompute) continue;
    if (op.name == "attn.qkv.recompute") qkv_n = op.gemm.n;
    core = core || op.name == "attn.core.recompute";
    out_proj = out_proj || op.name == "attn.out_proj.recompute";
    fc2 = fc2 || op.name == "mlp.fc2.recompute";
  }
  EXPECT_EQ(qkv_n, 8 * 128);
  EXPECT_FALSE(core);
  EXPECT_TRUE(out_proj);
  EXPECT_FALSE(fc2);
}

// torchtitan's logged FLOPs for Llama 3.1 8B at 8192 tokens: 6 x (8,030,261,248 - 128256 x 4096)
// + 6 x 32 layers x 32 heads x 256 x 8192 = 57,914,449,920 per token.
TEST(TorchtitanPerf, PalmConvention) {
  const ModelSpec m = testing::llama31_8b();
  EXPECT_EQ(model_params(m).total, 8030261248);
  EXPECT_DOUBLE_EQ(palm_flops_per_token(m, 8192), 57914449920.0);
  JobShape s;
  s.seq = 8192;
  const PerfReport r = project_performance(fsdp2_job(s));
  EXPECT_NEAR(r.palm_tflops_per_gpu, 57914449920.0 * r.tokens_per_s_per_gpu / 1e12, 1e-6);
}

}  // namespace
}  // namespace projector
