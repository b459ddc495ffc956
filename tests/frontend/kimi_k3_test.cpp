// Primus' Kimi-K3 (docs/kimi-k3.md, PR14 models/kimi_k3): the two MI355X examples load with their
// presets, the layers get K3's KDA / NoPE gated MLA interleave, stable latent MoE and attention
// residuals; the parameter totals match the figures Primus' presets state; the stage transfer
// and the mixers are sized as Primus sizes them; the settings Primus raises for are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/config_text.h"

namespace projector {
namespace {

JobSpec load_k3(const char* file, const std::vector<std::string>& sets, std::string* error,
                int nodes = 1) {
  return testing::load_bundled_primus_example(std::string("MI355X/") + file, "mi355x", sets, nodes,
                                              error);
}

constexpr const char* kOfficial = "kimi_k3-BF16-8L-official.yaml";
constexpr const char* kCurve = "kimi_k3-BF16-curve.yaml";

// kimi_k3_8L_official.yaml: linear_attention_freq "([1]*3+[0])*2" (1 = KDA), moe_layer_freq
// "([0]*1+[1]*7)"; the widths of kimi_k3.yaml.
TEST(KimiK3, LayersOfTheOfficialWidthPreset) {
  std::string error;
  const JobSpec job = load_k3(kOfficial, {}, &error, 4);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(job.model.num_layers(), 8);
  EXPECT_EQ(job.model.attn_res_block_size, 12);
  EXPECT_EQ(job.model.position_embedding, PositionEmbeddingKind::kNone);
  for (int i = 0; i < 8; ++i) {
    const LayerSpec& l = job.model.layers[static_cast<std::size_t>(i)];
    const bool kda = i % 4 != 3;
    EXPECT_EQ(l.has_linear_attention(), kda) << i;
    EXPECT_EQ(l.is_moe, i > 0) << i;
    if (kda) {
      EXPECT_EQ(l.linear.kind, LinearAttentionKind::kKda);
      EXPECT_TRUE(l.linear.full_rank_gate);
      // q, k, v (3 x 96 x 128), f_a (128), g_proj (96 x 128), beta (96).
      EXPECT_EQ(l.linear.in_proj_width(), 3 * 12288 + 128 + 12288 + 96);
    } else {
      EXPECT_EQ(l.attention.kind, AttentionKind::kMla);
      EXPECT_TRUE(l.attention.output_gate);
      EXPECT_EQ(l.attention.q_lora_rank, 1536);
      EXPECT_EQ(l.attention.kv_lora_rank, 512);
      EXPECT_EQ(l.attention.head_dim, 192);  // qk 128 + the unrotated 64
    }
    if (l.is_moe) {
      EXPECT_EQ(l.moe.num_experts, 896);
      EXPECT_EQ(l.moe.topk, 16);
      EXPECT_EQ(l.moe.latent_size, 3584);
      EXPECT_TRUE(l.moe.latent_norm);
      EXPECT_EQ(l.moe.shared_expert_ffn_hidden_size, 6144);
    } else {
      EXPECT_EQ(l.mlp.ffn_hidden_size, 33792);
    }
  }
}

// Primus' presets state their sizes: kimi_k3_8L_official.yaml "~215 B total" and "~10 B
// activated per token", kimi_k3.yaml (93 layers) "~2.8 T total ... ~104 B active". By hand from
// Primus' modules: an MoE layer 29.785 B (896 experts x (3584 x 6144 + 3072 x 3584) + router, the
// two latent projections, the shared experts, norms and mixers), a KDA layer 443.7 M, an MLA layer
// 232.2 M (with its 7168 x 12288 output gate), the dense layer 726.7 M, embedding and head
// 2 x 163840 x 7168: 8 layers 214.70 B, 93 layers 2779.5 B. The active figures count the output
// head but not the embedding table (a lookup): 10.06 B and 104.19 B.
TEST(KimiK3, ParameterTotalsMatchThePresets) {
  std::string error;
  const JobSpec official = load_k3(kOfficial, {}, &error, 4);
  ASSERT_TRUE(error.empty()) << error;
  const ModelParams p8 = model_params(official.model, padded_vocab_size(official.model, 1));
  EXPECT_NEAR(static_cast<double>(p8.total) / 1e9, 214.70, 0.1);
  const double embedding_b = 163840.0 * 7168 / 1e9;
  EXPECT_NEAR(static_cast<double>(p8.active) / 1e9 - embedding_b, 10.06, 0.1);

  const JobSpec full = load_k3(kOfficial,
                               {"num_layers=93", "linear_attention_freq=([1]*3+[0])*22+[1]*3+[0]*2",
                                "moe_layer_freq=([0]*1+[1]*92)"},
                               &error, 4);
  ASSERT_TRUE(error.empty()) << error;
  const ModelParams p93 = model_params(full.model, padded_vocab_size(full.model, 1));
  EXPECT_NEAR(static_cast<double>(p93.total) / 1e12, 2.7795, 0.002);
  EXPECT_NEAR(static_cast<double>(p93.active) / 1e9 - embedding_b, 104.19, 0.3);
}

// kimi_k3_pp_shape_patches.py:83-101: every stage transfer carries 1 + ceil(layers / 12) slabs
// (2 for 8 layers). The mixers (attn_res_kernels/__init__.py:25-34): 16x the bf16 bytes of their
// candidates; layer 5 has one checkpoint on entry (the embedding's), so 2 candidates each.
TEST(KimiK3, StageTransferAndMixersFollowTheCheckpoints) {
  std::string error;
  const JobSpec pp = load_k3(kOfficial, {"pipeline_model_parallel_size=2"}, &error, 4);
  ASSERT_TRUE(error.empty()) << error;
  JobSpec plain = pp;
  plain.model.attn_res_block_size = 0;
  EXPECT_DOUBLE_EQ(build_workload(pp).ranks[0].p2p_bytes,
                   2.0 * build_workload(plain).ranks[0].p2p_bytes);
  const LayerWork lw = build_layer_work(pp, 5);
  const double stream = static_cast<double>(pp.runtime.micro_batch_size) * pp.runtime.seq_length *
                        pp.model.hidden_size * 2.0;
  int mixers = 0;
  for (const Op& op : lw.ops) {
    if (op.name.starts_with("attn_res.") && op.phase == WorkPhase::kF && !op.recompute) {
      EXPECT_DOUBLE_EQ(op.bytes, 16.0 * 2.0 * stream) << op.name;
      ++mixers;
    }
  }
  EXPECT_EQ(mixers, 2);
}

// Situ (situ_activation.py:117-161) in the routed experts: eleven eager kernels moving 3a + 92 =
// 98 bytes per gated element in bf16 (a fused SwiGLU: 6), over every routed row of the rank.
TEST(KimiK3, SituActivationMovesItsEagerBytes) {
  std::string error;
  const JobSpec job = load_k3(kOfficial, {}, &error, 4);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(job.model.layers[5].mlp.activation, ActivationKind::kSitu);
  const LayerWork lw = build_layer_work(job, 5);
  double rows = 0.0, act = 0.0;
  for (const Op& op : lw.ops) {
    if (op.recompute || op.phase != WorkPhase::kF) continue;
    if (op.name == "moe.experts.fc1") rows = static_cast<double>(op.gemm.batch) * op.gemm.m;
    if (op.name == "moe.experts.act") act = op.bytes;
  }
  ASSERT_GT(rows, 0.0);
  EXPECT_DOUBLE_EQ(act, rows * 3072 * 98.0);
}

// Primus' curve launcher records its memory (run_kimi_k3_curve_pretrain_mi355x.sh:50-53): MBS 8
// with full block recompute of 12 layers peaks at 139.6 GB (130.0 GiB) of 288; MBS 16 without
// recompute runs out of memory at 276.2 GB allocated. The first fits within 15 % of its peak
// (situ's and KDA's eager fp32 tensors are what moved it from -31 %); the second is OOM.
TEST(KimiK3, CurveMemoryAgainstPrimusNotes) {
  std::string error;
  const JobSpec fits = load_k3(kCurve,
                               {"micro_batch_size=8", "recompute_granularity=full",
                                "recompute_method=block", "recompute_num_layers=12"},
                               &error);
  ASSERT_TRUE(error.empty()) << error;
  const MemoryReport m8 = project_memory(fits);
  EXPECT_EQ(m8.verdict, MemoryVerdict::kFits);
  EXPECT_NEAR(m8.peak_point_bytes / 139.6e9, 1.0, 0.15);
  const JobSpec oom = load_k3(kCurve, {"micro_batch_size=16"}, &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(project_memory(oom).verdict, MemoryVerdict::kOom);
}

// The single-node "curve" shape projects (EP 8 on 8 MI355X), and both examples project with
// finite, positive throughput and memory.
TEST(KimiK3, ExamplesProject) {
  for (const auto& [file, nodes] : {std::pair{kCurve, 1}, std::pair{kOfficial, 4}}) {
    std::string error;
    const JobSpec job = load_k3(file, {}, &error, nodes);
    ASSERT_TRUE(error.empty()) << file << ": " << error;
    const PerfReport perf = project_performance(job);
    EXPECT_GT(perf.tokens_per_s_per_gpu, 0.0) << file;
    EXPECT_TRUE(std::isfinite(perf.iteration_s)) << file;
    const MemoryReport mem = project_memory(job);
    EXPECT_GT(mem.peak_point_bytes, 0.0) << file;
  }
}

// What Primus raises for is refused by key.
TEST(KimiK3, UnsupportedSettingsAreRefusedByKey) {
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{"kda_use_full_rank_gate=false"}, "kda_use_full_rank_gate"},
      {{"kda_chunk_size=128"}, "kda_chunk_size"},
      {{"kda_backend=eager"}, "kda_backend"},  // the dataclass default: the reference kernels
      {{"mtp_num_layers=1"}, "mtp_num_layers"},
      {{"multi_latent_attention=true"}, "multi_latent_attention"},
      {{"pipeline_model_parallel_size=2", "patch_zero_bubble=true"}, "patch_zero_bubble"},
      {{"linear_attention_freq=[1, 0]"}, "linear_attention_freq"},
      // A stated zero-bubble schedule breaks the layout rule (job/rules.h), named by its key.
      {{"pipeline_model_parallel_size=2", "pipeline_schedule_algorithm=zerobubble",
        "recompute_granularity=null"},
       "widen the stage transfer"},
  };
  for (const auto& [sets, key] : cases) {
    std::string error;
    load_k3(kOfficial, sets, &error, 4);
    EXPECT_NE(error.find(key), std::string::npos) << key << ": " << error;
  }
}

}  // namespace
}  // namespace projector
