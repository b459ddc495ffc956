// Issue 12 item 9: Mamba-2 and hybrid layer stacks, and the model types that are refused.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/job/accounting.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/workload/workload.h"
#include "support/config_text.h"

namespace projector {
namespace {

// A small Mamba / hybrid model: h 1024, Mamba-2 with 32 heads of 64 (d_inner 2048), state 16,
// 8 groups; RMSNorm, vocabulary 50304.
std::string mamba_args(const std::string& extra) {
  return "model_type: mamba\nnum_layers: 10\nhidden_size: 1024\nnum_attention_heads: 16\n"
         "ffn_hidden_size: 4096\nnormalization: RMSNorm\nvocab_size: 50304\n"
         "mamba_state_dim: 16\nmamba_head_dim: 64\nmamba_num_groups: 8\n"
         "micro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 2048\nbf16: true\n"
         "hidden_dropout: 0.0\nattention_dropout: 0.0\n" +
         extra;
}

JobSpec load_text(const testing::TempDir& dir, const std::string& text) {
  return testing::load_config_text(dir, text);
}

std::string kinds(const JobSpec& job) {
  std::string out;
  for (const LayerSpec& l : job.model.layers) {
    switch (l.kind) {
      case LayerKind::kMamba:
        out += 'M';
        break;
      case LayerKind::kAttention:
        out += '*';
        break;
      case LayerKind::kFfn:
        out += l.is_moe ? 'E' : '-';
        break;
      case LayerKind::kTransformer:
        out += 'T';
        break;
      case LayerKind::kLinearAttention:
        out += 'G';
        break;
      case LayerKind::kLinearTransformer:
        out += 'L';
        break;
    }
  }
  return out;
}

// Megatron's pattern_from_ratios (MG12 hybrid_layer_allocation.py:74): 10 layers, 20 % attention:
// sections of 8/3 Mamba layers, an attention layer wherever the running remainder drops below
// one half: MMM*MM*MMM. A stated pattern is taken as is; Primus' HybridStack pairs every mixer
// with an MLP (32 layers, 25 %: 16 mixers, 4 attention, blocks *-M-M-M-).
TEST(Hybrid, LayerPatterns) {
  testing::TempDir dir;
  EXPECT_EQ(kinds(load_text(dir, mamba_args(""))), "MMMMMMMMMM");
  EXPECT_EQ(kinds(load_text(dir, mamba_args("hybrid_attention_ratio: 0.2\n"))), "MMM*MM*MMM");
  EXPECT_EQ(kinds(load_text(dir, mamba_args("hybrid_override_pattern: \"M-M*-M-M-\"\n"))),
            "M-M*-M-M-");
  std::string primus = mamba_args(
      "hybrid_attention_ratio: 0.25\nspec: ['primus.backends.megatron.core.models.hybrid."
      "hybrid_mamba_mla_layer_specs', 'hybrid_stack_spec']\n");
  primus.replace(primus.find("num_layers: 10"), 14, "num_layers: 32");
  std::string expected;
  for (int i = 0; i < 4; ++i) expected += "*-M-M-M-";
  EXPECT_EQ(kinds(load_text(dir, primus)), expected);
  // Megatron's own hybrid_stack_spec of the same name allocates by ratio (no MLP after mixers).
  std::string megatron = mamba_args(
      "hybrid_attention_ratio: 0.2\nspec: ['megatron.core.models.hybrid.hybrid_layer_specs', "
      "'hybrid_stack_spec']\n");
  EXPECT_EQ(kinds(load_text(dir, megatron)), "MMM*MM*MMM");
}

// The mixer's width is the layer spec's `expand` (no trainer reads mamba_expand): Primus'
// hybrid_stack_spec builds MambaMixer(expand=1) (PR5 hybrid_mamba_mla_layer_specs.py), every other
// spec keeps MambaMixer's default 2 (MG11 mamba_mixer.py). h 1024 and head_dim 64: 16 or 32 heads;
// mamba_num_heads fixes the heads whatever the spec.
TEST(Hybrid, MixerWidthComesFromTheSpec) {
  testing::TempDir dir;
  const std::string primus_spec =
      "spec: ['primus.backends.megatron.core.models.hybrid.hybrid_mamba_mla_layer_specs', "
      "'hybrid_stack_spec']\n";
  EXPECT_EQ(load_text(dir, mamba_args(primus_spec)).model.layers[0].mamba.num_heads, 16);
  EXPECT_EQ(
      load_text(dir, mamba_args(primus_spec + "mamba_expand: 2\n")).model.layers[0].mamba.num_heads,
      16);
  const std::string no_te =
      "spec: ['primus.backends.megatron.core.models.hybrid.hybrid_mamba_mla_layer_specs', "
      "'mamba_hybrid_stack_spec_no_te']\n";
  EXPECT_EQ(load_text(dir, mamba_args(no_te)).model.layers[0].mamba.num_heads, 32);
  EXPECT_EQ(load_text(dir, mamba_args("")).model.layers[0].mamba.num_heads, 32);
  EXPECT_EQ(load_text(dir, mamba_args(primus_spec + "mamba_num_heads: 24\n"))
                .model.layers[0]
                .mamba.num_heads,
            24);
}

// Parameters of one Mamba-2 layer (MG11 mamba_mixer.py:281-455), by hand: in_proj 1024 x
// (2 x 2048 + 2 x 8 x 16 + 32) = 1024 x 4384, conv over 2048 + 256 channels with kernel 4 and a
// bias, dt_bias / A_log / D per head, the gated norm (2048), out_proj 2048 x 1024, the input
// RMSNorm (1024). FLOPs: Megatron's mamba_layer_flops (MG13 training.py:885): 2 h x 4384 +
// 7 x 2048 x 16 + 2 x 2048 x h per token.
TEST(Hybrid, MambaLayerParamsAndFlops) {
  testing::TempDir dir;
  const JobSpec job = load_text(dir, mamba_args(""));
  const LayerSpec& l = job.model.layers[0];
  const std::int64_t expected = 1024 * 4384 + (2048 + 256) * 5 + 3 * 32 + 2048 + 2048 * 1024 + 1024;
  EXPECT_EQ(layer_params(job.model, l).total(), expected);
  const double flops = layer_forward_flops_per_token(job.model, l, 2048).total();
  EXPECT_DOUBLE_EQ(flops, 2.0 * 1024 * 4384 + 7.0 * 2048 * 16 + 2.0 * 2048 * 1024);
}

// The Mamba layer's saved tensors (one microbatch of 2048 tokens, bf16, TP 1): the norm input and
// output (2 x T x h x 2 B), zxBCdt (T x 4384 x 2 B), the fused kernel's ungated scan output, the
// gated output the mixer's RMSNorm keeps and out_proj's input (3 x T x 2048 x 2 B; MB1
// ssd_combined.py saves zxbcdt and out_x).
// Its ops, counted by hand for 32 heads of 64, 8 groups of state 16 and 16 chunks of 128 tokens:
// the conv reads and writes xBC (2 x T x (2048 + 2 x 8 x 16) x 2 B); the SSD's chunk products
// (chunk states 2 x 64 x 16 x 128 x 512, C B^T 2 x 128 x 128 x 16 x 128, intra-chunk output
// 2 x 128 x 64 x 128 x 512, inter-chunk output 2 x 128 x 64 x 16 x 512) = 1,409,286,144 FLOPs
// forward; the backward's gradients are twice that, and it adds the recomputed chunk states and
// C B^T and the decay gradient (2 x 128 x 128 x 64 x 512): 4,093,640,704 FLOPs in phase B, none in
// W.
TEST(Hybrid, MambaActivationsAndScan) {
  testing::TempDir dir;
  const JobSpec job = load_text(dir, mamba_args(""));
  const double T = 2048.0;
  const double saved = 2 * T * 1024 * 2 + T * 4384 * 2 + 3 * T * 2048 * 2;
  EXPECT_NEAR(layer_activation(job, job.model.layers[0]).total_bytes, saved, 1.0);
  const LayerWork lw = build_layer_work(job, 0);
  EXPECT_EQ(lw.label, "mamba_layer");
  bool conv = false, in_proj = false, pass = false;
  double ssd_f = 0.0, ssd_b = 0.0, ssd_w = 0.0;
  for (const Op& op : lw.ops) {
    if (op.name == "mamba.conv1d") {
      conv = true;
      EXPECT_EQ(op.kind, OpKind::kMemoryBound);
      EXPECT_DOUBLE_EQ(op.bytes, 2.0 * T * 2304 * 2);
      EXPECT_DOUBLE_EQ(op.bwd_bytes, 2.0 * op.bytes);
    }
    if (op.name == "mamba.ssd_state_pass" && op.phase == WorkPhase::kF) {
      pass = true;
      EXPECT_DOUBLE_EQ(op.bytes, T * 32 * 10 + 16.0 * 32 * 64 * 16 * 6);
    }
    if (op.name == "mamba.in_proj") {
      in_proj = true;
      EXPECT_EQ(op.gemm.n, 4384);
    }
    if (op.kind == OpKind::kGemm && op.gemm.ssd_chunk) {
      (op.phase == WorkPhase::kF ? ssd_f : op.phase == WorkPhase::kB ? ssd_b : ssd_w) += op.flops;
    }
    EXPECT_NE(op.name.rfind("attn.", 0), 0u) << op.name;  // no attention in a Mamba layer
  }
  EXPECT_TRUE(conv && pass && in_proj);
  EXPECT_DOUBLE_EQ(ssd_f, 1409286144.0);
  EXPECT_DOUBLE_EQ(ssd_b, 4093640704.0);
  EXPECT_DOUBLE_EQ(ssd_w, 0.0);
  // Mamba heads and groups divide over TP: 8 groups over TP 16 do not.
  EXPECT_THROW(load_text(dir, mamba_args("tensor_model_parallel_size: 16\n"
                                         "allow_tp_beyond_node: true\n")),
               InputError);
}

// Models that are not modelled are refused by name, never projected as a GPT.
TEST(Hybrid, UnmodelledModelTypesAreRefused) {
  testing::TempDir dir;
  auto refused = [&](const std::string& extra, const std::string& needle) {
    std::string text = mamba_args("");
    if (extra.starts_with("model_type:")) {
      text.replace(0, text.find('\n') + 1, extra.substr(0, extra.find('\n') + 1));
      text += extra.substr(extra.find('\n') + 1);
    } else {
      text += extra;
    }
    try {
      load_text(dir, text);
      ADD_FAILURE() << "accepted: " << extra;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is not supported"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("model_type: diffusion_model\n", "diffusion_model");  // a DiT other than Flux
  // GDN / KDA stacks other than Primus' HybridStack specs, Megatron's 'G' symbol and attention
  // variants other than gated_delta_net stay refused.
  refused("spec: [m, gdn_hybrid_stack_spec]\n", "GatedDeltaNet");
  refused("spec: [m, kda_hybrid_stack_spec]\n", "Kimi Delta Attention");
  refused("hybrid_override_pattern: \"MGMG\"\n", "GatedDeltaNet");
  refused("model_type: gpt\nexperimental_attention_variant: gdn2\n", "gdn2");
  refused("model_type: gpt\nexperimental_attention_variant: dsa\n", "dsa");
  refused("model_type: t5\n", "t5");  // DeepSeek-V4 and Kimi-K3 are modelled (their own tests)
}

// The bundled Primus subset: the Mamba and Zebra-Llama hybrid examples load (Flux:
// tests/frontend/flux_test.cpp).
TEST(Hybrid, PrimusExamples) {
  auto load = [](const std::string& rel) { return testing::load_bundled_primus_example(rel); };
  const JobSpec mamba = load("MI300X/mamba_370M-pretrain.yaml");
  EXPECT_EQ(mamba.model.num_layers(), 48);
  EXPECT_EQ(mamba.model.layers[0].kind, LayerKind::kMamba);
  // Mamba-370M (mamba_stack_spec, expand 2): 48 layers of in_proj 1024 x 4384, conv 2304 x 5,
  // 3 x 32, gated norm 2048, out_proj 2048 x 1024, LayerNorm 2 x 1024, and the tied 50304 x 1024
  // embedding: 368.4 M, the "370M" of its name.
  EXPECT_NEAR(
      model_params(mamba.model).total,
      48.0 * (1024 * 4384 + 2304 * 5 + 96 + 2048 + 2048 * 1024 + 2048) + 50304.0 * 1024 + 2048,
      1.0);
  const JobSpec zebra = load("MI300X/zebra_llama_1B-pretrain.yaml");
  EXPECT_EQ(zebra.model.layers[0].kind, LayerKind::kAttention);
  EXPECT_EQ(zebra.model.layers[0].attention.kind, AttentionKind::kMla);
  EXPECT_EQ(zebra.model.layers[2].kind, LayerKind::kMamba);
  // Zebra-Llama 1B by hand (h 2048, LayerNorm (language_model.yaml), MBS 8 x seq 8192 =
  // 65536 tokens, bf16, TP 1, no recompute). Mamba-2 with expand 1: d_inner 2048, 32 heads, state
  // 64, 8 groups, in_proj width 2 x 2048 + 2 x 8 x 64 + 32 = 5152. Parameters of a Mamba layer:
  // in_proj 2048 x 5152 + its LayerNorm 2 x 2048, conv (2048 + 1024) x (4 + 1), 3 x 32 per-head,
  // gated RMSNorm 2048, out_proj 2048 x 2048.
  const LayerSpec& m = zebra.model.layers[2];
  EXPECT_EQ(m.mamba.num_heads, 32);
  EXPECT_EQ(layer_params(zebra.model, m).total(),
            2048 * 5152 + 2 * 2048 + 3072 * 5 + 96 + 2048 + 2048 * 2048);
  // Saved bytes per token: Mamba 2 x 4096 (norm in / out) + 5152 x 2 + 3 x 4096 = 30784; MLP
  // 4096 + 4096 + 2 x 8192 x 2 + 8192 x 2 = 57344; MLA 4096 + 4096 + 2 x 1344 x 2 + 2 x 128 x 2 +
  // 32 x (2 x 64 + 64) x 2 + 32 x 64 x 2 + 32 x 4 (logsumexp) = 30592.
  const double T = 65536.0;
  EXPECT_NEAR(layer_activation(zebra, m).total_bytes, 30784.0 * T, 1.0);
  EXPECT_NEAR(layer_activation(zebra, zebra.model.layers[1]).total_bytes, 57344.0 * T, 1.0);
  EXPECT_NEAR(layer_activation(zebra, zebra.model.layers[0]).total_bytes, 30592.0 * T, 1.0);
  // 12 Mamba + 16 MLP + 4 MLA layers: 1,409,280 B per token, 86.0 GiB; the output adds the
  // final norm's input and the loss's input gradient (2 x 4096 per token). Primus' MambaModel
  // computes the loss with FLA's fused linear cross entropy (fused_ce_mode 1 by default): no
  // logits are kept, only the fp32 weight gradient it accumulates in the forward (128256 x 2048
  // x 4 bytes, once per microbatch).
  EXPECT_EQ(zebra.runtime.vocab_tiles, 32);
  EXPECT_TRUE(zebra.runtime.loss_grad_in_forward);
  const MemoryReport zr = project_memory(zebra);
  const double layers = (12 * 30784.0 + 16 * 57344.0 + 4 * 30592.0) * T;
  const double output = 2 * 4096.0 * T + 128256.0 * 2048 * 4;
  EXPECT_NEAR(zr.ranks[0].point[static_cast<int>(MemoryComponent::kActivations)], layers + output,
              1e6);
  EXPECT_LT(zr.peak_point_bytes, 192.0 * (1 << 30));
  // The GDN example (gdn_hybrid_stack_spec, pure: 16 GDN + 16 MLP sublayers) loads.
  const JobSpec gdn = load("MI300X/zebra_llama_1B_gdn-pretrain.yaml");
  EXPECT_EQ(gdn.model.layers[0].kind, LayerKind::kLinearAttention);
  EXPECT_EQ(gdn.model.layers[1].kind, LayerKind::kFfn);
}

// Primus' MambaModel loss (fla_runtime_patches.py): fused_ce_mode / PRIMUS_FUSED_CE (the variable
// wins), default 1 = FLA's fused linear cross entropy in fused_ce_chunks (default 32) token tiles
// with its gradients computed in the forward; 2 = a fused cross entropy over the whole logits;
// 0 = Megatron's loss. By hand for Zebra-Llama 1B (MBS 8 x seq 8192 = 65536 tokens, vocabulary
// 128256, h 2048, bf16): mode 0 keeps the fp32 softmax, 65536 x 128256 x 4 bytes; mode 1 keeps
// none and instead the input gradient (65536 x 2048 x 2) and the fp32 weight gradient
// (128256 x 2048 x 4); its forward runs the head's two gradient GEMMs (the same FLOPs as
// Megatron's backward: nothing is replayed) and holds one tile's logits, 65536 / 32 x 128256 x 2.
TEST(Hybrid, PrimusFusedLoss) {
  const std::string rel = "MI300X/zebra_llama_1B-pretrain.yaml";
  auto load = [&](std::vector<std::pair<std::string, std::string>> env,
                  std::vector<std::string> set = {}) {
    LoadRequest r = testing::bundled_request(
        std::string(PROJECTOR_TEST_DATA_DIR) + "/primus/examples/megatron/configs/" + rel,
        "mi300x");
    r.primus_path = std::string(PROJECTOR_TEST_DATA_DIR) + "/primus";
    r.env = fixed_environment(env);
    r.set_overrides = std::move(set);
    return load_job(r);
  };
  const JobSpec tiled = load({});
  const JobSpec plain = load({{"PRIMUS_FUSED_CE", "0"}});
  const JobSpec whole = load({}, {"fused_ce_mode=2"});
  const JobSpec sixteen = load({{"PRIMUS_FUSED_CE_CHUNKS", "16"}});
  const JobSpec eight = load({{"PRIMUS_FUSED_CE_CHUNKS", "16"}}, {"fused_ce_chunks=8"});
  EXPECT_EQ(plain.runtime.vocab_tiles, 1);
  EXPECT_FALSE(plain.runtime.cross_entropy_fusion);
  EXPECT_TRUE(whole.runtime.cross_entropy_fusion);
  EXPECT_EQ(whole.runtime.vocab_tiles, 1);
  EXPECT_EQ(sixteen.runtime.vocab_tiles, 16);  // the environment over the default
  EXPECT_EQ(eight.runtime.vocab_tiles, 8);     // --set beats the environment

  const double T = 65536.0, V = 128256.0, h = 2048.0;
  auto act = [](const JobSpec& j) {
    return project_memory(j).ranks[0].point[static_cast<int>(MemoryComponent::kActivations)];
  };
  EXPECT_NEAR(act(plain) - act(tiled), T * V * 4.0 - V * h * 4.0, 1e3);
  EXPECT_NEAR(act(whole) - act(tiled), T * V * 2.0 - V * h * 4.0, 1e3);

  // Work: the head's gradient GEMMs move into the forward, none is replayed, FLOPs unchanged.
  auto head = [](const JobSpec& j, bool forward) {
    double flops = 0.0;
    const Workload w = build_workload(j);
    for (const Op& op : w.ranks.back().chunks.back().blocks.back().ops) {
      if (op.name.rfind("output.logits", 0) != 0) continue;
      EXPECT_FALSE(op.recompute) << op.name;
      if ((op.phase == WorkPhase::kF) == forward) flops += op.flops;
    }
    return flops;
  };
  const double logits_flops = 2.0 * T * V * h;
  EXPECT_NEAR(head(tiled, true), 3.0 * logits_flops, 1e6);
  EXPECT_NEAR(head(tiled, false), 0.0, 1e6);
  EXPECT_NEAR(head(plain, true), logits_flops, 1e6);
  EXPECT_NEAR(head(plain, false), 2.0 * logits_flops, 1e6);
  EXPECT_NEAR(model_flops(tiled).hardware_flops, model_flops(plain).hardware_flops, 1e6);

  // Bad values name the key or the variable.
  try {
    load({}, {"fused_ce_mode=3"});
    ADD_FAILURE() << "fused_ce_mode 3 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "fused_ce_mode");
  }
  try {
    load({{"PRIMUS_FUSED_CE_CHUNKS", "many"}});
    ADD_FAILURE() << "PRIMUS_FUSED_CE_CHUNKS=many accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "environment PRIMUS_FUSED_CE_CHUNKS");
  }
  // A GPT model under Primus keeps Megatron's loss.
  const JobSpec gpt = testing::load_bundled_primus_example("MI300X/llama3.1_8B-BF16-pretrain.yaml");
  EXPECT_EQ(gpt.runtime.vocab_tiles, 1);
  EXPECT_FALSE(gpt.runtime.loss_grad_in_forward);
}

}  // namespace
}  // namespace projector
