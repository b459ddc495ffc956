// Memory effects of the neutral job-model features the torchtitan back-end uses: FSDP2 with an
// fp32 sharded master, HSDP, reshard_after_forward, per-op selective checkpointing, loss
// parallelism, gradient-accumulation rounds and a compiler memory budget. Expected values are
// the byte counts written out by hand from the definitions (model/job.h, recompute_policy.h).
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "support/job_builders.h"

namespace projector {
namespace {

using testing::JobShape;

constexpr std::size_t idx(MemoryComponent c) {
  return static_cast<std::size_t>(c);
}

JobSpec fsdp2_job(int replicate = 1, bool reshard = true, JobShape s = {}) {
  return testing::make_fsdp2_job(s, replicate, reshard);
}

// FSDP2 keeps fp32 sharded parameters as the master: 4 (master) + 4 (grads) + 8 (Adam) bytes per
// parameter over the shard group, no separate params-dtype shard.
TEST(TorchtitanMemory, Fsdp2ShardsTheFp32Master) {
  JobShape s;
  s.gbs = 8;
  const JobSpec j = fsdp2_job(1, true, s);
  const MemoryReport r = project_memory(j);
  const double params = static_cast<double>(model_params(j.model).total);
  const ComponentBytes& c = r.ranks[0].point;
  EXPECT_EQ(c[idx(MemoryComponent::kWeights)], 0.0);
  EXPECT_NEAR(c[idx(MemoryComponent::kMasterWeights)], params * 4.0 / 8.0, 1.0);
  EXPECT_NEAR(c[idx(MemoryComponent::kGradients)], params * 4.0 / 8.0, 1.0);
  EXPECT_NEAR(c[idx(MemoryComponent::kOptimizerStates)], params * 8.0 / 8.0, 1.0);
}

// HSDP with 2 replicas of 4: every sharded state is twice as large as with one group of 8.
TEST(TorchtitanMemory, HsdpShardsWithinAReplica) {
  const MemoryReport one = project_memory(fsdp2_job(1));
  const MemoryReport two = project_memory(fsdp2_job(2));
  for (MemoryComponent m : {MemoryComponent::kMasterWeights, MemoryComponent::kGradients,
                            MemoryComponent::kOptimizerStates}) {
    EXPECT_NEAR(two.ranks[0].point[idx(m)], 2.0 * one.ranks[0].point[idx(m)], 2.0);
  }
}

// Without reshard after forward every unit of the rank stays gathered: all bf16 weights instead
// of two units.
TEST(TorchtitanMemory, NoReshardKeepsEveryUnitGathered) {
  const JobSpec keep = fsdp2_job(1, false);
  const MemoryReport r = project_memory(keep);
  const RankParams& p = r.ranks[0].params;
  const double unit = p.largest_unit_params;
  EXPECT_NEAR(r.ranks[0].point[idx(MemoryComponent::kFsdpUnsharded)],
              (p.dense_params + p.expert_params) * 2.0 + unit * 4.0, 1.0);
  const MemoryReport re = project_memory(fsdp2_job(1, true));
  EXPECT_NEAR(re.ranks[0].point[idx(MemoryComponent::kFsdpUnsharded)],
              2.0 * unit * 2.0 + unit * 4.0, 1.0);
}

// Per-op SAC on a Llama block (TP 1): saved are the block input x (h), wq (32 x 128) and wv
// (8 x 128) outputs, the attention output (4096) and its fp32 logsumexp, w1 (14336) and w2 (h);
// wk, wo and w3 (the 2nd, 4th and 6th matmuls) are recomputed.
TEST(TorchtitanMemory, OpPolicySavedSet) {
  JobShape s;
  s.mbs = 2;
  s.seq = 4096;
  s.gbs = 16;
  JobSpec j = fsdp2_job(1, true, s);
  j.runtime.recompute.granularity = RecomputeGranularity::kOpPolicy;
  const double T = 2.0 * 4096.0;
  const double e = 2.0;
  const double lse = 2.0 * 32 * 4096 * 4.0;
  const double want = T * e * (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + lse;
  const LayerActivation a = layer_activation(j, j.model.layers[0]);
  EXPECT_NEAR(a.total_bytes, want, 1.0);
  // The unrecomputed set is larger, and what a recompute re-materialises.
  EXPECT_GT(a.full_bytes, a.total_bytes);
  // fp8 linears run scaled_mm (not in the save list): the block keeps its input, the attention
  // output and logsumexp, and the 1-byte quantized inputs of the linears (normed input twice,
  // the MLP's inner activation).
  j.runtime.precision.fp8 = Fp8Recipe::kTensorwise;
  const LayerActivation f = layer_activation(j, j.model.layers[0]);
  EXPECT_NEAR(f.total_bytes, T * e * (4096 + 4096) + lse + T * 1.0 * (4096 + 4096 + 14336), 1.0);
}

// Loss parallel off with TP 2: the full-width fp32 logits on every TP rank, V/2 more per token.
TEST(TorchtitanMemory, LossParallelHalvesTheLogits) {
  JobShape s;
  s.tp = 2;
  s.sp = true;
  s.gbs = 4;
  JobSpec on = fsdp2_job(1, true, s);
  JobSpec off = on;
  off.parallel.vocab_parallel_loss = false;
  const double diff = project_memory(off).ranks[0].activation_per_chunk_bytes[0] -
                      project_memory(on).ranks[0].activation_per_chunk_bytes[0];
  const double T = 4096.0;  // mbs 1 x seq 4096
  EXPECT_NEAR(diff, T * (128256.0 / 2.0) * 4.0, 1.0);
}

// torch.nn.functional.cross_entropy on fp32 logits runs as log_softmax + nll_loss under autograd.
// Its backward holds nll_loss's dense fp32 gradient and log_softmax's new fp32 gradient beside the
// saved log-softmax: 8 bytes per logit of temporaries, where Megatron's in-place loss holds only
// the bf16 gradient (2). The loss is the largest temporary of this job either way.
TEST(TorchtitanMemory, EagerCrossEntropyHoldsTwoFp32Gradients) {
  JobShape s;
  s.gbs = 8;
  JobSpec eager = fsdp2_job(1, true, s);
  eager.runtime.loss_grad_in_place = false;
  JobSpec in_place = eager;
  in_place.runtime.loss_grad_in_place = true;
  const MemoryReport a = project_memory(eager);
  const MemoryReport b = project_memory(in_place);
  ASSERT_EQ(a.ranks[0].transient_source, "logits and loss backward");
  ASSERT_EQ(b.ranks[0].transient_source, "logits and loss backward");
  const double T = 4096.0;  // mbs 1 x seq 4096
  EXPECT_NEAR(a.ranks[0].point[idx(MemoryComponent::kTransient)], T * 128256.0 * 8.0, 1.0);
  EXPECT_NEAR(b.ranks[0].point[idx(MemoryComponent::kTransient)], T * 128256.0 * 2.0, 1.0);
}

// Each accumulation round is its own flush: 6 microbatches in 2 rounds of 3 keep at most 3 in
// flight on the first of 4 stages (1F1B: min(PP, m)).
TEST(TorchtitanMemory, AccumulationRoundsLimitInFlight) {
  JobShape s;
  s.pp = 4;
  s.nodes = 1;
  s.gbs = 12;  // DP 2, MBS 1: 6 microbatches
  JobSpec j = fsdp2_job(1, false, s);
  ASSERT_EQ(j.num_microbatches(), 6);
  EXPECT_DOUBLE_EQ(project_memory(j).ranks[0].in_flight.total_chunk_microbatches(), 4.0);
  j.runtime.accumulation_rounds = 2;
  EXPECT_DOUBLE_EQ(project_memory(j).ranks[0].in_flight.total_chunk_microbatches(), 3.0);
}

// A compiler memory budget b keeps the block input plus b of the rest, and the report brackets
// the peak between b = 0 and b = 1.
TEST(TorchtitanMemory, MemoryBudgetBracket) {
  JobSpec j = fsdp2_job();
  j.runtime.recompute.granularity = RecomputeGranularity::kOpPolicy;
  j.runtime.recompute.memory_budget = 0.25;
  const LayerActivation a = layer_activation(j, j.model.layers[0]);
  const double input = 4096.0 * 4096.0 * 2.0;
  EXPECT_NEAR(a.total_bytes, input + 0.25 * (a.full_bytes - input), 1.0);
  const MemoryReport r = project_memory(j);
  bool bracket = false;
  for (const std::string& n : r.notes) bracket = bracket || n.find("between") != std::string::npos;
  EXPECT_TRUE(bracket);
}

}  // namespace
}  // namespace projector
