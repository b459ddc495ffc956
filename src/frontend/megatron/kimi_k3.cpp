// Primus' Kimi-K3 text backbone (model_type kimi_k3; docs/kimi-k3.md): the GPT layers the shared
// reader builds become K3's interleave of Kimi Delta Attention and NoPE gated MLA, with stable
// latent MoE and attention residuals, from the keys Primus' K3 builder reads (PR14
// models/kimi_k3/kimi_k3_transformer_config.py, kimi_k3_block.py, kimi_k3_layer_specs.py).
#include <fmt/format.h>

#include <algorithm>

#include "frontend/megatron/adapter.h"
#include "projector/frontend/layer_pattern.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

constexpr const char* kWhy =
    "KimiK3TransformerConfig default (PR14 kimi_k3_transformer_config.py:160-255)";

// linear_attention_freq (kimi_k3_transformer_config.py:60-124): read as Megatron reads it (1 =
// KDA, 0 = full attention), required.
std::vector<int> kda_pattern(ArgReader& r, int num_layers) {
  const ConfigValue* v = r.get("linear_attention_freq");
  if (v == nullptr || v->is_null()) {
    r.fail("linear_attention_freq",
           "Kimi-K3 needs its per-layer KDA / full-attention pattern (Primus asserts it)");
  }
  return linear_layer_pattern(r, *v, num_layers);
}

// Settings Primus' K3 path raises for, or trains in a way this model does not price.
void refuse_unmodelled_k3_keys(ArgReader& r) {
  if (r.bool_quiet("multi_latent_attention", false)) {
    r.fail("multi_latent_attention",
           "Kimi-K3 builds its own attention; Primus' builder asserts the MLA switch is off");
  }
  if (!r.bool_or("kda_use_full_rank_gate", true, kWhy)) {
    r.fail("kda_use_full_rank_gate", "Primus' K3 KDA raises NotImplementedError without it");
  }
  if (r.int_or("kda_chunk_size", 64, kWhy) != 64) {
    r.fail("kda_chunk_size", "Primus' fla KDA adapter accepts only 64");
  }
  const std::string backend = to_lower(r.string_or("kda_backend", "eager", kWhy));
  if (backend != "fla" && backend != "flydsl") {
    r.fail("kda_backend", fmt::format("the '{}' KDA kernels (reference code) are not modelled; fla "
                                      "and flydsl are priced as the chunked delta rule",
                                      backend));
  }
  for (const char* key : {"mtp_num_layers", "num_nextn_predict_layers"}) {
    if (r.int_quiet(key, 0) > 0) {
      r.fail(key, "multi-token prediction on Kimi-K3 is not modelled");
    }
  }
}

// The full-attention layers: Megatron's MLA geometry, no rotary embedding (mla_use_nope: the 64
// positional channels are projected and attended, never rotated), the sigmoid output gate.
AttentionSpec k3_mla(ArgReader& r, const AttentionSpec& base) {
  AttentionSpec a = base;
  // KimiK3TransformerConfig inherits the MLA geometry fields (kimi_k3_base.yaml), read as
  // Megatron reads them.
  read_mla_geometry(r, a);
  a.qk_layernorm = false;  // the q / kv latent norms are MLA's own
  a.output_gate = r.bool_or("mla_use_output_gate", true, kWhy);
  return a;
}

}  // namespace

bool is_kimi_k3(ArgReader& r) {
  return to_lower(r.string_or("model_type", "gpt", "")) == "kimi_k3";
}

void apply_kimi_k3(ArgReader& r, ModelSpec& m, LinearAttentionSpec kda) {
  refuse_unmodelled_k3_keys(r);
  // KDA (T/kimi_delta_attention.py:365-450): separate q / k / v projections with their own short
  // convs, the low-rank decay f_a / f_b, beta, the full-rank output gate g_proj, the gated norm.
  kda.kind = LinearAttentionKind::kKda;
  kda.full_rank_gate = true;
  kda.gate_norm = false;
  kda.chunk_size = 64;
  const std::vector<int> pattern = kda_pattern(r, m.num_layers());
  const bool any_kda = std::find(pattern.begin(), pattern.end(), 1) != pattern.end();
  if (any_kda &&
      (kda.num_value_heads != kda.num_key_heads || kda.key_head_dim != kda.value_head_dim)) {
    r.fail("linear_num_value_heads", "Kimi-K3's KDA has one value head per key head and K = V");
  }
  const AttentionSpec mla = m.layers.empty() ? AttentionSpec{} : k3_mla(r, m.layers[0].attention);
  // Stable latent MoE (T/moe/k3_stable_latent_moe.py): tokens go h -> routed_expert_hidden_size
  // before the dispatch; the combined sum is normalised (latent_moe_use_norm) and projected back.
  const std::int64_t latent = r.int_quiet("routed_expert_hidden_size", 0);
  if (latent < 0 || latent > m.hidden_size) {
    r.fail("routed_expert_hidden_size", "must be between 0 and hidden_size");
  }
  const bool latent_norm = latent > 0 && r.bool_or("latent_moe_use_norm", false, kWhy);
  for (int i = 0; i < m.num_layers(); ++i) {
    LayerSpec& layer = m.layers[static_cast<std::size_t>(i)];
    if (pattern[static_cast<std::size_t>(i)] == 1) {
      layer.kind = LayerKind::kLinearTransformer;
      layer.linear = kda;
    } else {
      layer.attention = mla;
    }
    if (layer.is_moe) {
      layer.moe.latent_size = latent;
      layer.moe.latent_norm = latent_norm;
    }
    // K3's specs put SituActivation in the GLU slot of the dense MLP, the shared and the routed
    // experts (PR14 situ_activation.py; transformer_engine_spec_provider.py:475-530).
    layer.mlp.gated = true;
    layer.mlp.activation = ActivationKind::kSitu;
  }
  // NoPE everywhere: K3 builds no positional module (kimi_k3_model.py:96-131).
  m.position_embedding = PositionEmbeddingKind::kNone;
  // None / 0 disables attention residuals (kimi_k3_transformer_config.py:236-237).
  m.attn_res_block_size = static_cast<int>(r.int_or("attn_res_block_size", 0, kWhy));
  if (m.attn_res_block_size < 0 || m.attn_res_block_size > kMaxLayers) {
    r.fail("attn_res_block_size", "must be between 0 and the layer count");
  }
}

// Primus raises for K3 at PP > 1 as soon as either schedule patch is on, whatever schedule then
// runs (kimi_k3_pp_shape_patches.py:188-199): a key check. Which schedules can carry the widened
// stage transfer is a layout rule (LayoutRule::kScheduleWidenedTransfer, job/rules.h).
void check_kimi_k3_parallel(ArgReader& r, const ModelSpec& model, const JobDraft& d) {
  if (model.attn_res_block_size <= 0 || d.pp.value_or(1) <= 1) return;
  for (const char* key : {"patch_zero_bubble", "patch_primus_pipeline"}) {
    if (r.bool_quiet(key, false)) {
      r.fail(key,
             "Primus refuses this schedule for Kimi-K3 (its attention-residual checkpoints "
             "widen the stage transfer only for 1F1B and interleaved 1F1B)");
    }
  }
}

}  // namespace projector::frontend_detail
