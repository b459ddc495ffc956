// FLOP accounting (Megatron convention: GEMMs only, 2*m*n*k each; backward = 2 x forward).
#include <algorithm>
#include <cmath>
#include <string>

#include "projector/model/accounting.h"
#include "projector/model/family.h"
#include "projector/model/recompute_policy.h"
#include "projector/model/recsys_accounting.h"

namespace projector {
namespace {

// Keys one query attends to, averaged over the sequence.
double keys_per_query(const AttentionSpec& a, std::int64_t seq_len, const FlopOptions& options) {
  const double s = static_cast<double>(seq_len);
  const bool halve = options.causal_attention_half && a.causal;
  if (a.chunk_window > 0 && a.chunk_window < seq_len) {
    // Chunked attention: a query sees only its own chunk (causally, half of it on average).
    const double c = a.chunk_window;
    return halve ? c / 2.0 : c;
  }
  if (a.sliding_window > 0 && a.sliding_window < seq_len) {
    const double w = a.sliding_window;
    // Causal window: query i sees min(i + 1, w) keys, about w - w^2 / (2 s) on average.
    return halve ? w - w * w / (2.0 * s) : w;
  }
  return halve ? s / 2.0 : s;
}

double mlp_forward_flops(std::int64_t h, const MlpSpec& mlp, std::int64_t ffn) {
  if (ffn <= 0) return 0.0;
  const double up = mlp.gated ? 2.0 * ffn : static_cast<double>(ffn);  // SwiGLU: gate + up GEMMs
  return 2.0 * h * up + 2.0 * ffn * h;
}

// Megatron's count for a Mamba layer (MG13 training.py:885-904 mamba_layer_flops): in_proj and
// out_proj GEMMs plus 7 x d_inner x state FLOPs per token for the scan.
double mamba_forward_flops(double h, const MambaSpec& m) {
  const double d_inner = static_cast<double>(m.d_inner());
  return 2.0 * h * static_cast<double>(m.in_proj_width()) + 7.0 * d_inner * m.state_dim +
         2.0 * d_inner * h;
}

void ffn_flops(const ModelSpec& model, const LayerSpec& layer, LayerFlops& f);

// Sum over u = 1..n of floor(u / r): the compressed entries visible to the queries at tokens
// 0..n-1 (entry j covers tokens [j r, (j + 1) r) and is visible once all of them are; PR11
// indexer.py _causal_mask, deepseek_v4_attention.py _hca_extra_mask_cached).
double visible_pool_sum(double n, double r) {
  const double q = std::floor(n / r);
  return r * q * (q - 1.0) / 2.0 + q * (n - r * q + 1.0);
}

// Compressed keys one query attends, averaged over the sequence: HCA all visible entries, CSA at
// most `topk` of them. Without causal halving, the whole pool (HCA) or min(topk, pool) (CSA).
double pool_keys_per_query(const CompressedAttentionSpec& c, std::int64_t seq_len, bool halve,
                           int topk) {
  if (c.compress_ratio <= 0 || seq_len <= 0) return 0.0;
  const double s = static_cast<double>(seq_len);
  const double r = c.compress_ratio;
  const double pool = std::floor(s / r);
  const double k = topk > 0 ? static_cast<double>(topk) : pool;
  if (!halve) return std::min(k, pool);
  const double last_below = r * k - 1.0;  // the last token that sees fewer than k entries
  if (s <= last_below) return visible_pool_sum(s, r) / s;
  return (visible_pool_sum(last_below, r) + k * (s - last_below)) / s;
}

}  // namespace

CompressedAttentionFlops compressed_attention_flops(std::int64_t hidden, const AttentionSpec& a,
                                                    std::int64_t seq_len,
                                                    const FlopOptions& options) {
  const CompressedAttentionSpec& c = a.compressed;
  const double h = static_cast<double>(hidden);
  const double d = a.head_dim;
  const double qd = static_cast<double>(a.num_heads) * d;
  const bool halve = options.causal_attention_half && a.causal;
  CompressedAttentionFlops f;
  f.projections = 2.0 * (h * a.q_lora_rank + a.q_lora_rank * qd + h * d);
  f.projections +=
      c.o_lora_rank > 0
          ? 2.0 * (qd * c.o_lora_rank + static_cast<double>(c.o_groups) * c.o_lora_rank * h)
          : 2.0 * qd * h;
  if (c.compress_ratio > 0) f.compressor = 2.0 * h * 2.0 * c.overlap() * d;
  f.local_keys = keys_per_query(a, seq_len, options);
  f.pool_keys = pool_keys_per_query(c, seq_len, halve, c.csa() ? c.index_topk : 0);
  // QK^T and PV on every head over the shared latent (K = V, head_dim wide).
  f.core = 4.0 * qd * (f.local_keys + f.pool_keys);
  if (c.csa()) {
    const double ihd = c.index_head_dim, ih = c.index_n_heads;
    f.indexer = 2.0 * (h * (ihd + ih) + ihd * ih * ihd + h * 2.0 * 2.0 * ihd);
    // ReLU(q_I . K_I) per indexer head over every visible pool entry (a dense batched GEMM).
    f.indexer += 2.0 * ih * ihd * pool_keys_per_query(c, seq_len, halve, 0);
  }
  return f;
}

// The chunked delta rule (MG16 gdn.py:422-530 torch_chunk_gated_delta_rule, the reference of FLA's
// chunk_gated_delta_rule; Yang et al. 2024, arXiv:2412.06464 sec. 3.3) per chunk of C tokens and
// value head: K_beta K^T and Q K^T (C x C x d_k each), the WY inverse by forward substitution
// (~C^3 / 3 multiply-adds, counted as C x C x floor(C / 3)), A [V_beta | K_beta e^g] and the
// intra-chunk P V_new (C x C x (2 d_v + d_k)), and three C x d_k x d_v products with the state
// (W S, Q S, the update K^T V_new). Divided by C. KDA's per-channel decay (Kimi Linear,
// arXiv:2510.26692 sec. 3) scales K and Q elementwise and keeps the same products.
double delta_rule_flops_per_token(const LinearAttentionSpec& s) {
  const double c = s.chunk_size, dk = s.key_head_dim, dv = s.value_head_dim;
  const double per_head = 2.0 * c * (2.0 * dk) + 2.0 * c * std::floor(c / 3.0) +
                          2.0 * c * (2.0 * dv + dk) + 3.0 * 2.0 * dk * dv;
  return per_head * s.num_value_heads;
}

double linear_attention_flops_per_token(std::int64_t hidden, const LinearAttentionSpec& s) {
  const double h = static_cast<double>(hidden);
  if (s.short_conv()) {
    // LFM2: in_proj and out_proj only; the conv and the two gates are elementwise.
    return 2.0 * h * static_cast<double>(s.in_proj_width()) +
           2.0 * static_cast<double>(s.v_dim()) * h;
  }
  double f = 2.0 * h * static_cast<double>(s.in_proj_width()) +
             2.0 * static_cast<double>(s.v_dim()) * h + delta_rule_flops_per_token(s);
  if (s.kind == LinearAttentionKind::kKda) {
    // f_b_proj and g_b_proj expand the bottlenecks (value_head_dim wide).
    const double gate_dim = static_cast<double>(s.num_value_heads) * s.key_head_dim;
    const double g_b = s.full_rank_gate ? 0.0 : static_cast<double>(s.v_dim());
    f += 2.0 * s.value_head_dim * (gate_dim + g_b);
  }
  return f;
}

namespace {

// The GEMM and attention work a per-tensor policy replays (the dependency rules of
// workload/remat_policy.cpp at FLOP level): the QKV projections unless Q, K, V (and the MLA
// latents) are kept, the attention core unless the context is, the output projection unless its
// output is, the first MLP / expert GEMMs unless their outputs are, the experts' second GEMM
// unless its output is, and always the router. The second dense MLP GEMM is never replayed.
double tensor_policy_recompute_flops(const LayerSpec& layer, const LayerFlops& f,
                                     const TensorPolicy& p) {
  using T = LayerTensor;
  double r = f.router_flops;
  const bool mla = layer.attention.kind == AttentionKind::kMla;
  const bool qkv_kept = p.kept(T::kQuery) && p.kept(T::kKey) && p.kept(T::kValue);
  if (mla) {
    const double down = f.qkv_flops - f.mla_up_proj_flops;
    if (!p.kept(T::kQueryLatent) || !p.kept(T::kKvLatent)) r += down;
    if (!qkv_kept) r += f.mla_up_proj_flops;
  } else if (!qkv_kept) {
    r += f.qkv_flops;
  }
  if (!p.kept(T::kContext)) r += f.attn_core_flops;
  if (!p.kept(T::kAttentionOut)) r += f.attn_out_flops;
  const double first = layer.mlp.gated ? 2.0 / 3.0 : 0.5;  // share of the first GEMM(s)
  if (!p.kept(T::kMlpGate) || !p.kept(T::kMlpUp)) r += first * f.mlp_flops;
  if (!p.kept(T::kMoeGate) || !p.kept(T::kMoeUp)) r += first * f.experts_flops;
  if (!p.kept(T::kMoeOut)) r += (1.0 - first) * f.experts_flops;
  return r;
}

}  // namespace

LayerFlops layer_forward_flops_per_token(const ModelSpec& model, const LayerSpec& layer,
                                         std::int64_t seq_len, const FlopOptions& options) {
  const double h = static_cast<double>(model.hidden_size);
  const AttentionSpec& a = layer.attention;
  const double heads = a.num_heads;
  const double keys = keys_per_query(a, seq_len, options);
  LayerFlops f;
  if (layer.has_mamba()) f.mamba_flops = mamba_forward_flops(h, layer.mamba);
  if (layer.has_linear_attention()) {
    f.linear_attn_flops = linear_attention_flops_per_token(model.hidden_size, layer.linear);
  }
  if (layer.has_ffn()) ffn_flops(model, layer, f);
  if (layer.dit.streams > 0 && seq_len > 0) {
    // Each stream's Linear(h -> chunks x h) on the sample's conditioning vector.
    f.modulation_flops =
        layer.dit.streams * 2.0 * h * layer.dit.adaln_chunks * h / static_cast<double>(seq_len);
  }
  if (model.hc_mult > 1) {
    // Each sublayer's mixer: fn over the K flattened streams, K h -> (2 + K) K.
    const double k = model.hc_mult;
    const double sublayers = (layer.has_attention() ? 1.0 : 0.0) + (layer.has_ffn() ? 1.0 : 0.0);
    f.hyper_flops = sublayers * 2.0 * k * h * (2.0 + k) * k;
  }
  if (!layer.has_attention()) return f;
  if (a.kind == AttentionKind::kCompressed) {
    const CompressedAttentionFlops c =
        compressed_attention_flops(model.hidden_size, a, seq_len, options);
    // The compressor and the indexer are projections of the layer input, beside q and kv.
    f.qkv_flops = c.projections + c.compressor + c.indexer;
    const double qd = heads * a.head_dim;
    const double out =
        a.compressed.o_lora_rank > 0
            ? 2.0 * (qd * a.compressed.o_lora_rank +
                     static_cast<double>(a.compressed.o_groups) * a.compressed.o_lora_rank * h)
            : 2.0 * qd * h;
    f.qkv_flops -= out;
    f.attn_out_flops = out;
    f.attn_core_flops = c.core;
    return f;
  }
  if (a.kind == AttentionKind::kMla) {
    const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    const double v = a.v_head_dim;
    double q_up = 0.0;
    double q_down = 0.0;
    if (a.q_lora_rank > 0) {
      q_down = 2.0 * h * a.q_lora_rank;
      q_up = 2.0 * a.q_lora_rank * heads * qk;
    } else {
      q_down = 2.0 * h * heads * qk;  // uncompressed queries: one projection, not an up-proj
    }
    const double kv_down = 2.0 * h * (a.kv_lora_rank + a.qk_pos_emb_head_dim);
    const double kv_up = 2.0 * a.kv_lora_rank * heads * (a.qk_head_dim + v);
    f.qkv_flops = q_down + q_up + kv_down + kv_up;
    if (a.output_gate) f.qkv_flops += 2.0 * h * heads * v;  // Kimi-K3's linear_o_gate
    f.mla_up_proj_flops = q_up + kv_up;
    f.attn_core_flops = 2.0 * keys * heads * qk + 2.0 * keys * heads * v;
    f.attn_out_flops = 2.0 * heads * v * h;
  } else {
    const double q_width = heads * a.head_dim;
    const double kv_width = static_cast<double>(a.num_query_groups) * a.head_dim;
    f.qkv_flops = 2.0 * h * (q_width + 2.0 * kv_width);
    if (a.output_gate) f.qkv_flops += 2.0 * h * q_width;
    // GQA shares K/V across query heads but every query head still does its own QK^T and AV.
    f.attn_core_flops = 4.0 * keys * q_width;
    f.attn_out_flops = 2.0 * q_width * h;
  }
  return f;
}

namespace {

void ffn_flops(const ModelSpec& model, const LayerSpec& layer, LayerFlops& f) {
  const double h = static_cast<double>(model.hidden_size);
  if (layer.is_moe) {
    const MoeSpec& m = layer.moe;
    const std::int64_t width = m.latent_size > 0 ? m.latent_size : model.hidden_size;
    f.router_flops = 2.0 * h * m.num_experts;
    if (m.latent_size > 0) f.router_flops += 2.0 * 2.0 * h * static_cast<double>(m.latent_size);
    if (m.shared_expert_gate && m.shared_expert_ffn_hidden_size > 0) f.router_flops += 2.0 * h;
    f.experts_flops = m.topk * mlp_forward_flops(width, layer.mlp, m.expert_ffn_hidden_size);
    f.mlp_flops = mlp_forward_flops(model.hidden_size, layer.mlp, m.shared_expert_ffn_hidden_size);
  } else {
    f.mlp_flops = mlp_forward_flops(model.hidden_size, layer.mlp, layer.mlp.ffn_hidden_size);
  }
}

// Flux's input and output GEMMs per token of the image + text sequence (PR9 model.py:178-220,
// 480-553): img_in (out_channels -> h) and proj_out (h -> out_channels) on the image tokens,
// txt_in (context_dim -> h) on the text tokens, and once per sample the time / vector / guidance
// MLPs and norm_out's Linear(h -> 2h).
void diffusion_io_flops(const ModelSpec& model, std::int64_t seq_len, ForwardFlops& f) {
  const DiffusionSpec& d = model.diffusion;
  const double h = static_cast<double>(model.hidden_size);
  const double s = static_cast<double>(std::max<std::int64_t>(1, seq_len));
  const double image_share = static_cast<double>(d.image_tokens) / s;
  const double text_share = static_cast<double>(d.text_tokens) / s;
  const double channels = static_cast<double>(model.vocab_size);
  f.logits_flops = 2.0 * h * channels * image_share;
  double per_sample = 2.0 * (static_cast<double>(d.model_channels) * h + h * h);  // time_in
  per_sample += 2.0 * (static_cast<double>(d.vec_in_dim) * h + h * h);            // vector_in
  if (d.guidance_embed) per_sample += 2.0 * (static_cast<double>(d.model_channels) * h + h * h);
  per_sample += 2.0 * h * 2.0 * h;  // norm_out's modulation
  f.conditioning_flops = 2.0 * channels * h * image_share +
                         2.0 * static_cast<double>(d.context_dim) * h * text_share + per_sample / s;
}

}  // namespace

ForwardFlops forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len,
                                     std::int64_t padded_vocab, const FlopOptions& options) {
  ForwardFlops f;
  const double h = static_cast<double>(model.hidden_size);
  for (const LayerSpec& layer : model.layers) {
    f.decoder_flops += layer_forward_flops_per_token(model, layer, seq_len, options).total();
  }
  f.logits_flops = 2.0 * h * static_cast<double>(padded_vocab);
  if (model.diffusion.enabled()) diffusion_io_flops(model, seq_len, f);
  // A HyperHead (K h -> K) collapses the streams before the final norm and in each MTP depth.
  const double hyper_head = model.hc_mult > 1 ? 2.0 * model.hc_mult * h * model.hc_mult : 0.0;
  if (model.mtp_num_layers > 0 && !model.layers.empty()) {
    // Each MTP module: project [h_prev; emb] (2h -> h), one decoder layer, shared output head.
    const double per_module =
        2.0 * (2.0 * h) * h + hyper_head +
        layer_forward_flops_per_token(model, model.layers.back(), seq_len, options).total() +
        f.logits_flops;
    f.mtp_flops = model.mtp_num_layers * per_module;
  }
  f.logits_flops += hyper_head;
  return f;
}

double recompute_forward_flops_per_token(const ModelSpec& model, std::int64_t seq_len,
                                         const RecomputeSpec& recompute,
                                         const std::vector<VirtualStage>& stages, int num_stages,
                                         const FlopOptions& options,
                                         const PrecisionSpec& precision) {
  const int num_layers = model.num_layers();
  std::vector<bool> full(static_cast<std::size_t>(num_layers), false);
  if (recompute.granularity == RecomputeGranularity::kFull) {
    if (recompute.method == RecomputeMethod::kUniform) {
      std::fill(full.begin(), full.end(), true);
    } else {
      const int n = recompute.num_layers;
      if (!stages.empty()) {
        for (const VirtualStage& st : stages) {
          for (int i = 0; i < std::min(n, st.num_layers); ++i) {
            const int id = st.first_layer + i;
            if (id >= 0 && id < num_layers) full[static_cast<std::size_t>(id)] = true;
          }
        }
      } else {
        const int k = std::max(num_stages, 1);
        int first = 0;
        for (int z = 0; z < k; ++z) {  // balanced: the first (L mod k) stages take one more
          const int len = num_layers / k + (z < num_layers % k ? 1 : 0);
          for (int i = 0; i < std::min(n, len); ++i)
            full[static_cast<std::size_t>(first + i)] = true;
          first += len;
        }
      }
    }
  }
  for (int id : recompute.layer_ids) {
    if (id >= 0 && id < num_layers) full[static_cast<std::size_t>(id)] = true;
  }
  const RecomputeModules modules = recompute.modules;
  const bool selective = recompute.granularity == RecomputeGranularity::kSelective;
  const bool tensors = recompute.granularity == RecomputeGranularity::kTensors;
  double total = 0.0;
  for (int i = 0; i < num_layers; ++i) {
    const LayerSpec& layer = model.layers[static_cast<std::size_t>(i)];
    const LayerFlops f = layer_forward_flops_per_token(model, layer, seq_len, options);
    if (tensors) {
      total += tensor_policy_recompute_flops(layer, f, recompute.tensors);
      continue;
    }
    if (full[static_cast<std::size_t>(i)]) {
      total += f.total();
      continue;
    }
    if (recompute.granularity == RecomputeGranularity::kOpPolicy) {
      total += op_policy_replayed_flops(model, layer, precision, recompute, f);
      continue;
    }
    if (!selective) continue;
    if (modules.has(RecomputeModule::kCoreAttn)) total += f.attn_core_flops;
    if (modules.has(RecomputeModule::kMlaUpProj)) total += f.mla_up_proj_flops;
    if (layer.is_moe) {
      if (modules.has(RecomputeModule::kMoe) || modules.has(RecomputeModule::kMlp)) {
        total += f.router_flops + f.experts_flops + f.mlp_flops;
      } else if (modules.has(RecomputeModule::kSharedExperts)) {
        total += f.mlp_flops;
      }
    } else if (modules.has(RecomputeModule::kMlp)) {
      total += f.mlp_flops;
    }
  }
  return total;
}

double sc21_megatron_flops(double batch, double seq_len, double layers, double hidden,
                           double vocab) {
  return 96.0 * batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

double palm_flops_per_token(const ModelSpec& model, std::int64_t seq_len) {
  const ModelParams p = model_params(model);
  double attention = 0.0;
  for (const LayerSpec& l : model.layers) {
    if (l.has_linear_attention()) continue;  // no s^2 term: its kernel is linear in s
    const AttentionSpec& a = l.attention;
    if (a.kind == AttentionKind::kCompressed) {
      // Keys seen instead of the sequence: the window plus the compressed entries.
      const CompressedAttentionFlops c = compressed_attention_flops(model.hidden_size, a, seq_len);
      attention += 6.0 * a.num_heads * 2.0 * a.head_dim * (c.local_keys + c.pool_keys);
      continue;
    }
    const double dims = a.kind == AttentionKind::kMla
                            ? a.qk_head_dim + a.qk_pos_emb_head_dim + a.v_head_dim
                            : 2.0 * a.head_dim;
    attention += 6.0 * a.num_heads * dims * static_cast<double>(seq_len);
  }
  return 6.0 * static_cast<double>(p.active - p.embedding) + attention;
}

}  // namespace projector
