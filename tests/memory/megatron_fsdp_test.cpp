// Issue 12 item 14: Megatron's own FSDP2 and Transformer Engine FP8 memory, written out by hand
// from Megatron / Primus source (docs/references.md MG14, MG15, PR6), and the output head's saved
// tensors, which are gone before any layer's backward builds its working set.
#include <gtest/gtest.h>

#include <string>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "support/config_text.h"

namespace projector {
namespace {

constexpr std::size_t idx(MemoryComponent c) {
  return static_cast<std::size_t>(c);
}

// 4 layers, h 1024, 8 heads (no GQA), SwiGLU ffn 4096, RMSNorm, untied vocabulary `vocab`,
// MBS 1 x seq 2048, 8 GPUs of an MI300X node, full recompute of every layer.
std::string args(int vocab, const std::string& extra) {
  return "num_layers: 4\nhidden_size: 1024\nnum_attention_heads: 8\nffn_hidden_size: 4096\n"
         "swiglu: true\nnormalization: RMSNorm\nuntie_embeddings_and_output_weights: true\n"
         "vocab_size: " +
         std::to_string(vocab) +
         "\nmake_vocab_size_divisible_by: 128\nposition_embedding_type: rope\n"
         "add_bias_linear: false\nhidden_dropout: 0.0\nattention_dropout: 0.0\nbf16: true\n"
         "micro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 2048\n"
         "recompute_granularity: full\nrecompute_method: block\nrecompute_num_layers: 4\n"
         "gradient_accumulation_fusion: false\n" +
         extra;
}

JobSpec load(const testing::TempDir& dir, const std::string& text) {
  return testing::load_config_text(dir, text, "mi300x");
}

// Parameters by hand: a layer holds QKV 1024 x 3072 + proj 1024 x 1024 + fc1 1024 x 8192 + fc2
// 4096 x 1024 + 2 norms of 1024 = 16,779,264; 4 of them, the embedding and the output layer
// (32000 x 1024 each) and the final norm: 132,654,080.
constexpr double kParams = 4 * 16779264.0 + 2 * 32000.0 * 1024 + 1024;
constexpr double kEmbedding = 32000.0 * 1024;

// use_torch_fsdp2 casts the model to bf16 before fully_shard, with no mixed-precision policy
// (MG14): over DP 8, bf16 shards (2 B) and bf16 reduce-scattered gradients (2 B); the mixed-
// precision optimizer keeps its own fp32 master (4 B) and Adam moments (8 B). The window: the
// unit in use and the prefetched one (the embedding, the largest unit) gathered in bf16, and one
// unit's unsharded bf16 gradient.
TEST(MegatronFsdp2, Bf16ShardsBesideTheOptimizersMaster) {
  testing::TempDir dir;
  const JobSpec job = load(dir, args(32000,
                                     "use_torch_fsdp2: true\nuse_distributed_optimizer: false\n"
                                     "ckpt_format: torch_dist\n"));
  EXPECT_FALSE(job.runtime.fsdp_param_is_master);
  EXPECT_EQ(job.runtime.main_grads_dtype, Dtype::kBf16);
  const MemoryReport report = project_memory(job);
  const RankMemory& r = report.ranks[0];
  EXPECT_NEAR(r.point[idx(MemoryComponent::kWeights)], kParams * 2 / 8, 1.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kGradients)], kParams * 2 / 8, 1.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kMasterWeights)], kParams * 4 / 8, 1.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kOptimizerStates)], kParams * 8 / 8, 1.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kFsdpUnsharded)], 2 * kEmbedding * 2 + kEmbedding * 2,
              1.0);
}

// Primus' use_fsdp2_fp32_param_optimizer keeps fp32 shards as the optimizer's own parameters
// under a bf16 MixedPrecisionPolicy (PR7): torchtitan's layout, no separate bf16 shard; fp32
// gradients (4 B), Adam (8 B) and the fp32 shards themselves (4 B) over DP 8.
TEST(MegatronFsdp2, PrimusFp32ParamOptimizer) {
  testing::TempDir dir;
  const JobSpec job =
      load(dir, args(32000,
                     "use_torch_fsdp2: true\nuse_distributed_optimizer: false\n"
                     "ckpt_format: torch_dist\nuse_fsdp2_fp32_param_optimizer: true\n"));
  EXPECT_TRUE(job.runtime.fsdp_param_is_master);
  const MemoryReport report = project_memory(job);
  const RankMemory& r = report.ranks[0];
  EXPECT_EQ(r.point[idx(MemoryComponent::kWeights)], 0.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kMasterWeights)], kParams * 4 / 8, 1.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kGradients)], kParams * 4 / 8, 1.0);
}

// Megatron-FSDP's data_parallel_sharding_strategy (MG2 megatron_fsdp.py): optim is ZeRO-1 (the
// distributed optimizer: fp32 main gradients whole, 4 B x params); optim_grads is ZeRO-2: the
// main gradients sharded over DP 8 too, with one unit's gradient whole until its reduce-scatter
// (the largest unit: the embedding, 32000 x 1024). The weights stay whole either way, and the
// iteration moves the same bytes (one reduce-scatter of the gradients, one gather of the weights).
TEST(MegatronFsdp, OptimGradsShardsTheMainGradients) {
  testing::TempDir dir;
  const std::string fsdp =
      "use_megatron_fsdp: true\nuse_distributed_optimizer: true\nckpt_format: fsdp_dtensor\n"
      "data_parallel_sharding_strategy: ";
  const JobSpec zero1 = load(dir, args(32000, fsdp + "optim\n"));
  const JobSpec zero2 = load(dir, args(32000, fsdp + "optim_grads\n"));
  EXPECT_FALSE(zero1.parallel.grads_sharded);
  EXPECT_TRUE(zero2.parallel.grads_sharded);
  EXPECT_EQ(zero2.parallel.fsdp, FsdpKind::kNone);
  EXPECT_TRUE(zero2.parallel.distributed_optimizer);
  const MemoryReport m1 = project_memory(zero1);
  const MemoryReport m2 = project_memory(zero2);
  const RankMemory& r1 = m1.ranks[0];
  const RankMemory& r2 = m2.ranks[0];
  EXPECT_NEAR(r1.point[idx(MemoryComponent::kGradients)], kParams * 4, 1.0);
  EXPECT_NEAR(r2.point[idx(MemoryComponent::kGradients)], kParams * 4 / 8 + kEmbedding * 4, 1.0);
  EXPECT_NEAR(r2.point[idx(MemoryComponent::kWeights)], r1.point[idx(MemoryComponent::kWeights)],
              1.0);
  EXPECT_NEAR(r2.point[idx(MemoryComponent::kOptimizerStates)],
              r1.point[idx(MemoryComponent::kOptimizerStates)], 1.0);
  EXPECT_DOUBLE_EQ(project_performance(zero2).iteration_s, project_performance(zero1).iteration_s);
}

// The output head's saved tensors (final-norm input, output-layer input: 2 x T x h x 2 B; the
// non-fused loss's fp32 softmax T x V x 4 B) are freed by the loss and output-layer backward
// before the last layer's recompute: the recompute working set (one layer's saved set plus its
// largest temporary) is on top of the layer checkpoints only. A vocabulary of 2048 makes the
// working set the larger temporary: transient = working set - head.
TEST(MegatronMemory, HeadIsFreedBeforeTheRecomputeWorkingSet) {
  testing::TempDir dir;
  const JobSpec job = load(dir, args(2048, "use_distributed_optimizer: true\n"));
  const double T = 2048.0;
  const double head = 2 * T * 1024 * 2 + T * 2048 * 4;
  const LayerActivation la = layer_activation(job, job.model.layers[0]);
  const double working_set = la.full_bytes + la.largest_temporary_bytes;
  ASSERT_GT(working_set - head, T * 2048 * 2);  // more than the loss gradient (bf16 logits)
  const MemoryReport report = project_memory(job);
  const RankMemory& r = report.ranks[0];
  EXPECT_NEAR(r.point[idx(MemoryComponent::kTransient)], working_set - head, 1.0);
  EXPECT_NEAR(r.point[idx(MemoryComponent::kActivations)], 4 * T * 1024 * 2 + head, 1.0);
}

// Primus' no_fp8_weight_transpose_cache builds TE linears that keep no transposed fp8 weight
// (PR6): the cached fp8 copies of the decoder GEMM weights (4 x 16,777,216 params) drop from 2 B
// (rowwise + transpose) to 1 B per parameter.
TEST(MegatronMemory, Fp8TransposeCacheOff) {
  testing::TempDir dir;
  const std::string fp8 = "use_distributed_optimizer: true\nfp8: hybrid\n";
  const double gemm = 4 * 16777216.0;
  const JobSpec cached = load(dir, args(32000, fp8));
  EXPECT_NEAR(project_memory(cached).ranks[0].point[idx(MemoryComponent::kFp8WeightCopies)],
              gemm * 2, 1.0);
  const JobSpec off = load(dir, args(32000, fp8 + "no_fp8_weight_transpose_cache: true\n"));
  EXPECT_FALSE(off.runtime.precision.fp8_transpose_cached);
  EXPECT_NEAR(project_memory(off).ranks[0].point[idx(MemoryComponent::kFp8WeightCopies)], gemm,
              1.0);
}

}  // namespace
}  // namespace projector
