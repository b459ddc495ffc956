#include "projector/model/accounting.h"
#include "projector/model/family.h"
#include "projector/model/recsys_accounting.h"

namespace projector {
namespace {

std::int64_t norm_params(const ModelSpec& model, std::int64_t width) {
  return model.norm == NormKind::kLayerNorm ? 2 * width : width;  // LayerNorm has a bias
}

std::int64_t mlp_params(std::int64_t h, const MlpSpec& mlp, std::int64_t ffn) {
  if (ffn <= 0) return 0;
  const std::int64_t up = mlp.gated ? 2 * ffn : ffn;
  std::int64_t p = h * up + ffn * h;
  if (mlp.add_bias) p += up + h;
  return p;
}

// A Mamba-2 mixer (MG11 mamba_mixer.py:281-455): in_proj, the depthwise conv over [x, B, C]
// with its bias, dt_bias, A_log and D per head, the gated RMSNorm over d_inner, out_proj. All of
// it is sharded over TP (column-parallel in_proj, row-parallel out_proj, per-head parameters).
std::int64_t mamba_mixer_params(std::int64_t h, const MambaSpec& m) {
  const std::int64_t conv_channels =
      m.d_inner() + 2 * static_cast<std::int64_t>(m.num_groups) * m.state_dim;
  return h * m.in_proj_width() + conv_channels * (m.conv_kernel + 1) + 3 * m.num_heads +
         m.d_inner() + m.d_inner() * h;
}

}  // namespace

// GDN (MG16 common.py:202-286): in_proj h x in_proj_width (bias off, the
// GatedDeltaNet default), the depthwise conv over [q, k, v] without bias (conv_bias False),
// dt_bias and A_log per value head (:246-261), out_norm over one value head, shared by all heads
// (:263-267), out_proj v_dim x h. KDA (Primus PR8 kimi_delta_attention.py:300-448): the same
// in_proj / conv / out_norm / out_proj, plus f_b_proj (value_head_dim -> value heads x d_k, no
// bias), A_log per value head, dt_bias per value head x d_k, g_b_proj (value_head_dim -> v_dim,
// with bias) and, in the TE spec, a gate_norm over h.
std::int64_t linear_attention_params(std::int64_t h, const LinearAttentionSpec& s) {
  if (s.short_conv()) {
    // LFM2 (PR10 attention.py:117-158): in_proj w x 3w, the depthwise conv w x L_cache, out_proj
    // w x w; conv_bias adds a bias to each of the three. No norm.
    const std::int64_t w = s.short_conv_width;
    return 3 * w * h + w * s.conv_kernel + w * h + (s.conv_bias ? 3 * w + w + h : 0);
  }
  const std::int64_t conv = s.conv_kernel > 0 ? s.conv_dim() * s.conv_kernel : 0;
  std::int64_t p = h * s.in_proj_width() + conv + s.value_head_dim + s.v_dim() * h;
  if (s.kind == LinearAttentionKind::kGdn) return p + 2 * s.num_value_heads;
  const std::int64_t gate_dim = static_cast<std::int64_t>(s.num_value_heads) * s.key_head_dim;
  p += s.value_head_dim * gate_dim + s.num_value_heads + gate_dim;  // f_b, A_log, dt_bias
  // g_b with its bias; Kimi-K3's full-rank g_proj is part of in_proj_width.
  if (!s.full_rank_gate) p += s.value_head_dim * s.v_dim() + s.v_dim();
  if (s.gate_norm) p += h;
  return p;
}

// PR11 hyper_connection.py:294-298 (HyperMixer: fn, scale[3], base) and :439-441 (HyperHead).
std::int64_t hyper_mixer_params(const ModelSpec& model) {
  const std::int64_t k = model.hc_mult;
  if (k <= 1) return 0;
  return k * model.hidden_size * (2 + k) * k + 3 + (2 + k) * k;
}

std::int64_t hyper_head_params(const ModelSpec& model) {
  const std::int64_t k = model.hc_mult;
  if (k <= 1) return 0;
  return k * model.hidden_size * k + 1 + k;
}

// PR11 deepseek_v4_attention.py:580-665 (q down / norm / up, the single-latent wkv and its norm,
// wo_a / wo_b, the per-head sink), compressor.py (wkv_gate h -> 2 x coff x head_dim fused, ape
// (coff x ratio) x head_dim, the pool norm) and indexer.py (w_dq_w h -> index_head_dim + heads,
// w_iuq index_head_dim -> heads x index_head_dim, its own overlapping compressor). No biases.
CompressedAttentionParams compressed_attention_params(std::int64_t h, const AttentionSpec& a) {
  const CompressedAttentionSpec& c = a.compressed;
  const std::int64_t d = a.head_dim;
  const std::int64_t qd = static_cast<std::int64_t>(a.num_heads) * d;
  CompressedAttentionParams p;
  p.attention = h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * qd + h * d + d;
  p.attention += c.o_lora_rank > 0 ? qd * c.o_lora_rank +
                                         static_cast<std::int64_t>(c.o_groups) * c.o_lora_rank * h
                                   : qd * h;
  if (c.attn_sink) p.attention += a.num_heads;
  if (c.compress_ratio > 0) {
    const std::int64_t coff = c.overlap();
    p.compressor = h * 2 * coff * d + coff * c.compress_ratio * d + d;
  }
  if (c.csa()) {
    const std::int64_t ihd = c.index_head_dim;
    const std::int64_t ih = c.index_n_heads;
    p.indexer = h * (ihd + ih) + ihd * ih * ihd;
    p.indexer += h * 2 * 2 * ihd + 2 * c.compress_ratio * ihd + ihd;  // its compressor (coff 2)
  }
  return p;
}

namespace {

void attention_params(const ModelSpec& model, const AttentionSpec& a, LayerParams& p) {
  const std::int64_t h = model.hidden_size;
  p.attention_norms = norm_params(model, h);
  if (a.kind == AttentionKind::kCompressed) {
    p.attention += compressed_attention_params(h, a).total();
    return;
  }
  if (a.kind == AttentionKind::kMla) {
    const std::int64_t heads = a.num_heads;
    const std::int64_t qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    if (a.q_lora_rank > 0) {
      p.attention += h * a.q_lora_rank + static_cast<std::int64_t>(a.q_lora_rank) * heads * qk;
      p.attention_norms += norm_params(model, a.q_lora_rank);
    } else {
      p.attention += h * heads * qk;
    }
    // Down-projection to the latent plus the shared rope key, then up-projection to k_nope and v.
    p.attention += h * (a.kv_lora_rank + a.qk_pos_emb_head_dim);
    p.attention_norms += norm_params(model, a.kv_lora_rank);
    p.attention +=
        static_cast<std::int64_t>(a.kv_lora_rank) * heads * (a.qk_head_dim + a.v_head_dim);
    p.attention += heads * a.v_head_dim * h;
    if (a.output_gate) p.attention += h * heads * a.v_head_dim;  // Kimi-K3's linear_o_gate
    if (a.add_bias_linear) p.attention += h;
  } else {
    const std::int64_t q_width = static_cast<std::int64_t>(a.num_heads) * a.head_dim;
    const std::int64_t kv_width = static_cast<std::int64_t>(a.num_query_groups) * a.head_dim;
    p.attention += h * (q_width + 2 * kv_width) + q_width * h;
    if (a.output_gate) p.attention += h * q_width;  // the gate rows of linear_qkv
    if (a.add_qkv_bias) p.attention += q_width + 2 * kv_width;
    if (a.add_bias_linear) p.attention += h;
    if (a.qk_layernorm) p.attention_norms += 2 * norm_params(model, a.head_dim);
  }
}

}  // namespace

namespace {

// A Flux block (PR9 layer_spec.py:85-470): attention (qkv and proj with biases), RMSNorm q / k
// norms over one head, the MLP, no affine block norms (AdaLN's LayerNorms have no weights,
// PR9 normalization.py:990, 1009), the adaLN modulation Linear(h -> chunks x h, bias); all of it
// once per stream (double blocks: image and text weights, PR9 layer_spec.py:122-171).
LayerParams dit_block_params(const ModelSpec& model, const LayerSpec& layer) {
  const std::int64_t h = model.hidden_size;
  const std::int64_t streams = layer.dit.streams;
  LayerParams p;
  ModelSpec rms = model;
  rms.norm =
      NormKind::kRmsNorm;  // the q / k norms are RMSNorms (PR9 layer_spec.py:427-428, 465-468)
  attention_params(rms, layer.attention, p);
  p.attention_norms = layer.attention.qk_layernorm ? 2 * layer.attention.head_dim : 0;
  p.mlp = mlp_params(h, layer.mlp, layer.mlp.ffn_hidden_size);
  const std::int64_t chunks = layer.dit.adaln_chunks;
  p.modulation = h * chunks * h + chunks * h;
  p.attention *= streams;
  p.attention_norms *= streams;
  p.mlp *= streams;
  p.modulation *= streams;
  return p;
}

// MLPEmbedder (in -> h, SiLU, h -> h, both with bias; PR9 model.py:182-199).
std::int64_t mlp_embedder_params(std::int64_t in, std::int64_t h) {
  return in * h + h + h * h + h;
}

}  // namespace

std::int64_t diffusion_embedder_params(const ModelSpec& model) {
  const DiffusionSpec& d = model.diffusion;
  if (!d.enabled()) return 0;
  const std::int64_t h = model.hidden_size;
  std::int64_t p = h;          // img_in's bias (its weight is the "word embedding")
  p += d.context_dim * h + h;  // txt_in
  p += mlp_embedder_params(d.model_channels, h);                        // time_in
  p += mlp_embedder_params(d.vec_in_dim, h);                            // vector_in
  if (d.guidance_embed) p += mlp_embedder_params(d.model_channels, h);  // guidance_in
  return p;
}

std::int64_t diffusion_head_params(const ModelSpec& model) {
  if (!model.diffusion.enabled()) return 0;
  const std::int64_t h = model.hidden_size;
  // norm_out: AdaLNContinuous, Linear(h -> 2h, bias), no affine norm (PR9 normalization.py:1179);
  // proj_out's bias (PR9 model.py:216-220).
  return h * 2 * h + 2 * h + model.vocab_size;
}

LayerParams layer_params(const ModelSpec& model, const LayerSpec& layer) {
  if (layer.dit.streams > 0) return dit_block_params(model, layer);
  const std::int64_t h = model.hidden_size;
  LayerParams p;
  if (layer.has_attention()) attention_params(model, layer.attention, p);
  // One mixer per sublayer (PR11 deepseek_v4_block.py attn_hc / ffn_hc).
  p.hyper =
      hyper_mixer_params(model) * ((layer.has_attention() ? 1 : 0) + (layer.has_ffn() ? 1 : 0));
  if (layer.has_mamba()) {
    p.attention_norms = norm_params(model, h);
    p.attention = mamba_mixer_params(h, layer.mamba);
  }
  if (layer.has_linear_attention()) {
    // Primus' LFM2 conv layer has no input norm (PR10 gpt_layer_specs.py:222-237: the default
    // IdentityOp, and in_proj is a plain TE linear).
    p.attention_norms = layer.linear.short_conv() ? 0 : norm_params(model, h);
    p.attention = linear_attention_params(h, layer.linear);
  }
  if (!layer.has_ffn()) return p;
  p.mlp_norm = norm_params(model, h);
  if (model.attn_res_block_size > 0) {
    // Attention-residual mixers (Kimi-K3 attention_residual.py): a norm weight and a scoring row
    // of h each, one before each sublayer. Layer 0 has no pre-attention mixer; the final one
    // (before the final norm) stands in for it, so the count per layer is exact in total.
    p.attention_norms += 2 * h;
    p.mlp_norm += 2 * h;
  }
  if (layer.is_moe) {
    const MoeSpec& m = layer.moe;
    // Replicated MoE weights: the router, the latent projections (MG8 moe_layer.py:266-300,
    // parallel_mode duplicated) and the shared-expert gate (shared_experts.py:136-143).
    const std::int64_t width = m.latent_size > 0 ? m.latent_size : h;
    p.router = h * m.num_experts;
    if (m.latent_size > 0) p.router += 2 * h * m.latent_size + (layer.mlp.add_bias ? width + h : 0);
    if (m.latent_norm) p.router += m.latent_size;
    if (m.shared_expert_gate && m.shared_expert_ffn_hidden_size > 0) p.router += h;
    p.expert_each = mlp_params(width, layer.mlp, m.expert_ffn_hidden_size);
    p.experts = p.expert_each * m.num_experts;
    p.mlp = mlp_params(h, layer.mlp, m.shared_expert_ffn_hidden_size);
  } else {
    p.mlp = mlp_params(h, layer.mlp, layer.mlp.ffn_hidden_size);
  }
  return p;
}

std::int64_t mtp_module_params(const ModelSpec& model) {
  if (model.layers.empty()) return 0;
  const std::int64_t h = model.hidden_size;
  const std::int64_t eh_proj = 2 * h * h;
  const std::int64_t norms = 3 * norm_params(model, h);  // enorm, hnorm, final norm
  // With hyper-connections each MTP depth collapses its streams with its own HyperHead (PR11
  // deepseek_v4_mtp_layer.py:94-111, mtp_use_separate_hc_head).
  return eh_proj + norms + layer_params(model, model.layers.back()).total() +
         hyper_head_params(model);
}

ModelParams model_params(const ModelSpec& model, std::int64_t padded_vocab) {
  require_modelled(model, ProjectionStage::kAccounting);
  ModelParams p;
  if (model.family == ModelFamily::kRecommendation) {
    // Tables as the embedding, the dense part as the "decoder" (model/recsys_accounting.h).
    const RecsysParams r = recsys_params(model.recommendation);
    p.embedding = r.embedding;
    p.decoder = r.dense();
    p.total = p.active = r.total();
    return p;
  }
  const std::int64_t h = model.hidden_size;
  p.embedding = padded_vocab * h;
  if (model.position_embedding == PositionEmbeddingKind::kLearnedAbsolute) {
    p.embedding += model.max_position_embeddings * h;
  }
  p.output_layer = model.tied_embeddings ? 0 : padded_vocab * h;
  // The trunk's HyperHead sits beside the final norm on the last stage.
  p.final_norm = norm_params(model, h) + hyper_head_params(model);
  if (model.diffusion.enabled()) {
    p.embedding += diffusion_embedder_params(model);
    p.output_layer += diffusion_head_params(model);
    p.final_norm = 0;  // norm_out's LayerNorm has no weights
  }
  std::int64_t decoder_active = 0;
  for (const LayerSpec& layer : model.layers) {
    const LayerParams lp = layer_params(model, layer);
    p.decoder += lp.total();
    if (layer.dit.streams > 0) {
      // A token runs through one stream's weights; the modulation runs once per sample.
      decoder_active += (lp.total() - lp.modulation) / layer.dit.streams;
      continue;
    }
    decoder_active += lp.active(layer.is_moe ? layer.moe.topk : 0);
  }
  p.mtp = model.mtp_num_layers * mtp_module_params(model);
  p.total = p.embedding + p.output_layer + p.final_norm + p.decoder + p.mtp;
  p.active = p.embedding + p.output_layer + p.final_norm + decoder_active;
  if (model.mtp_num_layers > 0 && !model.layers.empty()) {
    const LayerSpec& last = model.layers.back();
    const std::int64_t mtp_inactive =
        last.is_moe ? layer_params(model, last).expert_each * (last.moe.num_experts - last.moe.topk)
                    : 0;
    p.active += model.mtp_num_layers * (mtp_module_params(model) - mtp_inactive);
  }
  return p;
}

ModelParams model_params(const ModelSpec& model) {
  return model_params(model, padded_vocab_size(model, 1));
}

OptimizerBytes optimizer_bytes_per_param(const RuntimeSpec& rt) {
  OptimizerBytes b;
  const PrecisionSpec& p = rt.precision;
  // fp32 weights are their own master copy; an optimizer without master weights (optax in
  // MaxText) updates the stored weights in their own dtype.
  const Dtype stored = p.stored_weights_dtype();
  b.master_bytes = stored == Dtype::kFp32 || !rt.master_weights ? 0.0 : 4.0;
  switch (rt.optimizer) {
    case OptimizerKind::kAdam:
      b.state_bytes = bytes_per_element(rt.exp_avg_dtype) + bytes_per_element(rt.exp_avg_sq_dtype);
      break;
    case OptimizerKind::kSgd:
    case OptimizerKind::kMuon:
      b.state_bytes = 4.0;
      break;
  }
  const double weight_bytes = p.fp8_param ? 1.0 : bytes_per_element(stored);
  // fp32 weights are their own master copy: read and written once.
  const double weights_rw =
      b.master_bytes > 0.0 ? 2.0 * b.master_bytes + weight_bytes : 2.0 * weight_bytes;
  b.step_traffic_bytes = bytes_per_element(rt.main_grads_dtype) + weights_rw + 2.0 * b.state_bytes;
  return b;
}

}  // namespace projector
