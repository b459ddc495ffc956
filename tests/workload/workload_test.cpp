#include "projector/workload/workload.h"

#include <gtest/gtest.h>

#include "projector/job/accounting.h"
#include "projector/model/accounting.h"
#include "support/job_builders.h"

namespace projector {
namespace {

using testing::JobShape;

const Op* find(const LayerWork& lw, const std::string& name) {
  for (const Op& op : lw.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// Llama 3.1 8B, TP 2, MBS 1, seq 4096: QKV is column-parallel over (32 + 2*8) heads of 128 ->
// n = 48*128/2 = 3072, k = 4096, m = 4096 tokens. FC1 (SwiGLU) n = 2*14336/2 = 14336.
TEST(Workload, DenseShapesUnderTp) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.tp = 2, .sp = true});
  const LayerWork lw = build_layer_work(job, 0);
  const Op* qkv = find(lw, "attn.qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->gemm.m, 4096);
  EXPECT_EQ(qkv->gemm.n, 3072);
  EXPECT_EQ(qkv->gemm.k, 4096);
  const Op* fc1 = find(lw, "mlp.fc1");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->gemm.n, 14336);
  const Op* fc2 = find(lw, "mlp.fc2");
  ASSERT_NE(fc2, nullptr);
  EXPECT_EQ(fc2->gemm.k, 7168);
  // The weight gradient of FC1 is (n x k) reduced over the tokens.
  const Op* w = find(lw, "mlp.fc1.wgrad");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->phase, WorkPhase::kW);
  EXPECT_EQ(w->gemm.m, 14336);
  EXPECT_EQ(w->gemm.n, 4096);
  EXPECT_EQ(w->gemm.k, 4096);
}

// GEMM FLOPs of one layer forward = 2 x tokens x (its GEMM weights on this rank): the workload
// and the parameter accounting must agree. B and W each repeat the forward GEMM FLOPs.
TEST(Workload, LayerGemmFlopsMatchParameters) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.tp = 4, .sp = true});
  const LayerWork lw = build_layer_work(job, 3);
  double f = 0, b = 0, w = 0;
  for (const Op& op : lw.ops) {
    if (op.kind != OpKind::kGemm) continue;
    (op.phase == WorkPhase::kF ? f : op.phase == WorkPhase::kB ? b : w) += op.flops;
  }
  const LayerParams lp = layer_params(job.model, job.model.layers[3]);
  const double expected = 2.0 * 4096 * static_cast<double>(lp.attention + lp.mlp) / 4;
  EXPECT_DOUBLE_EQ(f, expected);
  EXPECT_DOUBLE_EQ(b, expected);
  EXPECT_DOUBLE_EQ(w, expected);
}

// Megatron's TP communication per layer: with SP two all-gathers and two reduce-scatters in the
// forward (mirrored in the backward); without SP two all-reduces each way.
TEST(Workload, TpCollectivesPerLayer) {
  auto count = [](const LayerWork& lw, WorkPhase ph, CollectiveKind k) {
    int n = 0;
    for (const Op& op : lw.ops) {
      n += op.kind == OpKind::kCollective && op.phase == ph && op.collective == k &&
           op.group == GroupKind::kTp;
    }
    return n;
  };
  const LayerWork sp =
      build_layer_work(testing::make_job(testing::llama31_8b(), {.tp = 8, .sp = true}), 0);
  EXPECT_EQ(count(sp, WorkPhase::kF, CollectiveKind::kAllGather), 2);
  EXPECT_EQ(count(sp, WorkPhase::kF, CollectiveKind::kReduceScatter), 2);
  EXPECT_EQ(count(sp, WorkPhase::kB, CollectiveKind::kAllGather), 2);
  EXPECT_EQ(count(sp, WorkPhase::kB, CollectiveKind::kReduceScatter), 2);
  const LayerWork ar = build_layer_work(testing::make_job(testing::llama31_8b(), {.tp = 8}), 0);
  EXPECT_EQ(count(ar, WorkPhase::kF, CollectiveKind::kAllReduce), 2);
  EXPECT_EQ(count(ar, WorkPhase::kB, CollectiveKind::kAllReduce), 2);
  // All-gathered activations: 4096 tokens x 4096 hidden x 2 bytes.
  for (const Op& op : sp.ops) {
    if (op.kind == OpKind::kCollective) {
      EXPECT_DOUBLE_EQ(op.bytes, 4096.0 * 4096 * 2);
    }
  }
}

// Consecutive identical layers collapse into one block: Llama 3.1 8B on 2 stages of 16 layers is
// embedding + one 16-layer block on stage 0, one 16-layer block + output on stage 1.
TEST(Workload, IdenticalLayersShareOneBlock) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), {.pp = 2, .gbs = 16});
  const Workload wl = build_workload(job);
  ASSERT_EQ(wl.ranks.size(), 2u);
  const auto& b0 = wl.ranks[0].chunks[0].blocks;
  const auto& b1 = wl.ranks[1].chunks[0].blocks;
  ASSERT_EQ(b0.size(), 2u);
  EXPECT_EQ(b0[0].label, "embedding");
  EXPECT_EQ(b0[1].layer, 0);
  EXPECT_EQ(b0[1].count, 16);
  ASSERT_EQ(b1.size(), 2u);
  EXPECT_EQ(b1[0].layer, 16);
  EXPECT_EQ(b1[0].count, 16);
  EXPECT_EQ(b1[1].label, "output");
}

// first_last_layers_bf16 with one layer at each end: on PP 2 of Llama 3.1 8B (16 layers a stage)
// layer 0 and layer 31 are blocks of their own whose GEMMs read bf16 with no fp8 cast, and the 30
// layers between run tensorwise FP8; the GEMM FLOPs are the same either way.
TEST(Workload, FirstLastLayersStayBf16) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.pp = 2, .gbs = 16});
  job.runtime.precision.fp8 = Fp8Recipe::kTensorwise;
  job.runtime.precision.bf16_layers_at_start = 1;
  job.runtime.precision.bf16_layers_at_end = 1;
  const Workload wl = build_workload(job);
  const auto& b0 = wl.ranks[0].chunks[0].blocks;
  const auto& b1 = wl.ranks[1].chunks[0].blocks;
  ASSERT_EQ(b0.size(), 3u);  // embedding, layer 0, layers 1-15
  EXPECT_EQ(b0[1].layer, 0);
  EXPECT_EQ(b0[1].count, 1);
  EXPECT_EQ(b0[2].count, 15);
  ASSERT_EQ(b1.size(), 3u);  // layers 16-30, layer 31, output
  EXPECT_EQ(b1[0].count, 15);
  EXPECT_EQ(b1[1].layer, 31);
  EXPECT_EQ(b1[1].count, 1);
  for (const LayerWork* lw : {&b0[1], &b1[1]}) {
    EXPECT_EQ(find(*lw, "mlp.fc1")->gemm.dtype, Dtype::kBf16);
    EXPECT_EQ(find(*lw, "mlp.fc1.fp8_cast"), nullptr);
  }
  EXPECT_EQ(find(b0[2], "mlp.fc1")->gemm.dtype, Dtype::kFp8);
  EXPECT_NE(find(b0[2], "mlp.fc1.fp8_cast"), nullptr);
  EXPECT_DOUBLE_EQ(find(b0[1], "mlp.fc1")->flops, find(b0[2], "mlp.fc1")->flops);
}

// fp8_wgrad off (the Megatron adapter sets it with delayed scaling only): the weight-gradient
// GEMMs read bf16, the forward and data-gradient GEMMs stay FP8.
TEST(Workload, HighPrecisionWgradWithDelayedScaling) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {});
  job.runtime.precision.fp8 = Fp8Recipe::kDelayed;
  job.runtime.precision.fp8_wgrad = false;
  const LayerWork lw = build_layer_work(job, 0);
  EXPECT_EQ(find(lw, "mlp.fc1")->gemm.dtype, Dtype::kFp8);
  EXPECT_EQ(find(lw, "mlp.fc1.dgrad")->gemm.dtype, Dtype::kFp8);
  EXPECT_EQ(find(lw, "mlp.fc1.wgrad")->gemm.dtype, Dtype::kBf16);
  job.runtime.precision.fp8_wgrad = true;
  EXPECT_EQ(find(build_layer_work(job, 0), "mlp.fc1.wgrad")->gemm.dtype, Dtype::kFp8);
}

// Full recompute replays the forward before the backward: recompute FLOPs == forward FLOPs.
TEST(Workload, FullRecomputeReplaysForward) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {});
  job.runtime.recompute.granularity = RecomputeGranularity::kFull;
  const LayerWork lw = build_layer_work(job, 0);
  double fwd = 0, re = 0;
  for (const Op& op : lw.ops) {
    if (op.phase == WorkPhase::kF) fwd += op.flops;
    if (op.recompute) re += op.flops;
  }
  EXPECT_GT(fwd, 0.0);
  EXPECT_DOUBLE_EQ(re, fwd);
}

// distribute_saved_activations at TP 2 (no SP), full uniform recompute of 2 layers: one exposed
// TP all-gather of the checkpoint's 4096 x 4096 bf16 hidden states per 2 layers, in the backward:
// 33,554,432 / 2 bytes a layer.
TEST(Workload, DistributedCheckpointIsGatheredBeforeTheReplay) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.tp = 2});
  job.runtime.recompute.granularity = RecomputeGranularity::kFull;
  job.runtime.recompute.num_layers = 2;
  EXPECT_EQ(find(build_layer_work(job, 0), "layer.checkpoint_all_gather"), nullptr);
  job.runtime.recompute.distribute_saved = true;
  const LayerWork lw = build_layer_work(job, 0);
  const Op* g = find(lw, "layer.checkpoint_all_gather");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->phase, WorkPhase::kB);
  EXPECT_EQ(g->collective, CollectiveKind::kAllGather);
  EXPECT_EQ(g->group, GroupKind::kTp);
  EXPECT_DOUBLE_EQ(g->bytes, 4096.0 * 4096 * 2 / 2);
}

// num_distributed_optimizer_instances 2 on 16 DP ranks (MG23): the gradients reduce-scatter in
// groups of 8, each rank's eighth is all-reduced across the 2 instances, and the weights
// all-gather in the groups of 8 (bytes: the stage's P params x 4-byte main grads, / 8 for the
// all-reduce; P x 2 bf16 for the gather).
TEST(Workload, DistributedOptimizerInstancesShardLikeHsdp) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.nodes = 2, .gbs = 16});
  ASSERT_TRUE(job.parallel.distributed_optimizer);
  job.parallel.dp_replicate = 2;
  const Workload wl = build_workload(job);
  const IterationWork& it = wl.ranks[0].iteration;
  const double P =
      stage_params(job.model, job.parallel, job.parallel.stage(0, 0), false).dense_params;
  ASSERT_EQ(it.grad_sync.size(), 2u);
  EXPECT_EQ(it.grad_sync[0].group, GroupKind::kDpCpShard);
  EXPECT_EQ(it.grad_sync[0].collective, CollectiveKind::kReduceScatter);
  EXPECT_EQ(it.grad_sync[0].group_size, 8);
  EXPECT_DOUBLE_EQ(it.grad_sync[0].bytes, P * 4.0);
  EXPECT_EQ(it.grad_sync[1].group, GroupKind::kDpCpReplicate);
  EXPECT_EQ(it.grad_sync[1].collective, CollectiveKind::kAllReduce);
  EXPECT_EQ(it.grad_sync[1].group_size, 2);
  EXPECT_DOUBLE_EQ(it.grad_sync[1].bytes, P * 4.0 / 8.0);
  ASSERT_EQ(it.param_gather.size(), 1u);
  EXPECT_EQ(it.param_gather[0].group_size, 8);
  EXPECT_DOUBLE_EQ(it.param_gather[0].bytes, P * 2.0);
}

// a2a+p2p with levels [4, 2] (MG24), Llama 3.1 8B (32 heads, 8 KV heads of 128) at CP 8, TP 1,
// seq 8192: each rank holds 1024 tokens. The all-to-all runs over 4 neighbouring ranks with the
// rank's q, k, v and output, 1024 x (2 x 32 x 128 + 8 x 256) x 2 B = 20,971,520 B; the ring over
// the 2 ranks 4 apart, one step of 1024 x 8 x 256 x 2 B = 4,194,304 B of K and V. The core runs
// 8 heads (2 KV) of 4096 queries: the FLOPs of plain p2p's 32 heads of 1024 queries.
TEST(Workload, HierarchicalCpSplitsAllToAllAndRing) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.cp = 8, .nodes = 2, .seq = 8192});
  const double p2p_core_flops = find(build_layer_work(job, 0), "attn.core")->flops;
  job.parallel.cp_comm_type = CpCommType::kA2aP2p;
  job.parallel.cp_a2a_size = 4;
  const LayerWork lw = build_layer_work(job, 0);
  const Op* a2a = find(lw, "attn.cp_all_to_all");
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(a2a->collective, CollectiveKind::kAllToAll);
  EXPECT_EQ(a2a->group_size, 4);
  EXPECT_EQ(a2a->group_stride, 1);
  EXPECT_DOUBLE_EQ(a2a->bytes, 20971520.0);
  const Op* ring = find(lw, "attn.cp_ring_kv");
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->group_size, 2);
  EXPECT_EQ(ring->group_stride, 4);
  EXPECT_EQ(ring->steps, 1);
  EXPECT_DOUBLE_EQ(ring->bytes, 4194304.0);
  const Op* core = find(lw, "attn.core");
  EXPECT_EQ(core->attention.q_heads, 8);
  EXPECT_EQ(core->attention.kv_heads, 2);
  EXPECT_EQ(core->attention.seq_q, 4096);
  EXPECT_DOUBLE_EQ(core->flops, p2p_core_flops);
  // Both levels' transfers have a backward twin.
  EXPECT_NE(find(lw, "attn.cp_all_to_all.bwd"), nullptr);
  EXPECT_NE(find(lw, "attn.cp_ring_kv.bwd"), nullptr);
  // All-to-all over all 8 ranks: no ring.
  job.parallel.cp_a2a_size = 8;
  EXPECT_EQ(find(build_layer_work(job, 0), "attn.cp_ring_kv"), nullptr);
}

// fp8_dpa: the attention core runs in FP8 (MXFP8 under that recipe) in the layers the recipe
// covers; a layer kept in BF16 (first_last_layers_bf16) runs it in BF16.
TEST(Workload, Fp8AttentionCoreFollowsTheRecipe) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {});
  PrecisionSpec& p = job.runtime.precision;
  p.fp8 = Fp8Recipe::kTensorwise;
  p.fp8_attention = true;
  p.bf16_layers_at_start = 1;
  EXPECT_EQ(find(build_layer_work(job, 0), "attn.core")->attention.dtype, Dtype::kBf16);
  EXPECT_EQ(find(build_layer_work(job, 1), "attn.core")->attention.dtype, Dtype::kFp8);
  p.fp8 = Fp8Recipe::kMxfp8;
  EXPECT_EQ(find(build_layer_work(job, 1), "attn.core")->attention.dtype, Dtype::kMxfp8);
  p.fp8_attention = false;
  EXPECT_EQ(find(build_layer_work(job, 1), "attn.core")->attention.dtype, Dtype::kBf16);
}

// Block recompute of N layers replays the first N layers of each chunk; N = 0 replays none, as
// Megatron's block loop does (recompute.py: layer_idx < recompute_num_layers) and as the FLOP
// accounting counts it (recompute_forward_flops_per_token 0 = no recompute).
TEST(Workload, BlockRecomputeOfZeroLayersReplaysNone) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {});
  job.runtime.recompute.granularity = RecomputeGranularity::kFull;
  job.runtime.recompute.method = RecomputeMethod::kBlock;
  auto replayed = [&](int n, int layer) {
    job.runtime.recompute.num_layers = n;
    double re = 0;
    for (const Op& op : build_layer_work(job, layer).ops) re += op.recompute ? op.flops : 0.0;
    return re;
  };
  EXPECT_EQ(replayed(0, 0), 0.0);
  EXPECT_GT(replayed(2, 1), 0.0);
  EXPECT_EQ(replayed(2, 2), 0.0);
}

// Whole-model consistency: the GEMM + attention FLOPs of every rank's workload, times the
// microbatches and data-parallel replicas, equal the independent model-FLOP accounting (3x
// forward, causal attention halved) within 1% (the accounting ignores the tiny router/loss ops).
TEST(Workload, IterationFlopsMatchAccounting) {
  const JobSpec job =
      testing::make_job(testing::llama31_8b(), {.tp = 2, .pp = 2, .gbs = 16, .sp = true});
  const Workload wl = build_workload(job);
  double per_microbatch = 0;
  for (const RankWork& r : wl.ranks) {
    for (const ChunkWork& c : r.chunks) {
      for (const LayerWork& b : c.blocks) {
        for (const Op& op : b.ops) {
          if (op.kind == OpKind::kCollective || op.recompute) continue;
          // Model FLOPs count a backward as two forwards; the flash-attention backward kernel
          // does 2.5x its forward (it recomputes the scores), so count attention as 3x forward.
          if (op.kind == OpKind::kAttention) {
            per_microbatch += op.phase == WorkPhase::kF ? 3.0 * op.flops * b.count : 0.0;
            continue;
          }
          per_microbatch += op.flops * b.count;  // a block stands for `count` identical layers
        }
      }
    }
  }
  const double total = per_microbatch * job.parallel.tp * job.num_microbatches() * job.dp();
  FlopOptions causal_half;
  causal_half.causal_attention_half = true;  // the kernels skip the masked half
  const ModelFlops mf = model_flops(job, causal_half);
  EXPECT_NEAR(total / mf.model_flops, 1.0, 0.01);
}

// MoE: balanced routing gives each local expert tokens*topk/E*EP rows (Mixtral 8x7B, EP 8,
// 4096 tokens, top-2: 4096*2*8/8 / 1 local expert = 8192 rows).
TEST(Workload, MoeGroupedGemmRows) {
  const JobSpec job = testing::make_job(testing::mixtral_8x7b(), {.ep = 8, .gbs = 8});
  const LayerWork lw = build_layer_work(job, 0);
  const Op* fc1 = find(lw, "moe.experts.fc1");
  ASSERT_NE(fc1, nullptr);
  // One local expert still runs the grouped kernel (TE GroupedLinear, torch._grouped_mm), priced
  // with the part's grouped_gemm_fraction (docs/moe.md section 3).
  EXPECT_EQ(fc1->kind, OpKind::kGroupedGemm);
  EXPECT_EQ(fc1->gemm.batch, 1);
  EXPECT_EQ(fc1->gemm.m, 8192);
  const Op* a2a = find(lw, "moe.dispatch_a2a");
  ASSERT_NE(a2a, nullptr);
  EXPECT_DOUBLE_EQ(a2a->bytes, 4096.0 * 2 * 4096 * 2);
}

// A deduplicating dispatcher (DeepEP / HybridEP / flex) sends a token once per destination node.
// 128 experts top-8 over EP 16 on two nodes: one copy per (token, expert) puts 8 x 1/2 = 4 copies
// on the other node; deduplicated, the other node is hit with probability
// 1 - C(64,8)/C(128,8) = 1 - 4426165368/1429702652400. Within one node (EP 8, top-4) the same
// holds per GPU: 7 x (1 - C(112,4)/C(128,4)) copies instead of 4 x 7/8.
TEST(Workload, DedupDispatchBytes) {
  ModelSpec model = testing::mixtral_8x7b();
  for (LayerSpec& l : model.layers) {
    l.moe.num_experts = 128;
    l.moe.topk = 8;
    l.moe.expert_ffn_hidden_size = 768;
  }
  JobSpec job = testing::make_job(model, {.ep = 16, .nodes = 2, .gbs = 16});
  const double plain = find(build_layer_work(job, 0), "moe.dispatch_a2a")->bytes;
  EXPECT_DOUBLE_EQ(plain, 4096.0 * 8 * 4096 * 2);
  job.runtime.moe_dedup_dispatch = true;
  const LayerWork lw = build_layer_work(job, 0);
  const double two_nodes = (1.0 - 4426165368.0 / 1429702652400.0) / 4.0;
  EXPECT_NEAR(find(lw, "moe.dispatch_a2a")->bytes / plain, two_nodes, 1e-12);
  EXPECT_NEAR(find(lw, "moe.combine_a2a")->bytes / plain, two_nodes, 1e-12);
  // The deduplicating kernels aggregate per node (CommGroup::node_aggregated); NCCL's does not.
  // Each GPU's own copies come through its node's counterparts over NVLink: per byte sent,
  // E[GPUs hit] x 7/8 / E[nodes hit] = 16 (1 - C(120,8)/C(128,8)) x 7/8 / (2 (1 -
  // C(64,8)/C(128,8))).
  double miss_gpu = 1.0, miss_node = 1.0;
  for (int i = 0; i < 8; ++i) {
    miss_gpu *= (120.0 - i) / (128.0 - i);
    miss_node *= (64.0 - i) / (128.0 - i);
  }
  EXPECT_NEAR(find(lw, "moe.dispatch_a2a")->node_forward_ratio,
              16.0 * (1.0 - miss_gpu) * 7.0 / 8.0 / (2.0 * (1.0 - miss_node)), 1e-9);
  EXPECT_TRUE(find(lw, "moe.dispatch_a2a")->node_aggregated);
  EXPECT_TRUE(find(lw, "moe.combine_a2a")->node_aggregated);
  EXPECT_FALSE(
      find(build_layer_work(testing::make_job(model, {.ep = 16, .nodes = 2, .gbs = 16}), 0),
           "moe.dispatch_a2a")
          ->node_aggregated);

  for (LayerSpec& l : model.layers) l.moe.topk = 4;
  JobSpec one = testing::make_job(model, {.ep = 8, .gbs = 8});
  const double plain_one = find(build_layer_work(one, 0), "moe.dispatch_a2a")->bytes;
  one.runtime.moe_dedup_dispatch = true;
  const double one_node = 7.0 * (1.0 - 6210820.0 / 10668000.0) / (4.0 * 7.0 / 8.0);
  EXPECT_NEAR(find(build_layer_work(one, 0), "moe.dispatch_a2a")->bytes / plain_one, one_node,
              1e-12);
}

}  // namespace
}  // namespace projector
