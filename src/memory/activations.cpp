// Saved activations of a layer and of a chunk for one microbatch (memory_detail.h).
// Notation: T = tokens of one microbatch on one CP rank (mbs x seq / cp),
// h = hidden, t = TP, sp = t with sequence parallelism else 1, e = activation bytes (params
// dtype), g = bytes of a saved GEMM input (e, or 1 when an fp8 recipe saves the quantised input).
//
// Saved tensors of a standard decoder layer per microbatch (Korthikanti et al. 2022, Table 2,
// generalised); with MHA, GELU, F = 4h, dropout, no flash attention, t = sp = 1 and e = g = 2
// this is exactly sbh(34 + 5as/h):
//   input norm input            T h e / sp            (2sbh)
//   QKV GEMM input (norm out)   T h g / sp            (2sbh)
//   Q, K, V                     T (q + 2kv) e / t     (Q, K 4sbh; V 2sbh)
//   softmax out, dropout mask and dropout out   b a s^2 (e + 1 + e) / t   (5as^2b), only without
//     flash attention and the last two only with attention dropout; flash attention instead
//     keeps the fp32 logsumexp, b a s 4 / t
//   output-proj input (context) T q g / t             (2sbh)
//   two residual dropout masks  2 T h 1 / sp          (2sbh), only with hidden dropout
//   pre-MLP norm input          T h e / sp            (2sbh)
//   fc1 input (norm out)        T h g / sp            (2sbh)
//   activation input (fc1 out)  T up e / t, up = 2F gated else F      (8sbh)
//   fc2 input (activation out)  T F g / t             (8sbh)
// MLA replaces the QKV part with its latents (down-projection input, latent-norm inputs, the
// gathered up-projection inputs, which the duplicated down-projections leave unsharded by TP) and
// the up-projected Q (a(qk+rope)), K (a(qk+rope)), V (a v). MoE replaces the MLP with the router
// input and fp32 probabilities + routing map (T E 5 / sp), the expert GEMM inputs/outputs for the
// T_e tokens this rank receives (T_e = T topk etp / sp, x capacity factor or x imbalance), the
// combine input kept for the probability gradient (T topk h e / sp; only the permuted fp32
// probabilities when the experts apply them, RuntimeSpec::moe_probs_in_experts) and the shared
// experts.
#include <algorithm>
#include <cmath>

#include "memory/memory_detail.h"
#include "projector/job/accounting.h"
#include "projector/model/accounting.h"
#include "projector/model/recompute_policy.h"

namespace projector::memory_detail {

bool has_module(const RecomputeSpec& r, RecomputeModule m) {
  return r.granularity == RecomputeGranularity::kSelective && r.modules.has(m);
}

SelectiveSet selective_set(const RecomputeSpec& r) {
  SelectiveSet s;
  s.core_attn = has_module(r, RecomputeModule::kCoreAttn);
  s.mlp = has_module(r, RecomputeModule::kMlp);
  s.moe = has_module(r, RecomputeModule::kMoe);
  s.moe_act = has_module(r, RecomputeModule::kMoeAct);
  s.layernorm = has_module(r, RecomputeModule::kLayernorm);
  s.mla_up_proj = has_module(r, RecomputeModule::kMlaUpProj);
  s.shared_experts = has_module(r, RecomputeModule::kSharedExperts);
  return s;
}

double gemm_input_bytes(const PrecisionSpec& p) {
  switch (p.fp4) {
    case Fp4Recipe::kNvfp4:
      return 0.5 + 1.0 / 16.0;  // e4m3 scale per 16 elements
    case Fp4Recipe::kMxfp4:
      return 0.5 + 1.0 / 32.0;  // e8m0 scale per 32 elements
    case Fp4Recipe::kNone:
      break;
  }
  switch (p.fp8) {
    case Fp8Recipe::kNone:
      return bytes_per_element(p.params_dtype);
    case Fp8Recipe::kMxfp8:
      return 1.0 + 1.0 / 32.0;  // e8m0 scale per 32 elements
    case Fp8Recipe::kBlockwise:
      return 1.0 + 4.0 / 128.0;  // fp32 scale per 1x128 block
    default:
      return 1.0;
  }
}

Geometry geometry(const JobSpec& job) {
  Geometry g;
  const int cp = std::max(1, job.parallel.cp);
  g.mbs = job.runtime.micro_batch_size;
  g.seq_local = static_cast<double>(job.runtime.seq_length) / cp;
  g.tokens = g.mbs * g.seq_local;
  g.h = static_cast<double>(job.model.hidden_size);
  g.t = std::max(1, job.parallel.tp);
  g.sp = job.parallel.sequence_parallel ? g.t : 1.0;
  g.e = bytes_per_element(job.runtime.precision.params_dtype);
  const PrecisionSpec& p = job.runtime.precision;
  g.g = p.fp8_dense ? gemm_input_bytes(p) : g.e;
  g.g_expert = p.fp8_experts ? gemm_input_bytes(p) : g.e;
  g.quantized_dense = (p.fp8 != Fp8Recipe::kNone && p.fp8_dense) || p.fp4 != Fp4Recipe::kNone;
  if (p.hp_wgrad()) {
    // TE saves each linear's input unquantised for the high-precision weight gradient.
    g.g = g.e;
    g.g_expert = g.e;
    g.quantized_dense = false;
  }
  return g;
}

// Tokens the reported EP rank feeds through its experts for one microbatch.
double expert_tokens(const JobSpec& job, const LayerSpec& layer, const Geometry& geo, bool upper,
                     const MemoryOptions& options) {
  const MoeSpec& m = layer.moe;
  const double local = geo.tokens / geo.sp;
  const double etp = std::max(1, job.parallel.etp);
  const double balanced = local * m.topk * etp;
  if (m.capacity_factor > 0.0) return balanced * m.capacity_factor;  // padded to capacity
  if (m.hash_routing) return balanced;  // a uniform token-id table: no skewed upper bound
  const double point = balanced * moe_rank_load_factor(job, m);  // the busiest rank's share
  if (!upper) return point;
  const int ep = std::max(1, job.parallel.ep);
  const int local_experts = std::max(1, (m.num_experts + ep - 1) / ep);
  const double hard = local * ep * etp * std::min(m.topk, local_experts);
  return std::max(point,
                  std::min(hard, balanced * std::max(1.0, options.moe_dropless_imbalance_upper)));
}

// Saved tensors of a Mamba-2 mixer (MG11 mamba_mixer.py:679-733, memory-efficient path
// mamba_split_conv1d_scan_combined without rmsnorm_weight, MB1 ssd_combined.py): the in_proj
// input (the norm output), in_proj's output zxBCdt (T x (2 d_inner + 2 G N + H) / t), which the
// fused kernel keeps with its ungated scan output out_x; the gated output y * silu(z) the mixer's
// RMSNorm keeps, and that norm's output out_proj keeps (T x d_inner / t each, three in all). The
// kernel recomputes the conv and its chunk states in the backward; the states are the largest
// temporary: (T / chunk) x heads x head_dim x N x 4 B / t.
void mamba_act(const Geometry& geo, const MambaSpec& m, bool recompute_norm, double& saved,
               double& ln_out, double& w_io, double& largest_tmp) {
  const double T = geo.tokens, h = geo.h, t = geo.t, sp = geo.sp, e = geo.e, g = geo.g;
  const double d_inner = static_cast<double>(m.d_inner());
  ln_out = recompute_norm ? 0.0 : T * h * g / sp;
  const double zxbcdt = T * static_cast<double>(m.in_proj_width()) * e / t;
  const double y = 2.0 * T * d_inner * e / t;  // out_x and the gated output
  const double proj_in = T * d_inner * g / t;
  saved += ln_out + zxbcdt + y + proj_in;
  w_io += T * h * g / sp + zxbcdt + proj_in + T * h * e / sp;
  const double states = T / std::max(1, m.chunk_size) * d_inner * m.state_dim * 4.0 / t;
  largest_tmp = std::max(largest_tmp, states + zxbcdt);
}

// Saved tensors of a GDN / KDA mixer (MG16 gdn.py:91-288 and common.py:
// 383-440; Primus PR8 gated_delta_net.py, kimi_delta_attention.py), per TP rank: in_proj's input
// (the norm output); its output [q, k, v, z, gates], which the conv keeps (q, k, v) and the gated
// norm and the gate math keep (z, beta, alpha); the conv output, kept by the q / k L2 norm; the
// kernel's inputs q and k (normalised, repeated to the value heads), g (fp32) and beta; the WY
// matrix of every chunk (C per token and value head) that FLA's chunk_gated_delta_rule keeps; the
// kernel output (the gated norm's input) and the gated norm output (out_proj's input). KDA also
// keeps its per-channel decay (fp32, value heads x d_k) and its output gate (v_dim). The chunk
// states ((T / C) x heads x d_k x d_v) are recomputed in the backward: the largest temporary.
void linear_attention_act(const Geometry& geo, const LinearAttentionSpec& s, bool recompute_norm,
                          double& saved, double& ln_out, double& w_io, double& largest_tmp) {
  const double T = geo.tokens, h = geo.h, t = geo.t, sp = geo.sp, e = geo.e, g = geo.g;
  const double heads = s.num_value_heads;
  const double v_dim = static_cast<double>(s.v_dim());
  ln_out = recompute_norm ? 0.0 : T * h * g / sp;
  const double proj_out = T * static_cast<double>(s.in_proj_width()) * e / t;
  const double conv_out = s.conv_kernel > 0 ? T * static_cast<double>(s.conv_dim()) * e / t : 0.0;
  double kernel_in = T * heads * (2.0 * s.key_head_dim * e + 4.0 + e + s.chunk_size * e) / t;
  if (s.kind == LinearAttentionKind::kKda) {
    kernel_in += T * heads * s.key_head_dim * 4.0 / t + T * v_dim * e / t;
  }
  if (s.kind == LinearAttentionKind::kKda && s.full_rank_gate) {
    // Kimi-K3's KDA runs its pre- and post-kernel steps as eager fp32 PyTorch
    // (kimi_delta_attention.py:663-725, kda_kernels/_eager/reference.py:143-163); autograd keeps
    // the fp32 L2-normalised q and k, a second fp32 gate tensor (z + dt_bias beside the sigmoid)
    // and four fp32 tensors of the sigmoid-gated output norm (input, normalised, weighted, gate).
    kernel_in +=
        T * (8.0 * static_cast<double>(s.qk_dim()) + 4.0 * heads * s.key_head_dim + 16.0 * v_dim) /
        t;
  }
  const double core_out = T * v_dim * e / t;
  const double proj_in = T * v_dim * g / t;
  saved += ln_out + proj_out + conv_out + kernel_in + core_out + proj_in;
  w_io += T * h * g / sp + proj_out + proj_in + T * h * e / sp;
  const double states =
      std::ceil(T / std::max(1, s.chunk_size)) * heads * s.key_head_dim * s.value_head_dim * e / t;
  largest_tmp = std::max(largest_tmp, states + proj_out);
}

// Saved tensors of LFM2's short conv (PR10 attention.py:165-181), whole on every TP rank (its
// linears are not split): in_proj's input (the layer input: there is no norm), its output
// [B, C, x] (the gates keep B, x and C), B * x (the conv's input), the conv output (kept by
// C * conv) and out_proj's input.
void short_conv_act(const Geometry& geo, const LinearAttentionSpec& s, double& saved, double& w_io,
                    double& largest_tmp) {
  const double T = geo.tokens, w = static_cast<double>(s.short_conv_width), e = geo.e, g = geo.g;
  const double proj_in = T * geo.h * g;
  const double proj_out = T * 3.0 * w * e;
  saved += proj_in + proj_out + 2.0 * T * w * e + T * w * g;
  w_io += proj_in + proj_out + T * w * g + T * geo.h * e;
  largest_tmp = std::max(largest_tmp, proj_out);
}

// Tensors a DeepSeek-V4 attention sublayer keeps for its backward (PR11
// deepseek_v4_attention.py forward, compressor.py, indexer.py; TP and CP are 1,
// docs/deepseek-v4.md): the q latent (q_norm's input and q_up's input), q_up's output (the per-head
// RMS input), the rotated q and the shared K = V latent (the kernel's inputs), kv_norm's input, the
// compressor's wkv_gate output and its pool (before and after the norm), the kernel output, the
// de-rotated output (o_a's input) and o_a's output (o_b's input). The frozen indexer keeps nothing;
// its per-head score tensor (T x heads x pool, bf16 before the fused tail) is the largest
// temporary.
struct CompressedAct {
  double norms = 0.0, qkv = 0.0, proj_in = 0.0, latents = 0.0, w_io = 0.0, largest_tmp = 0.0;
};
CompressedAct compressed_attention_act(const Geometry& geo, const AttentionSpec& a) {
  const CompressedAttentionSpec& c = a.compressed;
  const double T = geo.tokens, e = geo.e, g = geo.g;
  const double d = a.head_dim, ql = a.q_lora_rank;
  const double qd = static_cast<double>(a.num_heads) * d;
  CompressedAct x;
  x.norms = T * (ql + d) * e;           // q_norm and kv_norm inputs
  x.latents = T * ql * g;               // q_up's input
  x.qkv = T * (2.0 * qd + d + qd) * e;  // q before / after RMS + RoPE, K = V, kernel output
  if (c.compress_ratio > 0) {
    const double pool = std::floor(T / c.compress_ratio);
    x.qkv += T * 2.0 * c.overlap() * d * e + 2.0 * pool * d * e;
  }
  const double o_a_out = c.o_lora_rank > 0 ? static_cast<double>(c.o_groups) * c.o_lora_rank : 0.0;
  x.proj_in = T * (qd + o_a_out) * g;
  x.w_io = x.latents + x.proj_in + T * (ql + qd + d + o_a_out + geo.h) * e;
  if (c.csa()) {
    x.largest_tmp = T * c.index_n_heads * std::floor(geo.seq_local / c.compress_ratio) * e;
  }
  return x;
}

// Hyper-connections (PR11 hyper_connection.py, deepseek_v4_block.py _hc_apply), per sublayer: the
// K-stream input (read by the fn GEMM's norm, the collapse and the expand's comb @ x), the
// fp32 normalised K h input of the fn GEMM (its weight gradient), the sublayer output (the
// expand's post x out) and the fp32 logits and Sinkhorn matrix ((2 + K) K and K^2 per token).
double hyper_act_per_sublayer(const JobSpec& job, const Geometry& geo) {
  const double k = job.model.hc_mult;
  if (k <= 1.0) return 0.0;
  const double T = geo.tokens, h = geo.h, e = geo.e;
  return T * (k * h * e + k * h * 4.0 + h * e + ((2.0 + k) * k + k * k) * 4.0);
}

// The running byte counts of one layer's saved activations (elements x bytes), by the
// component they are reported under, plus what the parts hand each other: the GEMM inputs the
// zero-bubble W set retains, the largest temporary, and the tensors module offloading may move.
struct LayerActBytes {
  double seq_in = 0.0;  // one residual-stream tensor (elements)
  double norms = 0.0;   // norm inputs
  double attn = 0.0;    // projections: inputs and Q/K/V (a Mamba mixer's saved tensors)
  double core = 0.0;    // s^2 terms or logsumexp
  double qkv = 0.0;     // Q, K, V (dropped by mla_up_proj)
  double proj_in = 0.0;
  double ln_out_attn = 0.0;  // GEMM input produced by the input norm (dropped by "layernorm")
  double mlp = 0.0, moe = 0.0, shared = 0.0;
  double expert_fc1_in = 0.0, expert_fc1_out = 0.0;  // for module-level offloading
  double w_io = 0.0;  // inputs + output grads of the weight GEMMs (zero-bubble W set)
  double largest_tmp = 0.0;
};

// Q, K, V and the projection input of an MLA or a standard (GQA / MHA) attention.
void projection_act(const JobSpec& job, const Geometry& geo, const AttentionSpec& a,
                    LayerActBytes& b) {
  const double T = geo.tokens, t = geo.t, sp = geo.sp, e = geo.e, g = geo.g;
  const bool fp8 = geo.quantized_dense;
  const double heads = a.num_heads;
  if (a.kind == AttentionKind::kMla) {
    const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    // Down-projection input (shared by q_down and kv_down; fp8 quantises it once per GEMM).
    b.ln_out_attn = b.seq_in * g * (fp8 && a.q_lora_rank > 0 ? 2.0 : 1.0);
    double latents = 0.0;
    if (a.q_lora_rank > 0) {
      b.norms += T * a.q_lora_rank * e / sp;  // q latent norm input
      latents += T * a.q_lora_rank * g;       // q_up input (gathered, duplicated down-proj)
    }
    b.norms += T * a.kv_lora_rank * e / sp;  // kv latent norm input
    latents += T * a.kv_lora_rank * g;       // kv_up input
    b.attn += latents;
    b.qkv = T * heads * (2.0 * qk + a.v_head_dim) * e / t;
    // Kimi-K3's output gate keeps its fp32 gate and the ungated core output.
    if (a.output_gate) b.qkv += T * heads * a.v_head_dim * (4.0 + e) / t;
    b.proj_in = T * heads * a.v_head_dim * g / t;
    b.w_io += b.ln_out_attn + latents + T * (a.q_lora_rank + a.kv_lora_rank) * e + b.qkv +
              b.proj_in + b.seq_in * e;
    return;
  }
  const double q_w = heads * a.head_dim;
  // KV heads on this rank (ceil: XLA pads an axis the TP does not divide; exact otherwise).
  const double kv_rank =
      static_cast<double>(job.parallel.kv_heads_per_rank(a.num_query_groups) * a.head_dim);
  b.ln_out_attn = b.seq_in * g;
  b.qkv = T * (q_w / t + 2.0 * kv_rank) * e;
  if (a.qk_layernorm) b.norms += T * (q_w / t + kv_rank) * e;
  // The output gate keeps the gate and the ungated core output for its backward.
  if (a.output_gate) b.qkv += 2.0 * T * q_w * e / t;
  b.proj_in = T * q_w * g / t;
  b.w_io += b.ln_out_attn + b.qkv + b.proj_in + b.seq_in * e;
}

// The sequence-mixing block: Mamba, linear attention or short convolution, and attention.
void attention_block_act(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                         const LayerSpec& layer, LayerActBytes& b) {
  const AttentionSpec& a = layer.attention;
  const double e = geo.e;
  if (layer.has_mamba()) {
    b.norms += b.seq_in * e;  // input norm input
    mamba_act(geo, layer.mamba, rc.layernorm, b.attn, b.ln_out_attn, b.w_io, b.largest_tmp);
  }
  if (layer.has_linear_attention() && layer.linear.short_conv()) {
    short_conv_act(geo, layer.linear, b.attn, b.w_io, b.largest_tmp);
  } else if (layer.has_linear_attention()) {
    b.norms += b.seq_in * e;  // input norm input
    linear_attention_act(geo, layer.linear, rc.layernorm, b.attn, b.ln_out_attn, b.w_io,
                         b.largest_tmp);
  }
  if (!layer.has_attention()) return;
  b.norms += b.seq_in * e;  // input norm input
  if (a.kind == AttentionKind::kCompressed) {
    const CompressedAct x = compressed_attention_act(geo, a);
    b.ln_out_attn = b.seq_in * geo.g;  // q_down, kv and the compressor read the normed input
    b.norms += x.norms;
    b.attn += x.latents;
    b.qkv = x.qkv;
    b.proj_in = x.proj_in;
    b.w_io += b.ln_out_attn + x.w_io;
    b.largest_tmp = std::max(b.largest_tmp, x.largest_tmp);
  } else {
    projection_act(job, geo, a, b);
  }
  const double heads = a.num_heads;
  // DeepSeek-V4 attention runs its own fused kernels whatever the flash setting.
  if (job.runtime.flash_attention || a.kind == AttentionKind::kCompressed) {
    b.core = geo.mbs * heads * geo.seq_local * 4.0 / geo.t;  // fp32 logsumexp per head and query
  } else {
    const double s2 = geo.mbs * heads * geo.seq_local * geo.seq_local / geo.t;
    b.core = s2 * e;                                                  // softmax output
    if (job.model.attention_dropout > 0.0) b.core += s2 * (1.0 + e);  // mask + dropout output
    b.largest_tmp = std::max(b.largest_tmp, s2 * 4.0);                // fp32 softmax grad
  }
  if (rc.core_attn) b.core = 0.0;  // Q, K, V stay as the checkpoint's inputs
  if (rc.mla_up_proj && a.kind == AttentionKind::kMla) b.qkv = 0.0;
  if (rc.layernorm) b.ln_out_attn = 0.0;
  b.attn += b.qkv + b.proj_in + b.ln_out_attn;
}

// A dense MLP of `ffn` columns: what it keeps (0 when recomputed whole) and its W-set share.
double dense_mlp_act(const Geometry& geo, const LayerSpec& layer, double ffn, bool recompute_all,
                     LayerActBytes& b) {
  const double T = geo.tokens, t = geo.t, e = geo.e;
  const double up = layer.mlp.gated ? 2.0 * ffn : ffn;
  // What the activation keeps: the fc1 output, or a GLU's own saved set (situ: six fp32 tensors).
  const double act_in = layer.mlp.gated
                            ? T * ffn * glu_saved_bytes_per_element(layer.mlp.activation, e) / t
                            : T * up * e / t;
  const double fc2_in = T * ffn * geo.g / t;
  b.w_io += act_in + fc2_in + b.seq_in * e;  // fc1 output grad ~ act_in, fc2 input + output grad
  b.largest_tmp = std::max(b.largest_tmp, act_in);
  return recompute_all ? 0.0 : act_in + fc2_in;
}

// The MoE block: router, dispatch, routed experts, combine, shared experts.
void moe_block_act(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                   const LayerSpec& layer, bool upper, const MemoryOptions& options,
                   LayerActBytes& b) {
  const double T = geo.tokens, sp = geo.sp, e = geo.e;
  const bool fp8 = geo.quantized_dense;
  const MoeSpec& m = layer.moe;
  const double router_in = rc.layernorm ? 0.0 : b.seq_in * e;  // LN output: router + dispatch
  const double probs = T * m.num_experts * (4.0 + 1.0) / sp;   // fp32 probs + routing map
  const double te = expert_tokens(job, layer, geo, upper, options);
  const double etp = std::max(1, job.parallel.etp);
  const double fe = static_cast<double>(m.expert_ffn_hidden_size);
  const double up_e = layer.mlp.gated ? 2.0 * fe : fe;
  // The experts and the dispatch work in the latent width when moe_latent_size is set; the
  // latent projections keep their inputs (the router input and the combined latent output).
  const double w = m.latent_size > 0 ? static_cast<double>(m.latent_size) : geo.h;
  // A latent norm (Kimi-K3) keeps its input besides the up-projection's.
  const double latent = m.latent_size > 0 ? (m.latent_norm ? 2.0 : 1.0) * T * w * e / sp : 0.0;
  const double ge = geo.g_expert;
  const double fc1_in = te * w * ge;
  const double fc1_out = layer.mlp.gated
                             ? te * fe / etp * glu_saved_bytes_per_element(layer.mlp.activation, e)
                             : te * up_e / etp * e;
  const double fc2_in = rc.moe_act ? 0.0 : te * fe / etp * ge;
  // Kept for the probability gradient: the experts' output when the combine scales it, or only
  // the permuted fp32 probabilities when the experts' weighted activation applies them.
  const double combine =
      job.runtime.moe_probs_in_experts ? te / etp * 4.0 : T * m.topk * w * e / sp;
  b.moe = router_in + probs + fc1_in + fc1_out + fc2_in + combine + latent;
  b.expert_fc1_in = fc1_in;
  b.expert_fc1_out = fc1_out;
  b.w_io += fc1_in + fc1_out + te * fe / etp * ge + te * w * e;
  // Dispatch: permuted send buffer + received tokens; backward: fc1-output grad. The allgather
  // dispatcher gathers every token of the ETP x EP group into one buffer (MG8
  // token_dispatcher.py:299-301).
  double dispatch_tmp = T * m.topk * w * e / sp + te * w * e;
  if (job.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
    dispatch_tmp = T / sp * etp * std::max(1, job.parallel.ep) * w * e + te * w * e;
  }
  b.largest_tmp = std::max(b.largest_tmp, std::max(dispatch_tmp, fc1_out));
  // Static worst-case receive buffer and the expert-sorted layout built from it
  // (RuntimeSpec::moe_static_recv_factor), both live while the experts run.
  const double fs = job.parallel.ep > 1 ? job.runtime.moe_static_recv_factor : 0.0;
  if (fs > 0.0) b.largest_tmp = std::max(b.largest_tmp, 2.0 * fs * T * m.topk * w * e / sp);
  if (m.shared_expert_ffn_hidden_size > 0) {
    const bool rc_shared = rc.shared_experts;
    b.shared = dense_mlp_act(geo, layer, static_cast<double>(m.shared_expert_ffn_hidden_size),
                             rc_shared, b);
    if (fp8 && !rc_shared) b.shared += b.seq_in * geo.g;  // its own quantised copy of the input
  }
  if (rc.moe) {  // the whole MoE block keeps only its input
    b.moe = b.seq_in * e;
    b.shared = 0.0;
  }
}

// The MLP or MoE sublayer (none on a hybrid attention or Mamba layer).
void ffn_block_act(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                   const LayerSpec& layer, bool upper, const MemoryOptions& options,
                   LayerActBytes& b) {
  if (!layer.has_ffn()) return;
  b.norms += b.seq_in * geo.e;  // pre-MLP norm input
  if (layer.is_moe) return moe_block_act(job, geo, rc, layer, upper, options, b);
  const double fc1_in = rc.layernorm ? 0.0 : b.seq_in * geo.g;
  b.w_io += b.seq_in * geo.g;
  const double ffn = static_cast<double>(layer.mlp.ffn_hidden_size);
  b.mlp = rc.mlp ? b.seq_in * geo.e + dense_mlp_act(geo, layer, ffn, true, b)
                 : fc1_in + dense_mlp_act(geo, layer, ffn, false, b);
}

// Module-level activation offloading (MG2 transformer_config.py:1323-1361): the inputs of the
// listed modules go to host memory (the fraction of them Megatron offloads).
double offloaded_act(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                     const LayerActBytes& b, double total) {
  const OffloadSpec& off = job.runtime.offload;
  if (off.modules == 0) return 0.0;
  const double e = geo.e;
  double moved = 0.0;
  if (off.has(OffloadModule::kAttnNorm)) moved += b.seq_in * e;
  if (off.has(OffloadModule::kQkvLinear)) moved += b.ln_out_attn;
  if (off.has(OffloadModule::kCoreAttn) && !rc.core_attn) moved += b.qkv;
  if (off.has(OffloadModule::kAttnProj)) moved += b.proj_in;
  if (off.has(OffloadModule::kMlpNorm)) moved += b.seq_in * e;
  if (off.has(OffloadModule::kExpertFc1) && !rc.moe) moved += b.expert_fc1_in;
  if (off.has(OffloadModule::kMoeAct) && !rc.moe) moved += b.expert_fc1_out;
  return std::min(total, moved * std::clamp(off.fraction, 0.0, 1.0));
}

// Megatron captures a layer (cuda_graphs.py _layer_is_graphable, HO10) when no module is named,
// or when a named module is in it: attn (a self-attention layer), mlp (a dense MLP), moe,
// moe_router or moe_preprocess (an MoE layer), mamba.
bool layer_graphed(const CudaGraphs& g, const LayerSpec& layer) {
  if (g.has(CudaGraphModule::kLayer)) return true;
  if (g.has(CudaGraphModule::kAttn) && layer.has_attention()) return true;
  if (g.has(CudaGraphModule::kMamba) && layer.has_mamba()) return true;
  if (!layer.has_ffn()) return false;
  if (!layer.is_moe) return g.has(CudaGraphModule::kMlp);
  return g.has(CudaGraphModule::kMoe) || g.has(CudaGraphModule::kMoeRouter) ||
         g.has(CudaGraphModule::kMoePreprocess);
}

// TE's make_graphed_callables holds each captured (layer, microbatch)'s sample inputs as the
// graph's static input surface and copies the previous layer's output into them on replay (HO11);
// Megatron reuses a set only once its microbatch's backward has run (HO10 _get_sample_arguments),
// so one set is held per microbatch in flight, on top of what eager holds. The set
// (GraphableMegatronModule / TransformerLayer get_layer_static_inputs): the bf16 hidden states [s /
// cp (/ tp with SP), b, h] (h x streams with hyper-connections) and, when attention is captured, a
// boolean causal mask [b, 1, s / cp, s]. The local implementation aliases the previous graph's
// output instead (no copy); a full-iteration graph has no per-layer inputs.
double cuda_graph_input_bytes(const JobSpec& job, const Geometry& geo, const LayerSpec& layer) {
  const CudaGraphs& g = job.runtime.cuda_graphs;
  if (g.full_iteration || g.impl != CudaGraphImpl::kTransformerEngine || g.modules == 0 ||
      !layer_graphed(g, layer)) {
    return 0.0;
  }
  constexpr double kBf16 = 2.0;
  double bytes = geo.tokens * geo.h / geo.sp * kBf16 * std::max(1, job.model.hc_mult);
  const bool attn_captured = g.has(CudaGraphModule::kLayer) || g.has(CudaGraphModule::kAttn);
  if (attn_captured && layer.has_attention()) {
    const double seq = static_cast<double>(job.runtime.seq_length);
    bytes += geo.tokens * seq;  // one byte per (query, key) pair
  }
  return bytes;
}

LayerActivation layer_act(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                          const LayerSpec& layer, bool upper, const MemoryOptions& options) {
  LayerActBytes b;
  b.seq_in = geo.tokens * geo.h / geo.sp;
  LayerActivation out;
  // With hyper-connections the layer input is the K-stream residual.
  out.input_bytes = b.seq_in * geo.e * std::max(1, job.model.hc_mult);
  attention_block_act(job, geo, rc, layer, b);
  double masks = 0.0;  // a bias-dropout-add mask per sublayer
  const double sublayers =
      (layer.has_ffn() ? 1.0 : 0.0) +
      (layer.has_attention() || layer.has_mamba() || layer.has_linear_attention() ? 1.0 : 0.0);
  if (job.model.hidden_dropout > 0.0) masks += sublayers * b.seq_in;
  ffn_block_act(job, geo, rc, layer, upper, options, b);
  out.norms_bytes = b.norms;
  out.attention_bytes = b.attn;
  out.core_attn_bytes = b.core;
  out.mlp_bytes = b.mlp;
  out.moe_bytes = b.moe;
  out.shared_expert_bytes = b.shared;
  out.dropout_mask_bytes = masks;
  out.hyper_bytes = hyper_act_per_sublayer(job, geo) * sublayers;
  out.total_bytes = b.norms + b.attn + b.core + b.mlp + b.moe + b.shared + masks + out.hyper_bytes;
  out.offloaded_bytes = offloaded_act(job, geo, rc, b, out.total_bytes);
  out.total_bytes -= out.offloaded_bytes;
  out.w_retained_bytes = b.w_io;
  out.largest_temporary_bytes = b.largest_tmp;
  out.cuda_graph_input_bytes = cuda_graph_input_bytes(job, geo, layer);
  return out;
}

// Per-op selective checkpointing (model/recompute_policy.h) keeps the block input, the saved
// matmul outputs (row-parallel ones at full width, before their reduction), the attention output
// and logsumexp, and the reduce-scatter and all-to-all outputs. `full`: the block's saved set
// without recomputation, re-materialised one block at a time in the backward.
LayerActivation layer_act_op_policy(const JobSpec& job, const Geometry& geo, const LayerSpec& layer,
                                    bool upper, const MemoryOptions& options,
                                    const LayerActivation& full) {
  const double T = geo.tokens, h = geo.h, t = geo.t, sp = geo.sp, e = geo.e;
  const double budget = job.runtime.recompute.memory_budget;
  if (budget >= 0.0) {
    // A compiler's memory budget: the block input plus that share of the rest (model/job.h).
    LayerActivation out = full;
    const double input = T * h * e / sp;
    out.total_bytes = input + budget * std::max(0.0, full.total_bytes - input);
    out.full_bytes = full.total_bytes;
    return out;
  }
  const OpPolicySaved s = op_policy_saved(layer, job.runtime.precision);
  const AttentionSpec& a = layer.attention;
  const double heads = a.num_heads;
  double attn = 0.0;
  if (a.kind == AttentionKind::kMla) {
    const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    attn = s.q_proj * heads * qk / t + s.q_down * a.q_lora_rank + s.q_up * heads * qk / t +
           s.kv_down * (a.kv_lora_rank + a.qk_pos_emb_head_dim) +
           s.kv_up * heads * (a.qk_head_dim + a.v_head_dim) / t + heads * a.v_head_dim / t;
  } else {
    const double q_w = heads * a.head_dim;
    const double kv_rank =
        static_cast<double>(job.parallel.kv_heads_per_rank(a.num_query_groups) * a.head_dim);
    attn = s.qkv * (q_w / t + 2.0 * kv_rank) + q_w / t;
  }
  attn = attn * T * e + s.out_proj * T * h * e;
  const PrecisionSpec& prec = job.runtime.precision;
  const bool fp8 = prec.fp8 != Fp8Recipe::kNone && prec.fp8_dense;
  if (fp8) {
    // No scaled_mm output is saved; the partitioner keeps the quantized inputs of the linears
    // (the normed block input shared by the projections, and the MLP's inner activation).
    attn += T * h * geo.g / sp;
  }
  const double reduce_scatter = t > 1.0 && sp > 1.0 ? T * h * e / sp : 0.0;
  double mlp = 0.0, moe = 0.0, shared = 0.0;
  if (!layer.is_moe) {
    const double f = static_cast<double>(layer.mlp.ffn_hidden_size);
    mlp = (s.fc1 * (layer.mlp.gated ? 2.0 : 1.0) * f / t + s.fc2 * h) * T * e + reduce_scatter;
    if (fp8) mlp += T * (h / sp + f / t) * geo.g;
  } else {
    if (job.parallel.ep > 1) moe = 2.0 * expert_tokens(job, layer, geo, upper, options) * h * e;
    const double f = static_cast<double>(layer.moe.shared_expert_ffn_hidden_size);
    if (f > 0.0) {
      shared = (s.shared_fc1 * (layer.mlp.gated ? 2.0 : 1.0) * f / t + s.shared_fc2 * h) * T * e +
               reduce_scatter;
    }
  }
  LayerActivation out = full;
  out.norms_bytes = T * h * e / sp;  // the block input
  out.attention_bytes = attn + reduce_scatter;
  out.core_attn_bytes = full.core_attn_bytes;
  out.mlp_bytes = mlp;
  out.moe_bytes = moe;
  out.shared_expert_bytes = shared;
  out.dropout_mask_bytes = 0.0;
  out.total_bytes =
      out.norms_bytes + out.attention_bytes + out.core_attn_bytes + mlp + moe + shared;
  out.full_bytes = full.total_bytes;
  return out;
}

LayerActivation layer_act_full(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                               const LayerSpec& layer, bool upper, const MemoryOptions& options) {
  LayerActivation out = layer_act(job, geo, rc, layer, upper, options);
  if (job.runtime.recompute.granularity == RecomputeGranularity::kOpPolicy) {
    return layer_act_op_policy(job, geo, layer, upper, options, out);
  }
  // The saved set with no recompute at all: the working set a recompute re-materialises.
  const bool any = rc.core_attn || rc.mlp || rc.moe || rc.moe_act || rc.layernorm ||
                   rc.mla_up_proj || rc.shared_experts;
  out.full_bytes = any ? layer_act(job, geo, SelectiveSet{}, layer, upper, options).total_bytes
                       : out.total_bytes;
  return out;
}

void consider_transient(ChunkActivation& c, double bytes, const char* source) {
  if (bytes > c.transient) {
    c.transient = bytes;
    c.transient_source = source;
  }
}

bool in_layer_ids(const RecomputeSpec& rc, int layer) {
  for (int id : rc.layer_ids) {
    if (id == layer) return true;
  }
  return false;
}

// The logits the loss keeps for its backward (fp32 softmax without fusion, params dtype with
// fusion) over `tokens`.
double loss_logits_bytes(const JobSpec& job, double tokens, const Geometry& geo,
                         double vocab_local) {
  return tokens * vocab_local * (job.runtime.cross_entropy_fusion ? geo.e : 4.0);
}

// Saved bytes of a head for one microbatch: final norm input, output-layer input, the logits
// kept by the loss. The main head's vocab-tiled loss (RuntimeSpec::vocab_tiles; `main_head`)
// keeps no logits: its backward recomputes them tile by tile (vocab_tile_bytes). MaxText's MTP
// heads compute their full logits (multi_token_prediction.py:460).
// A loss that computes its gradients in the forward (RuntimeSpec::loss_grad_in_forward) keeps the
// input gradient in place of the head's input and an fp32 weight gradient (FLA's fused linear
// cross entropy accumulates it in fp32).
double output_head_bytes(const JobSpec& job, const Geometry& geo, double vocab_local,
                         bool main_head) {
  const double seq_in = geo.tokens * geo.h / geo.sp;
  const bool tiled = main_head && job.runtime.vocab_tiles > 1;
  const double logits = tiled ? 0.0 : loss_logits_bytes(job, geo.tokens, geo, vocab_local);
  const double weight_grad =
      tiled && job.runtime.loss_grad_in_forward ? vocab_local * geo.h * 4.0 : 0.0;
  return 2.0 * seq_in * geo.e + logits + weight_grad;
}

// One tile's logits, live while a vocab-tiled loss runs (forward and backward); 0 untiled.
double vocab_tile_bytes(const JobSpec& job, const Geometry& geo, double vocab_local) {
  if (job.runtime.vocab_tiles <= 1) return 0.0;
  return loss_logits_bytes(job, geo.tokens / job.runtime.vocab_tiles, geo, vocab_local);
}

// The embedding's dropout mask, the output head's saved tensors and loss temporaries, and the MTP
// modules' of one chunk, for one microbatch.
void add_head_activations(const JobSpec& job, const Geometry& geo, const VirtualStage& st,
                          const LayerActivation& mtp_act, double vocab_local, ChunkActivation& c) {
  const double seq_in = geo.tokens * geo.h / geo.sp;
  if (st.has_embedding && job.model.hidden_dropout > 0.0) c.per_microbatch += seq_in;  // mask
  // Loss temporaries beside the saved logits. Megatron's vocab-parallel loss writes its gradient
  // into the saved fp32 softmax and a fused loss keeps none: the params-dtype logits (forward) /
  // their grad (backward). torch.nn.functional.cross_entropy runs as log_softmax + nll_loss under
  // autograd: its forward holds the params-dtype logits and their fp32 copy, its backward
  // nll_loss's dense fp32 gradient and log_softmax's new fp32 gradient (8 bytes per logit).
  const bool compiled = job.runtime.whole_step_compiled;
  const bool own_grad = !(job.runtime.loss_grad_in_place || job.runtime.cross_entropy_fusion);
  const double logits_tmp =
      compiled ? 0.0 : geo.tokens * vocab_local * (own_grad ? std::max(geo.e + 4.0, 8.0) : geo.e);
  if (st.has_output) {
    const double head = output_head_bytes(job, geo, vocab_local, true);
    c.per_microbatch += head;
    // The head's saved tensors are freed by the loss and output-layer backward (a compiled step
    // at their last use, eager autograd as each node's backward completes), before any layer's
    // backward or recompute builds its working set: the two peaks do not add.
    c.transient = std::max(0.0, c.transient - head);
    c.transient_floor = std::max(0.0, c.transient_floor - head);
    // A vocab-tiled loss never holds the whole logits: one tile's at a time.
    if (job.runtime.vocab_tiles <= 1) {
      // Upcast from a narrower params dtype: the allocator sees the chain (EagerLossChain).
      if (own_grad && !compiled && geo.e < 4.0) {
        c.loss = {geo.tokens * vocab_local * geo.e, geo.tokens * vocab_local * 4.0, c.transient};
      }
      consider_transient(c, logits_tmp, "logits and loss backward");
    }
    consider_transient(c, vocab_tile_bytes(job, geo, vocab_local), "vocab tile logits");
  }
  for (int k = 0; k < st.mtp_layers; ++k) {
    // MTP module: enorm/hnorm inputs, eh_proj input (2h), one layer, its own head and loss.
    c.per_microbatch += mtp_act.total_bytes + 2.0 * seq_in * geo.e + 2.0 * seq_in * geo.g +
                        output_head_bytes(job, geo, vocab_local, false);
    c.w_retained += mtp_act.w_retained_bytes;
    consider_transient(c, logits_tmp, "logits and loss backward");
  }
}

// Attention residuals (ModelSpec::attn_res_block_size; Kimi-K3 kimi_k3_block.py:457-550,
// attn_res_kernels/_eager/reference.py:88-102), decoder layer i. Checkpoints on entry:
// ceil(i / B); layer i appends one when i % B == 0, after its pre-attention mixer. Each eager mixer
// keeps fp32 copies of its candidates (the checkpoints and the running stream) and of their
// normalised values for its backward: 8 bytes per candidate element. A checkpointed layer
// (full recompute) keeps the stream and the checkpoints it was given.
double attn_res_bytes(const JobSpec& job, const Geometry& geo, int i, bool checkpointed) {
  const int block = job.model.attn_res_block_size;
  if (block <= 0) return 0.0;
  const double seq_in = geo.tokens * geo.h / geo.sp;
  const int nb_in = (i + block - 1) / block;
  if (checkpointed) return nb_in * seq_in * geo.e;
  const int nb_mlp = nb_in + (i % block == 0 ? 1 : 0);
  const int candidates = (i >= 1 ? nb_in + 1 : 0) + nb_mlp + 1;
  return 8.0 * candidates * seq_in;
}

ChunkActivation chunk_activation(const JobSpec& job, const Geometry& geo, const VirtualStage& st,
                                 LayerActCache& acts, const LayerActivation& mtp_act,
                                 double vocab_local, std::vector<double>* blocks) {
  const RecomputeSpec& rc = job.runtime.recompute;
  const bool full = rc.granularity == RecomputeGranularity::kFull;
  const bool block = rc.method == RecomputeMethod::kBlock;
  const int group = std::max(1, rc.num_layers);
  // distribute_saved_activations: each rank keeps 1 / tp of a checkpoint's hidden states.
  const double split = rc.distribute_saved ? geo.t : 1.0;
  ChunkActivation c;
  const int first = std::max(0, st.first_layer);
  const int last = std::min(job.model.num_layers(), st.first_layer + st.num_layers);
  double group_work = 0.0;
  if (blocks != nullptr) blocks->clear();
  for (int i = first; i < last; ++i) {
    const double before = c.per_microbatch;
    const LayerSpec& spec = job.model.layers[static_cast<std::size_t>(i)];
    const PrecisionSpec& prec = job.runtime.precision;
    LayerActivation unquantized;
    const LayerActivation& la =
        prec.quantized_gemms() && !prec.layer_quantized(i, job.model.num_layers())
            ? (unquantized = acts.get_unquantized(spec))
            : acts.get(spec);
    const int j = i - first;
    consider_transient(c, la.largest_temporary_bytes, "largest layer temporary");
    if (j < job.runtime.offload.layers) {
      // Layer-level offloading (cpu_offloading, MG2 model_parallel_config.py:458-475): every
      // saved tensor of the layer lives in host memory; one layer's worth is reloaded ahead of
      // its backward.
      consider_transient(c, la.total_bytes + la.largest_temporary_bytes, "offload reload buffer");
    } else if (rc.granularity == RecomputeGranularity::kTensors) {
      // Per-tensor policy: the device-kept tensors the backward reads; the backward replays the
      // rest of one layer at a time on top of them.
      const LayerSpec& layer = job.model.layers[static_cast<std::size_t>(i)];
      double kept = 0.0;
      for (int t = 0; t < kNumLayerTensors; ++t) {
        const auto lt = static_cast<LayerTensor>(t);
        if (rc.tensors.on_device(lt) && layer_tensor_needed(layer, lt)) {
          kept += layer_tensor_bytes(job, layer, lt);
        }
      }
      c.per_microbatch += kept;
      consider_transient(c, std::max(0.0, la.full_bytes - kept) + la.largest_temporary_bytes,
                         "rematerialisation working set (1 layer)");
      double named = 0.0;
      for (int t = 0; t < kNumLayerTensors; ++t) {
        const auto lt = static_cast<LayerTensor>(t);
        if (layer_tensor_needed(layer, lt)) named += layer_tensor_bytes(job, layer, lt);
      }
      c.transient_floor =
          std::max(c.transient_floor, std::min(la.full_bytes, named) - std::min(kept, named) +
                                          la.largest_temporary_bytes);
    } else if (in_layer_ids(rc, i) || (full && block && j < rc.num_layers)) {
      // Checkpointed: only the layer input (and any attention-residual checkpoints).
      c.per_microbatch += la.input_bytes / split + attn_res_bytes(job, geo, i, true);
      // The replayed layer rebuilds its mixers' saved tensors too.
      consider_transient(
          c, la.full_bytes + attn_res_bytes(job, geo, i, false) + la.largest_temporary_bytes,
          "recompute working set (1 layer)");
    } else if (full && !block) {
      // Uniform: groups of `group` layers keep the group input; backward re-materialises a group.
      if (j % group == 0) {
        c.per_microbatch += la.input_bytes / split + attn_res_bytes(job, geo, i, true);
        group_work = 0.0;
      }
      group_work += la.full_bytes;
      consider_transient(c, group_work + la.largest_temporary_bytes,
                         "recompute working set (group)");
    } else {
      c.per_microbatch += la.total_bytes + attn_res_bytes(job, geo, i, false);
      c.w_retained += la.w_retained_bytes;
      if (la.full_bytes > la.total_bytes) {
        consider_transient(c, la.full_bytes - la.total_bytes + la.largest_temporary_bytes,
                           "selective recompute working set");
      }
    }
    c.per_microbatch += la.cuda_graph_input_bytes;
    if (blocks != nullptr) blocks->push_back(c.per_microbatch - before);
  }
  const double before_head = c.per_microbatch;
  add_head_activations(job, geo, st, mtp_act, vocab_local, c);
  if (blocks != nullptr && c.per_microbatch > before_head) {
    // The eager loss's saved log-softmax last, so the replay can place the chain around it.
    const double log_softmax = c.loss.present() ? c.loss.upcast_bytes : 0.0;
    const double rest = c.per_microbatch - before_head - log_softmax;
    if (rest > 0.0) blocks->push_back(rest);
    if (log_softmax > 0.0) blocks->push_back(log_softmax);
  }
  const bool compiled = job.runtime.whole_step_compiled;
  c.transient_floor = compiled ? std::min(c.transient, c.transient_floor) : c.transient;
  return c;
}

}  // namespace projector::memory_detail

namespace projector {

LayerActivation layer_activation(const JobSpec& job, const LayerSpec& layer, bool upper,
                                 const MemoryOptions& options) {
  return memory_detail::layer_act_full(job, memory_detail::geometry(job),
                                       memory_detail::selective_set(job.runtime.recompute), layer,
                                       upper, options);
}

}  // namespace projector
