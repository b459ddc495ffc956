// Per-stage, per-rank parameter counts: layer_params() split by Megatron-Core's TP/EP/ETP rules.
#include <algorithm>

#include "projector/model/accounting.h"

namespace projector {

LayerTpReplicated layer_tp_replicated(const ModelSpec& model, const LayerSpec& layer) {
  const std::int64_t h = model.hidden_size;
  const AttentionSpec& a = layer.attention;
  LayerTpReplicated r;
  if (layer.has_linear_attention() && layer.linear.short_conv()) {
    // Primus builds LFM2's in_proj / out_proj with parallel_mode None and a whole conv (PR10
    // attention.py:117-158): every TP rank holds the whole mixer.
    r.attention += linear_attention_params(h, layer.linear);
  } else if (layer.has_linear_attention()) {
    // The output norm's weight spans one value head and every rank holds it (MG
    // gated_delta_net/common.py:263-267); so does KDA's gate_norm over h.
    r.attention += layer.linear.value_head_dim + (layer.linear.gate_norm ? h : 0);
  }
  if (!layer.has_attention()) {
    // A Mamba mixer is sharded over TP whole; an MLP-only layer keeps its fc2 bias.
    if (layer.has_ffn() && layer.mlp.add_bias && !layer.is_moe && layer.mlp.ffn_hidden_size > 0) {
      r.mlp += h;
    }
    if (layer.has_ffn() && layer.is_moe && layer.mlp.add_bias &&
        layer.moe.shared_expert_ffn_hidden_size > 0) {
      r.mlp += h;
    }
    return r;
  }
  if (a.kind == AttentionKind::kMla) {
    // linear_q_down_proj (h x q_lora) and linear_kv_down_proj (h x (kv_lora + rope)) are built
    // with parallel_mode "duplicated": every TP rank holds them whole.
    if (a.q_lora_rank > 0) r.attention += h * a.q_lora_rank;
    r.attention += h * (a.kv_lora_rank + a.qk_pos_emb_head_dim);
  }
  if (a.add_bias_linear) r.attention += h;  // row-parallel output bias
  const std::int64_t ffn =
      layer.is_moe ? layer.moe.shared_expert_ffn_hidden_size : layer.mlp.ffn_hidden_size;
  if (layer.has_ffn() && layer.mlp.add_bias && ffn > 0) r.mlp += h;  // fc2 bias (row-parallel)
  return r;
}

bool same_layer_shape(const LayerSpec& a, const LayerSpec& b) {
  if (a.kind != b.kind) return false;
  if (a.dit.streams != b.dit.streams || a.dit.adaln_chunks != b.dit.adaln_chunks) return false;
  const MambaSpec& ma = a.mamba;
  const MambaSpec& mb = b.mamba;
  if (a.has_mamba() && (ma.num_heads != mb.num_heads || ma.head_dim != mb.head_dim ||
                        ma.state_dim != mb.state_dim || ma.num_groups != mb.num_groups ||
                        ma.conv_kernel != mb.conv_kernel || ma.chunk_size != mb.chunk_size)) {
    return false;
  }
  const LinearAttentionSpec& la = a.linear;
  const LinearAttentionSpec& lb = b.linear;
  if (a.has_linear_attention() &&
      (la.kind != lb.kind || la.num_key_heads != lb.num_key_heads ||
       la.num_value_heads != lb.num_value_heads || la.key_head_dim != lb.key_head_dim ||
       la.value_head_dim != lb.value_head_dim || la.conv_kernel != lb.conv_kernel ||
       la.chunk_size != lb.chunk_size || la.gate_norm != lb.gate_norm ||
       la.full_rank_gate != lb.full_rank_gate || la.short_conv_width != lb.short_conv_width ||
       la.conv_bias != lb.conv_bias)) {
    return false;
  }
  const AttentionSpec& x = a.attention;
  const AttentionSpec& y = b.attention;
  const bool attention_same =
      x.kind == y.kind && x.num_heads == y.num_heads && x.num_query_groups == y.num_query_groups &&
      x.head_dim == y.head_dim && x.q_lora_rank == y.q_lora_rank &&
      x.kv_lora_rank == y.kv_lora_rank && x.qk_head_dim == y.qk_head_dim &&
      x.qk_pos_emb_head_dim == y.qk_pos_emb_head_dim && x.v_head_dim == y.v_head_dim &&
      x.qk_layernorm == y.qk_layernorm && x.add_qkv_bias == y.add_qkv_bias &&
      x.add_bias_linear == y.add_bias_linear && x.sliding_window == y.sliding_window &&
      x.chunk_window == y.chunk_window && x.causal == y.causal && x.output_gate == y.output_gate &&
      x.compressed == y.compressed;
  const bool mlp_same = a.mlp.ffn_hidden_size == b.mlp.ffn_hidden_size &&
                        a.mlp.activation == b.mlp.activation && a.mlp.gated == b.mlp.gated &&
                        a.mlp.add_bias == b.mlp.add_bias;
  const bool moe_same =
      a.is_moe == b.is_moe &&
      (!a.is_moe ||
       (a.moe.num_experts == b.moe.num_experts && a.moe.topk == b.moe.topk &&
        a.moe.expert_ffn_hidden_size == b.moe.expert_ffn_hidden_size &&
        a.moe.shared_expert_ffn_hidden_size == b.moe.shared_expert_ffn_hidden_size &&
        a.moe.capacity_factor == b.moe.capacity_factor && a.moe.router_bias == b.moe.router_bias &&
        a.moe.grouped_gemm == b.moe.grouped_gemm && a.moe.latent_size == b.moe.latent_size &&
        a.moe.latent_norm == b.moe.latent_norm &&
        a.moe.shared_expert_gate == b.moe.shared_expert_gate &&
        a.moe.hash_routing == b.moe.hash_routing));
  return attention_same && mlp_same && moe_same;
}

namespace {

// The K and V projections a rank holds beyond KV / TP of them when the KV heads are padded over
// TP (ParallelSpec::kv_heads_padded): ceil(KV / TP) heads each (and their biases); 0 otherwise.
double padded_kv_params(const LayerSpec& layer, const ParallelSpec& parallel, std::int64_t h) {
  const AttentionSpec& a = layer.attention;
  if (!layer.has_attention() || a.kind != AttentionKind::kStandard) return 0.0;
  const double tp = std::max(1, parallel.tp);
  const double extra = parallel.kv_heads_per_rank(a.num_query_groups) - a.num_query_groups / tp;
  if (extra <= 0.0) return 0.0;
  const double per_head = 2.0 * a.head_dim * (static_cast<double>(h) + (a.add_qkv_bias ? 1 : 0));
  return extra * per_head;
}

}  // namespace

StageParams stage_params(const ModelSpec& model, const ParallelSpec& parallel,
                         const VirtualStage& stage, bool rank_has_embedding,
                         const PrecisionSpec* precision) {
  const double tp = std::max(1, parallel.tp);
  const int ep = std::max(1, parallel.ep);
  const double etp = std::max(1, parallel.etp);
  const std::int64_t h = model.hidden_size;
  StageParams s;

  const LayerSpec* cached = nullptr;  // runs of identical layers reuse one count
  LayerParams lp;
  LayerTpReplicated rep;
  auto add_layer = [&](const LayerSpec& layer, bool unquantized) {
    if (cached == nullptr || !same_layer_shape(*cached, layer)) {
      lp = layer_params(model, layer);
      rep = layer_tp_replicated(model, layer);
      cached = &layer;
    }
    const double gemm = static_cast<double>(lp.attention - rep.attention) / tp +
                        static_cast<double>(rep.attention) + padded_kv_params(layer, parallel, h) +
                        static_cast<double>(lp.mlp - rep.mlp) / tp + static_cast<double>(rep.mlp);
    const double dense = gemm + static_cast<double>(lp.attention_norms + lp.mlp_norm + lp.router +
                                                    lp.modulation + lp.hyper);
    double expert = 0.0;
    if (layer.is_moe && layer.moe.num_experts > 0) {
      const int local_experts = (layer.moe.num_experts + ep - 1) / ep;  // most loaded EP rank
      expert = static_cast<double>(lp.expert_each) * local_experts / etp;
    }
    s.dense_params += dense;
    s.dense_gemm_params += gemm;
    s.expert_params += expert;
    if (unquantized) {
      s.bf16_gemm_params += gemm;
      s.bf16_expert_params += expert;
    }
    s.largest_unit_params = std::max(s.largest_unit_params, dense + expert);
    return dense + expert;
  };

  const int first = std::max(0, stage.first_layer);
  const int last = std::min(model.num_layers(), stage.first_layer + stage.num_layers);
  const int layers = model.num_layers();
  for (int i = first; i < last; ++i) {
    const bool unquantized = precision != nullptr && precision->quantized_gemms() &&
                             !precision->layer_quantized(i, layers);
    add_layer(model.layers[static_cast<std::size_t>(i)], unquantized);
  }
  s.decoder_layers = std::max(0, last - first);

  const std::int64_t vp = padded_vocab_size(model, parallel.tp);
  const double word_embedding = static_cast<double>(vp) * static_cast<double>(h) / tp;
  const double position_embedding =
      model.position_embedding == PositionEmbeddingKind::kLearnedAbsolute
          ? static_cast<double>(model.max_position_embeddings) * static_cast<double>(h)
          : 0.0;
  bool holds_word_embedding = rank_has_embedding;
  if (stage.has_embedding) {
    // positions (and a diffusion model's conditioning embedders, TP 1 only) replicated over TP
    const double emb =
        word_embedding + position_embedding + static_cast<double>(diffusion_embedder_params(model));
    s.dense_params += emb;
    s.largest_unit_params = std::max(s.largest_unit_params, emb);
    holds_word_embedding = true;
  }
  if (stage.has_output && !model.layers.empty()) {
    // The final norm and, with hyper-connections, the trunk's HyperHead.
    const double final_norm = static_cast<double>(layer_params(model, model.layers[0]).mlp_norm +
                                                  hyper_head_params(model));
    s.dense_params += final_norm;
    // Untied: its own output layer. Tied: the last stage keeps a copy of the word embedding
    // unless the same rank already holds it (PP = 1).
    if (!model.tied_embeddings || !holds_word_embedding) {
      const double head = word_embedding + static_cast<double>(diffusion_head_params(model));
      s.dense_params += head;
      s.largest_unit_params = std::max(s.largest_unit_params, head);
      holds_word_embedding = holds_word_embedding || model.tied_embeddings;
    }
  }
  if (stage.mtp_layers > 0 && !model.layers.empty()) {
    // MTP module: eh projection (2h x h, column-parallel), its norms (replicated), one decoder
    // layer shaped like the last one. It embeds the shifted tokens with the shared word
    // embedding, so a stage without it holds a copy.
    const LayerSpec& shape = model.layers.back();
    const std::int64_t layer_total = layer_params(model, shape).total();
    const std::int64_t eh_proj = 2 * h * h;
    const std::int64_t norms = mtp_module_params(model) - layer_total - eh_proj;
    for (int k = 0; k < stage.mtp_layers; ++k) {
      const double unit = add_layer(shape, false);  // MTP layers follow the recipe
      s.dense_params += static_cast<double>(eh_proj) / tp + static_cast<double>(norms);
      s.dense_gemm_params += static_cast<double>(eh_proj) / tp;
      s.largest_unit_params = std::max(s.largest_unit_params, unit);
    }
    if (!holds_word_embedding) s.dense_params += word_embedding;
  }
  return s;
}

}  // namespace projector
