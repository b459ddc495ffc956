// Memory projection. Notation: T = tokens of one microbatch on one CP rank (mbs x seq / cp),
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
#include "projector/memory/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <string>

#include "memory/recsys.h"
#include "memory/remedies.h"
#include "projector/model/accounting.h"
#include "projector/model/recompute_policy.h"
#include "projector/util/error.h"

namespace projector {
namespace {

bool has_module(const RecomputeSpec& r, RecomputeModule m) {
  return r.granularity == RecomputeGranularity::kSelective && r.modules.has(m);
}

// Selective-recompute modules, resolved once per projection.
struct SelectiveSet {
  bool core_attn = false, mlp = false, moe = false, moe_act = false, layernorm = false,
       mla_up_proj = false, shared_experts = false;
};

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

// fp8 weight copies kept for the step per GEMM weight: the quantised weight and its transpose
// (columnwise copy) for the backward GEMMs.
double fp8_weight_copy_bytes(const PrecisionSpec& p) {
  if (!p.quantized_gemms()) return 0.0;
  const double one = gemm_input_bytes(p);
  // fp8_param: the weight itself is the rowwise copy; the transposed copy unless not kept.
  return (p.fp8_param ? 0.0 : one) + (p.fp8_transpose_cached ? one : 0.0);
}

struct Geometry {
  double tokens = 0.0;  // T
  double h = 0.0;
  double t = 1.0;
  double sp = 1.0;
  double e = 2.0;
  double g = 2.0;
  double g_expert = 2.0;   // g of the routed-expert GEMMs (PrecisionSpec::fp8_experts)
  double seq_local = 0.0;  // s / cp
  double mbs = 1.0;
};

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

}  // namespace

std::string_view to_string(MemoryComponent c) {
  switch (c) {
    case MemoryComponent::kWeights:
      return "weights";
    case MemoryComponent::kFp8WeightCopies:
      return "fp8_weight_copies";
    case MemoryComponent::kGradients:
      return "gradients";
    case MemoryComponent::kMasterWeights:
      return "master_weights";
    case MemoryComponent::kOptimizerStates:
      return "optimizer_states";
    case MemoryComponent::kFsdpUnsharded:
      return "fsdp_unsharded";
    case MemoryComponent::kActivations:
      return "activations";
    case MemoryComponent::kTransient:
      return "transient";
    case MemoryComponent::kWorkspace:
      return "workspace";
    case MemoryComponent::kFragmentation:
      return "fragmentation";
    case MemoryComponent::kRuntimeContext:
      return "runtime_context";
    case MemoryComponent::kCommBuffers:
      return "comm_buffers";
    case MemoryComponent::kCount:
      break;
  }
  return "?";
}

bool in_caching_allocator(MemoryComponent c) {
  return c != MemoryComponent::kRuntimeContext && c != MemoryComponent::kCommBuffers;
}

std::string_view to_string(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::kFits:
      return "FITS";
    case MemoryVerdict::kAtRisk:
      return "AT RISK";
    case MemoryVerdict::kOom:
      return "OOM";
    case MemoryVerdict::kUnknown:
      return "UNKNOWN";
  }
  return "?";
}

double InFlight::total_chunk_microbatches() const {
  double s = 0.0;
  for (double c : per_chunk) s += c;
  for (double c : w_only_per_chunk) s += c;
  return s;
}

int virtual_stage_index(ScheduleKind schedule, int pp, int pp_rank, int chunk) {
  if (is_v_shape(schedule)) return chunk == 0 ? pp_rank : 2 * pp - 1 - pp_rank;
  return chunk * pp + pp_rank;
}

namespace {
InFlight to_in_flight(const schedule::InFlightProfile& profile, int rank, int state) {
  InFlight f;
  const std::span<const int> full = profile.full(rank, state);
  const std::span<const int> w_only = profile.w_only(rank, state);
  f.per_chunk.assign(full.begin(), full.end());
  f.w_only_per_chunk.assign(w_only.begin(), w_only.end());
  for (const double w : f.w_only_per_chunk) f.w_only += w;
  return f;
}
}  // namespace

InFlight in_flight_microbatches(ScheduleKind schedule, int pp, int vpp, int pp_rank,
                                int num_microbatches, schedule::InFlightCache* cache) {
  const schedule::ScheduleSelection sel = schedule::select_schedule(schedule, pp, vpp, false);
  const schedule::ScheduleRequest request{sel.algorithm, pp, vpp, num_microbatches};
  if (cache != nullptr) {
    const schedule::InFlightProfile& p = cache->get(request);
    return to_in_flight(p, pp_rank, p.peak_state(pp_rank));
  }
  const schedule::InFlightProfile p(schedule::build_schedule(request));
  return to_in_flight(p, pp_rank, p.peak_state(pp_rank));
}

namespace {

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

LayerActivation layer_act(const JobSpec& job, const Geometry& geo, const SelectiveSet& rc,
                          const LayerSpec& layer, bool upper, const MemoryOptions& options) {
  const AttentionSpec& a = layer.attention;
  const double T = geo.tokens, h = geo.h, t = geo.t, sp = geo.sp, e = geo.e, g = geo.g;
  const PrecisionSpec& pr = job.runtime.precision;
  // Quantised inputs of the dense GEMMs (fp8 when the recipe covers them, fp4 on every linear).
  const bool fp8 = (pr.fp8 != Fp8Recipe::kNone && pr.fp8_dense) || pr.fp4 != Fp4Recipe::kNone;
  const bool flash = job.runtime.flash_attention;
  const double heads = a.num_heads;
  LayerActivation out;
  double w_io = 0.0;  // inputs + output grads of the weight GEMMs (zero-bubble W set)
  double largest_tmp = 0.0;

  const double seq_in = T * h / sp;  // one residual-stream tensor, elements
  // With hyper-connections the layer input is the K-stream residual.
  out.input_bytes = seq_in * e * std::max(1, job.model.hc_mult);

  // ---------------------------------------------------------------- attention block
  double norms = 0.0;  // norm inputs
  double attn = 0.0;   // projections: inputs and Q/K/V (a Mamba mixer's saved tensors)
  double core = 0.0;   // s^2 terms or logsumexp
  double qkv = 0.0;    // Q, K, V (dropped by mla_up_proj)
  double proj_in = 0.0;
  double ln_out_attn = 0.0;  // GEMM input produced by the input norm (dropped by "layernorm")
  if (layer.has_mamba()) {
    norms += seq_in * e;  // input norm input
    mamba_act(geo, layer.mamba, rc.layernorm, attn, ln_out_attn, w_io, largest_tmp);
  }
  if (layer.has_linear_attention() && layer.linear.short_conv()) {
    short_conv_act(geo, layer.linear, attn, w_io, largest_tmp);
  } else if (layer.has_linear_attention()) {
    norms += seq_in * e;  // input norm input
    linear_attention_act(geo, layer.linear, rc.layernorm, attn, ln_out_attn, w_io, largest_tmp);
  }
  if (layer.has_attention()) {
    norms += seq_in * e;  // input norm input
    if (a.kind == AttentionKind::kCompressed) {
      const CompressedAct x = compressed_attention_act(geo, a);
      ln_out_attn = seq_in * g;  // q_down, kv and the compressor read the normed input
      norms += x.norms;
      attn += x.latents;
      qkv = x.qkv;
      proj_in = x.proj_in;
      w_io += ln_out_attn + x.w_io;
      largest_tmp = std::max(largest_tmp, x.largest_tmp);
    } else if (a.kind == AttentionKind::kMla) {
      const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
      // Down-projection input (shared by q_down and kv_down; fp8 quantises it once per GEMM).
      ln_out_attn = seq_in * g * (fp8 && a.q_lora_rank > 0 ? 2.0 : 1.0);
      double latents = 0.0;
      if (a.q_lora_rank > 0) {
        norms += T * a.q_lora_rank * e / sp;  // q latent norm input
        latents += T * a.q_lora_rank * g;     // q_up input (gathered, duplicated down-proj)
      }
      norms += T * a.kv_lora_rank * e / sp;  // kv latent norm input
      latents += T * a.kv_lora_rank * g;     // kv_up input
      attn += latents;
      qkv = T * heads * (2.0 * qk + a.v_head_dim) * e / t;
      // Kimi-K3's output gate keeps its fp32 gate and the ungated core output.
      if (a.output_gate) qkv += T * heads * a.v_head_dim * (4.0 + e) / t;
      proj_in = T * heads * a.v_head_dim * g / t;
      w_io += ln_out_attn + latents + T * (a.q_lora_rank + a.kv_lora_rank) * e + qkv + proj_in +
              seq_in * e;
    } else {
      const double q_w = heads * a.head_dim;
      // KV heads on this rank (ceil: XLA pads an axis the TP does not divide; exact otherwise).
      const double kv_rank =
          static_cast<double>(job.parallel.kv_heads_per_rank(a.num_query_groups) * a.head_dim);
      ln_out_attn = seq_in * g;
      qkv = T * (q_w / t + 2.0 * kv_rank) * e;
      if (a.qk_layernorm) norms += T * (q_w / t + kv_rank) * e;
      // The output gate keeps the gate and the ungated core output for its backward.
      if (a.output_gate) qkv += 2.0 * T * q_w * e / t;
      proj_in = T * q_w * g / t;
      w_io += ln_out_attn + qkv + proj_in + seq_in * e;
    }
    // DeepSeek-V4 attention runs its own fused kernels whatever the flash setting.
    if (flash || a.kind == AttentionKind::kCompressed) {
      core = geo.mbs * heads * geo.seq_local * 4.0 / t;  // fp32 logsumexp per head and query
    } else {
      const double s2 = geo.mbs * heads * geo.seq_local * geo.seq_local / t;
      core = s2 * e;                                                  // softmax output
      if (job.model.attention_dropout > 0.0) core += s2 * (1.0 + e);  // mask + dropout output
      largest_tmp = std::max(largest_tmp, s2 * 4.0);                  // fp32 softmax grad
    }
    if (rc.core_attn) core = 0.0;  // Q, K, V stay as the checkpoint's inputs
    if (rc.mla_up_proj && a.kind == AttentionKind::kMla) qkv = 0.0;
    if (rc.layernorm) ln_out_attn = 0.0;
    attn += qkv + proj_in + ln_out_attn;
  }

  double masks = 0.0;  // a bias-dropout-add mask per sublayer
  const double sublayers =
      (layer.has_ffn() ? 1.0 : 0.0) +
      (layer.has_attention() || layer.has_mamba() || layer.has_linear_attention() ? 1.0 : 0.0);
  if (job.model.hidden_dropout > 0.0) masks += sublayers * seq_in;

  // ---------------------------------------------------------------- MLP / MoE block
  double mlp = 0.0, moe = 0.0, shared = 0.0;
  double expert_fc1_in = 0.0, expert_fc1_out = 0.0;  // for module-level offloading
  const bool drop_ln_mlp = rc.layernorm;
  auto dense_mlp = [&](double ffn, bool recompute_all) {
    const double up = layer.mlp.gated ? 2.0 * ffn : ffn;
    // What the activation keeps: the fc1 output, or a GLU's own saved set (situ: six fp32 tensors).
    const double act_in = layer.mlp.gated
                              ? T * ffn * glu_saved_bytes_per_element(layer.mlp.activation, e) / t
                              : T * up * e / t;
    const double fc2_in = T * ffn * g / t;
    w_io += act_in + fc2_in + seq_in * e;  // fc1 output grad ~ act_in, fc2 input + output grad
    largest_tmp = std::max(largest_tmp, act_in);
    return recompute_all ? 0.0 : act_in + fc2_in;
  };
  if (!layer.has_ffn()) {
    // no MLP / MoE sublayer (hybrid attention or Mamba layer)
  } else if (!layer.is_moe) {
    norms += seq_in * e;  // pre-MLP norm input
    const double fc1_in = drop_ln_mlp ? 0.0 : seq_in * g;
    w_io += seq_in * g;
    if (rc.mlp) {
      mlp = seq_in * e + dense_mlp(static_cast<double>(layer.mlp.ffn_hidden_size), true);
    } else {
      mlp = fc1_in + dense_mlp(static_cast<double>(layer.mlp.ffn_hidden_size), false);
    }
  } else {
    norms += seq_in * e;  // pre-MLP norm input
    const MoeSpec& m = layer.moe;
    const double router_in = drop_ln_mlp ? 0.0 : seq_in * e;    // LN output: router + dispatch
    const double probs = T * m.num_experts * (4.0 + 1.0) / sp;  // fp32 probs + routing map
    const double te = expert_tokens(job, layer, geo, upper, options);
    const double etp = std::max(1, job.parallel.etp);
    const double fe = static_cast<double>(m.expert_ffn_hidden_size);
    const double up_e = layer.mlp.gated ? 2.0 * fe : fe;
    // The experts and the dispatch work in the latent width when moe_latent_size is set; the
    // latent projections keep their inputs (the router input and the combined latent output).
    const double w = m.latent_size > 0 ? static_cast<double>(m.latent_size) : h;
    // A latent norm (Kimi-K3) keeps its input besides the up-projection's.
    const double latent = m.latent_size > 0 ? (m.latent_norm ? 2.0 : 1.0) * T * w * e / sp : 0.0;
    const double ge = geo.g_expert;
    const double fc1_in = te * w * ge;
    const double fc1_out =
        layer.mlp.gated ? te * fe / etp * glu_saved_bytes_per_element(layer.mlp.activation, e)
                        : te * up_e / etp * e;
    const double fc2_in = rc.moe_act ? 0.0 : te * fe / etp * ge;
    // Kept for the probability gradient: the experts' output when the combine scales it, or only
    // the permuted fp32 probabilities when the experts' weighted activation applies them.
    const double combine =
        job.runtime.moe_probs_in_experts ? te / etp * 4.0 : T * m.topk * w * e / sp;
    moe = router_in + probs + fc1_in + fc1_out + fc2_in + combine + latent;
    expert_fc1_in = fc1_in;
    expert_fc1_out = fc1_out;
    w_io += fc1_in + fc1_out + te * fe / etp * ge + te * w * e;
    // Dispatch: permuted send buffer + received tokens; backward: fc1-output grad. The allgather
    // dispatcher gathers every token of the ETP x EP group into one buffer (MG8
    // token_dispatcher.py:299-301).
    double dispatch_tmp = T * m.topk * w * e / sp + te * w * e;
    if (job.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
      dispatch_tmp = T / sp * etp * std::max(1, job.parallel.ep) * w * e + te * w * e;
    }
    largest_tmp = std::max(largest_tmp, std::max(dispatch_tmp, fc1_out));
    // Static worst-case receive buffer and the expert-sorted layout built from it
    // (RuntimeSpec::moe_static_recv_factor), both live while the experts run.
    const double fs = job.parallel.ep > 1 ? job.runtime.moe_static_recv_factor : 0.0;
    if (fs > 0.0) largest_tmp = std::max(largest_tmp, 2.0 * fs * T * m.topk * w * e / sp);
    if (m.shared_expert_ffn_hidden_size > 0) {
      const bool rc_shared = rc.shared_experts;
      shared = dense_mlp(static_cast<double>(m.shared_expert_ffn_hidden_size), rc_shared);
      if (fp8 && !rc_shared) shared += seq_in * g;  // its own quantised copy of the input
    }
    if (rc.moe) {  // the whole MoE block keeps only its input
      moe = seq_in * e;
      shared = 0.0;
    }
  }

  out.norms_bytes = norms;
  out.attention_bytes = attn;
  out.core_attn_bytes = core;
  out.mlp_bytes = mlp;
  out.moe_bytes = moe;
  out.shared_expert_bytes = shared;
  out.dropout_mask_bytes = masks;
  out.hyper_bytes = hyper_act_per_sublayer(job, geo) * sublayers;
  out.total_bytes = norms + attn + core + mlp + moe + shared + masks + out.hyper_bytes;
  // Module-level activation offloading (MG2 transformer_config.py:1323-1361): the inputs of the
  // listed modules go to host memory (the fraction of them Megatron offloads).
  const OffloadSpec& off = job.runtime.offload;
  if (off.modules != 0) {
    double moved = 0.0;
    if (off.has(OffloadModule::kAttnNorm)) moved += seq_in * e;
    if (off.has(OffloadModule::kQkvLinear)) moved += ln_out_attn;
    if (off.has(OffloadModule::kCoreAttn) && !rc.core_attn) moved += qkv;
    if (off.has(OffloadModule::kAttnProj)) moved += proj_in;
    if (off.has(OffloadModule::kMlpNorm)) moved += seq_in * e;
    if (off.has(OffloadModule::kExpertFc1) && !rc.moe) moved += expert_fc1_in;
    if (off.has(OffloadModule::kMoeAct) && !rc.moe) moved += expert_fc1_out;
    out.offloaded_bytes = std::min(out.total_bytes, moved * std::clamp(off.fraction, 0.0, 1.0));
    out.total_bytes -= out.offloaded_bytes;
  }
  out.w_retained_bytes = w_io;
  out.largest_temporary_bytes = largest_tmp;
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

}  // namespace

LayerActivation layer_activation(const JobSpec& job, const LayerSpec& layer, bool upper,
                                 const MemoryOptions& options) {
  return layer_act_full(job, geometry(job), selective_set(job.runtime.recompute), layer, upper,
                        options);
}

namespace {

struct ChunkActivation {
  double per_microbatch = 0.0;  // saved bytes of one microbatch of this chunk
  double w_retained = 0.0;
  double transient = 0.0;
  const char* transient_source = "";
  // The least transient a compiler that rematerialises to the memory limit reaches (XLA's
  // HloRematerialization pass, docs/tpu.md "XLA memory"): the working set of the tensors the
  // backward reads that only a GEMM can produce; cheap elementwise outputs (norms, activations,
  // residual sums) are recomputed next to their consumer. Equals `transient` without it.
  double transient_floor = 0.0;
};

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

// Per-layer activations, computed once per run of identically shaped layers.
struct LayerActCache {
  const JobSpec* job = nullptr;
  const Geometry* geo = nullptr;
  const SelectiveSet* sel = nullptr;
  const MemoryOptions* options = nullptr;
  bool upper = false;
  const LayerSpec* layer = nullptr;
  LayerActivation act;

  const LayerActivation& get(const LayerSpec& l) {
    if (layer == nullptr || !same_layer_shape(*layer, l)) {
      act = layer_act_full(*job, *geo, *sel, l, upper, *options);
      layer = &l;
    }
    return act;
  }
};

// The embedding's dropout mask, the output head's saved tensors and loss temporaries, and the MTP
// modules' of one chunk, for one microbatch.
void add_head_activations(const JobSpec& job, const Geometry& geo, const VirtualStage& st,
                          const LayerActivation& mtp_act, double vocab_local, ChunkActivation& c) {
  const double seq_in = geo.tokens * geo.h / geo.sp;
  if (st.has_embedding && job.model.hidden_dropout > 0.0) c.per_microbatch += seq_in;  // mask
  // Loss temporaries: the params-dtype logits (forward) / their grad (backward), plus a new fp32
  // grad when the loss does not reuse its saved softmax.
  const bool compiled = job.runtime.whole_step_compiled;
  const double logits_tmp =
      compiled
          ? 0.0
          : geo.tokens * vocab_local *
                (geo.e +
                 (job.runtime.loss_grad_in_place || job.runtime.cross_entropy_fusion ? 0.0 : 4.0));
  if (st.has_output) {
    const double head = output_head_bytes(job, geo, vocab_local, true);
    c.per_microbatch += head;
    // The head's saved tensors are freed by the loss and output-layer backward (a compiled step
    // at their last use, eager autograd as each node's backward completes), before any layer's
    // backward or recompute builds its working set: the two peaks do not add.
    c.transient = std::max(0.0, c.transient - head);
    c.transient_floor = std::max(0.0, c.transient_floor - head);
    // A vocab-tiled loss never holds the whole logits: one tile's at a time.
    if (job.runtime.vocab_tiles <= 1) consider_transient(c, logits_tmp, "logits and loss backward");
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
                                 double vocab_local) {
  const RecomputeSpec& rc = job.runtime.recompute;
  const bool full = rc.granularity == RecomputeGranularity::kFull;
  const bool block = rc.method == RecomputeMethod::kBlock;
  const int group = std::max(1, rc.num_layers);
  ChunkActivation c;
  const int first = std::max(0, st.first_layer);
  const int last = std::min(job.model.num_layers(), st.first_layer + st.num_layers);
  double group_work = 0.0;
  for (int i = first; i < last; ++i) {
    const LayerActivation& la = acts.get(job.model.layers[static_cast<std::size_t>(i)]);
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
      c.per_microbatch += la.input_bytes + attn_res_bytes(job, geo, i, true);
      // The replayed layer rebuilds its mixers' saved tensors too.
      consider_transient(
          c, la.full_bytes + attn_res_bytes(job, geo, i, false) + la.largest_temporary_bytes,
          "recompute working set (1 layer)");
    } else if (full && !block) {
      // Uniform: groups of `group` layers keep the group input; backward re-materialises a group.
      if (j % group == 0) {
        c.per_microbatch += la.input_bytes + attn_res_bytes(job, geo, i, true);
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
  }
  add_head_activations(job, geo, st, mtp_act, vocab_local, c);
  const bool compiled = job.runtime.whole_step_compiled;
  c.transient_floor = compiled ? std::min(c.transient, c.transient_floor) : c.transient;
  return c;
}

int communicator_count(const JobSpec& job, bool holds_embedding_or_output, bool has_moe) {
  const ParallelSpec& p = job.parallel;
  int n = 0;
  if (p.tp > 1) ++n;
  if (p.cp > 1) ++n;
  if (job.dp() > 1) ++n;
  if (p.cp > 1 && job.dp() * p.cp > 1) ++n;  // DP x CP group (distributed optimizer, grads)
  if (p.pp > 1) ++n;
  if (p.pp > 1 && holds_embedding_or_output) ++n;  // embedding group (first + last stage)
  if (p.tp * p.pp * p.cp > 1) ++n;                 // model-parallel group (grad norm, loss)
  if (has_moe) {
    if (p.ep > 1) ++n;
    if (p.etp > 1) ++n;
    if (job.expert_dp() > 1) ++n;
  }
  return n;
}

double sum(const ComponentBytes& c) {
  double s = 0.0;
  for (double v : c) s += v;
  return s;
}

using memory_detail::verdict_of;

constexpr std::size_t idx(MemoryComponent c) {
  return static_cast<std::size_t>(c);
}

// Saved bytes of one microbatch per chunk of a rank, point and upper (dropless MoE imbalance).
struct RankChunks {
  std::vector<double> full_upper, w_only_upper;  // all saved activations / W set after a split B
  // (the point sizes go straight to RankMemory::activation_per_chunk_bytes /
  // w_only_per_chunk_bytes)
  double transient_point = 0.0, transient_upper = 0.0;
  double transient_floor = 0.0;  // ChunkActivation::transient_floor of the rank's largest chunk
  bool has_moe = false;
};

// What one projection resolves once and every rank reads.
struct Context {
  Context(const JobSpec& j, const MemoryOptions& o) : job(j), options(o) {}
  const JobSpec& job;
  const MemoryOptions& options;
  int pp = 1;
  int vpp = 1;
  ScheduleKind schedule = ScheduleKind::k1F1B;
  const std::vector<VirtualStage>* stages = nullptr;
  std::optional<schedule::InFlightProfile> own_in_flight;  // when there is no cache
  const schedule::InFlightProfile* in_flight = nullptr;
  Geometry geo;
  SelectiveSet sel;
  LayerActivation mtp_point, mtp_upper;
  bool dropless_moe = false;
  double vocab_local = 0.0;
  // Per-layer activations, shared by every rank (runs of identical layers are computed once).
  LayerActCache cache_point, cache_upper;
  RankChunks chunks;  // the current rank's, reused
};

// Schedule (resolved as the performance projection resolves it), stage layout, microbatches and
// the in-flight states of every rank, with the notes they need.
void resolve_pipeline(Context& cx, MemoryReport& report) {
  const ParallelSpec& par = cx.job.parallel;
  const RuntimeSpec& rt = cx.job.runtime;
  cx.pp = std::max(1, par.pp);
  // Every stated chunk, as the performance projection runs them (the builder bounds PP x VPP).
  cx.vpp = std::max(1, par.vpp);
  const schedule::ScheduleSelection sel =
      schedule::select_schedule(rt.schedule, cx.pp, cx.vpp, false);
  cx.schedule = sel.algorithm;
  report.schedule = sel.algorithm;
  if (rt.schedule == ScheduleKind::kAuto) {
    report.notes.push_back(std::string("schedule auto -> ") + std::string(to_string(cx.schedule)));
  }
  cx.stages = &par.stages;  // check_job_invariants: pp x vpp contiguous stages
  // Each accumulation round is its own flush of the schedule (model/job.h).
  const int m = cx.job.microbatches_per_flush();
  report.num_microbatches = cx.job.num_microbatches();
  schedule::ScheduleRequest request{cx.schedule, cx.pp, cx.vpp, m};
  request.combined_forward_backward = combined_forward_backward(cx.job);
  const schedule::ScheduleTable* given = cx.options.table;
  if (given != nullptr && given->algorithm == cx.schedule && given->pp == cx.pp &&
      given->vpp == cx.vpp && given->microbatches == m &&
      given->combined_forward_backward == request.combined_forward_backward) {
    cx.own_in_flight.emplace(*given);
    cx.in_flight = &*cx.own_in_flight;
  } else if (cx.options.in_flight_cache != nullptr) {
    cx.in_flight = &cx.options.in_flight_cache->get(request);
  } else {
    cx.own_in_flight.emplace(schedule::build_schedule(request));
    cx.in_flight = &*cx.own_in_flight;
  }
}

// Activation geometry, recompute set, MTP layer and the notes on defaults the model applies.
void resolve_activations(Context& cx, MemoryReport& report) {
  const JobSpec& job = cx.job;
  const RecomputeSpec& rc = job.runtime.recompute;
  if (rc.granularity == RecomputeGranularity::kFull && rc.method == RecomputeMethod::kUniform &&
      rc.num_layers < 1) {
    report.notes.push_back("full uniform recompute without recompute_num_layers: 1 layer groups");
  }
  cx.geo = geometry(job);
  report.tokens_per_microbatch = cx.geo.tokens;
  cx.sel = selective_set(rc);
  if (!job.model.layers.empty() && job.model.mtp_num_layers > 0) {
    const LayerSpec& last = job.model.layers.back();
    cx.mtp_point = layer_act_full(job, cx.geo, cx.sel, last, false, cx.options);
    cx.mtp_upper = layer_act_full(job, cx.geo, cx.sel, last, true, cx.options);
  }
  for (const LayerSpec& l : job.model.layers) {
    cx.dropless_moe = cx.dropless_moe || (l.is_moe && l.moe.capacity_factor <= 0.0);
  }
  if (cx.dropless_moe) {
    const double cv = job.runtime.moe_expert_load_cv;
    const std::string point =
        cv > 0.0 ? fmt::format("the busiest EP rank's share for an expert-load CV of {:.2f}", cv)
                 : std::string("balanced routing");
    report.notes.push_back(fmt::format(
        "dropless MoE: point assumes {}; upper assumes the most loaded EP rank gets {:.2f}x the "
        "mean tokens",
        point, cx.options.moe_dropless_imbalance_upper));
  }
  // Without a vocabulary-parallel loss every TP rank holds the gathered, full-width logits.
  cx.vocab_local = static_cast<double>(padded_vocab_size(job.model, job.parallel.tp)) /
                   (job.parallel.vocab_parallel_loss ? std::max(1, job.parallel.tp) : 1);
  cx.cache_point = {&job, &cx.geo, &cx.sel, &cx.options, false, nullptr, {}};
  cx.cache_upper = {&job, &cx.geo, &cx.sel, &cx.options, true, nullptr, {}};
  if (job.parallel.fsdp != FsdpKind::kNone) {
    report.notes.push_back(
        job.parallel.reshard_after_forward
            ? "FSDP window: 2 gathered units (current + prefetched) + 1 unit of unsharded grads"
            : "FSDP window: no reshard after forward, every unit of the rank stays gathered from "
              "its forward to its backward, + 1 unit of unsharded grads");
  }
  if (job.parallel.fsdp == FsdpKind::kFsdp2 && job.runtime.fsdp_param_is_master &&
      optimizer_bytes_per_param(job.runtime).master_bytes > 0) {
    report.notes.push_back(
        "FSDP2 mixed precision: the sharded parameter is the fp32 master copy; the params-dtype "
        "copy exists only while gathered");
  }
  if (job.model.tied_embeddings && cx.pp > 1) {
    report.notes.push_back("tied embeddings: the last stage holds a copy of the word embedding");
  }
}

void fill_sources(const AcceleratorSpec::Calibration& cal, MemoryReport& report) {
  auto& src = report.sources;
  src[idx(MemoryComponent::kRuntimeContext)] = cal.runtime_context_bytes.source;
  src[idx(MemoryComponent::kCommBuffers)] =
      cal.comm_buffer_bytes_per_group.source + " (per communicator)";
  src[idx(MemoryComponent::kWorkspace)] = cal.workspace_bytes.source;
  src[idx(MemoryComponent::kFragmentation)] =
      cal.fragmentation_fraction.source + " / upper: " + cal.fragmentation_upper_fraction.source;
  src[idx(MemoryComponent::kWeights)] = "accounting.h stage_params x params dtype";
  src[idx(MemoryComponent::kGradients)] = "params x main_grads_dtype";
  src[idx(MemoryComponent::kMasterWeights)] = "fp32 copy, sharded by the optimizer";
  src[idx(MemoryComponent::kOptimizerStates)] = "optimizer moments and their dtypes";
  src[idx(MemoryComponent::kActivations)] =
      "saved-tensor model x the schedule table's in-flight microbatches";
  src[idx(MemoryComponent::kTransient)] = "largest temporary (per rank)";
}

// Chunk parameters and activations of rank `r`; fills the parameter and layout fields of `rm`.
const RankChunks& rank_chunks(Context& cx, int r, RankMemory& rm) {
  const JobSpec& job = cx.job;
  const std::size_t v = static_cast<std::size_t>(cx.vpp);
  rm.pp_rank = r;
  rm.virtual_stages.resize(v);
  bool has_emb = false;
  for (int c = 0; c < cx.vpp; ++c) {
    const int z = virtual_stage_index(cx.schedule, cx.pp, r, c);
    rm.virtual_stages[static_cast<std::size_t>(c)] = z;
    has_emb = has_emb || (*cx.stages)[static_cast<std::size_t>(z)].has_embedding;
  }
  RankChunks& out = cx.chunks;
  out = RankChunks{std::move(out.full_upper), std::move(out.w_only_upper)};
  out.full_upper.assign(v, 0.0);
  out.w_only_upper.assign(v, 0.0);
  rm.activation_per_chunk_bytes.assign(v, 0.0);
  rm.w_only_per_chunk_bytes.assign(v, 0.0);
  for (std::size_t c = 0; c < v; ++c) {
    const VirtualStage& st = (*cx.stages)[static_cast<std::size_t>(rm.virtual_stages[c])];
    const StageParams sp = stage_params(job.model, job.parallel, st, has_emb);
    rm.params.dense_params += sp.dense_params;
    rm.params.dense_gemm_params += sp.dense_gemm_params;
    rm.params.expert_params += sp.expert_params;
    rm.params.largest_unit_params = std::max(rm.params.largest_unit_params, sp.largest_unit_params);
    rm.num_layers += sp.decoder_layers;
    rm.has_embedding = rm.has_embedding || st.has_embedding;
    rm.has_output = rm.has_output || st.has_output;
    rm.mtp_layers += st.mtp_layers;
    out.has_moe = out.has_moe || sp.expert_params > 0.0;

    const ChunkActivation p =
        chunk_activation(job, cx.geo, st, cx.cache_point, cx.mtp_point, cx.vocab_local);
    const ChunkActivation u = cx.dropless_moe ? chunk_activation(job, cx.geo, st, cx.cache_upper,
                                                                 cx.mtp_upper, cx.vocab_local)
                                              : p;
    rm.activation_per_chunk_bytes[c] = p.per_microbatch;
    out.full_upper[c] = u.per_microbatch;
    rm.w_only_per_chunk_bytes[c] = p.w_retained;
    out.w_only_upper[c] = u.w_retained;
    rm.activation_per_microbatch_bytes += p.per_microbatch;
    if (p.transient > out.transient_point) {
      out.transient_point = p.transient;
      rm.transient_source = p.transient_source;
    }
    out.transient_floor = std::max(out.transient_floor, p.transient_floor);
    out.transient_upper = std::max(out.transient_upper, u.transient);
  }
  return out;
}

// The activation peak of `rank`: the largest of its uncovered in-flight states under the
// per-chunk sizes `full` and `w_only`. Sets `which` to the state that reaches it.
double activation_peak(const schedule::InFlightProfile& profile, int rank,
                       const std::vector<double>& full, const std::vector<double>& w_only,
                       int* which) {
  double best = 0.0;
  for (int i = 0; i < profile.num_states(rank); ++i) {
    const std::span<const int> nf = profile.full(rank, i);
    const std::span<const int> nw = profile.w_only(rank, i);
    double b = 0.0;
    for (std::size_t c = 0; c < full.size(); ++c) b += nf[c] * full[c] + nw[c] * w_only[c];
    if (i == 0 || b > best) {
      best = b;
      if (which != nullptr) *which = i;
    }
  }
  return best;
}

// The largest single decoder weight tensor one rank holds (after TP / EP sharding), in parameters:
// the unit a compiled (XLA) program gathers at a time (one all-gather per weight array), where
// FSDP2 gathers a whole layer. Gated MLPs keep their two input projections as separate arrays
// (MaxText wi_0 / wi_1).
double largest_weight_tensor(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const double h = static_cast<double>(job.model.hidden_size);
  const double tp = std::max(1, p.tp);
  const double etp = std::max(1, p.etp);
  const double ep = std::max(1, p.ep);
  // Decoder layers' arrays only: the embedding / output table is gathered at the start of the
  // forward and for the loss, not while the layers' backward peaks.
  double best = 0.0;
  for (const LayerSpec& l : job.model.layers) {
    const AttentionSpec& a = l.attention;
    const double heads = a.num_heads / tp;
    if (a.kind == AttentionKind::kCompressed) {
      const double qd = heads * a.head_dim;
      const double ol = a.compressed.o_lora_rank;
      best = std::max(
          {best, h * a.q_lora_rank, a.q_lora_rank * qd, qd * ol, a.compressed.o_groups * ol * h});
    } else if (a.kind == AttentionKind::kMla) {
      const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
      best = std::max({best, h * std::max(a.q_lora_rank, a.kv_lora_rank + a.qk_pos_emb_head_dim),
                       std::max(a.q_lora_rank, 0) * heads * qk,
                       a.kv_lora_rank * heads * (a.qk_head_dim + a.v_head_dim),
                       heads * a.v_head_dim * h});
    } else {
      best = std::max(best, h * heads * a.head_dim);
    }
    const double ffn = l.is_moe ? static_cast<double>(l.moe.shared_expert_ffn_hidden_size)
                                : static_cast<double>(l.mlp.ffn_hidden_size);
    best = std::max(best, h * ffn / tp);
    if (l.is_moe) {
      const double local = std::ceil(l.moe.num_experts / ep);
      best = std::max(best, local * h * static_cast<double>(l.moe.expert_ffn_hidden_size) / etp);
    }
  }
  return best;
}

// Static memory of a rank: weights, gradients, optimizer, FSDP window, fp8 copies, buffers.
ComponentBytes static_memory(const Context& cx, const RankMemory& rm, bool has_moe) {
  const JobSpec& job = cx.job;
  const ParallelSpec& par = job.parallel;
  const RuntimeSpec& rt = job.runtime;
  const PrecisionSpec& prec = rt.precision;
  const AcceleratorSpec::Calibration& cal = job.cluster.accelerator.calibration;
  const double pb = bytes_per_element(prec.stored_weights_dtype());
  const double gather_b = bytes_per_element(prec.params_dtype);  // gathered for the GEMMs
  const double gb = bytes_per_element(rt.main_grads_dtype);
  const OptimizerBytes opt_b = optimizer_bytes_per_param(rt);
  const double master_b = opt_b.master_bytes;
  const double state_b = opt_b.state_bytes;
  const double copy_b = fp8_weight_copy_bytes(prec);
  const bool fsdp = par.fsdp != FsdpKind::kNone;
  const bool sharded_opt = par.distributed_optimizer || fsdp;
  // Hybrid sharding (HSDP, MaxText's data axis): state is sharded within dp x cp / replicate
  // ranks (experts: expert_dp / replicate) and replicated across the replicate groups.
  const double replicate = std::max(1, par.dp_replicate);
  const double dense_shard = std::max(1.0, std::max(1, job.dp()) * std::max(1, par.cp) / replicate);
  const double expert_shard = std::max(1.0, job.expert_dp() / replicate);
  // FSDP2 with a mixed-precision policy shards the fp32 master itself: no separate sharded copy
  // of the weights in the params dtype (Megatron's FSDP2 shards bf16 weights and keeps its own
  // master: RuntimeSpec::fsdp_param_is_master).
  const bool master_is_weight =
      par.fsdp == FsdpKind::kFsdp2 && master_b > 0.0 && rt.fsdp_param_is_master;
  const RankParams& P = rm.params;
  const double dense_non_gemm = P.dense_params - P.dense_gemm_params;
  const double w_dense =
      prec.fp8_param ? dense_non_gemm * pb + P.dense_gemm_params * 1.0 : P.dense_params * pb;
  const double w_exp = P.expert_params * (prec.fp8_param ? 1.0 : pb);
  ComponentBytes s{};
  s[idx(MemoryComponent::kWeights)] =
      master_is_weight ? 0.0
                       : (fsdp ? w_dense / dense_shard + w_exp / expert_shard : w_dense + w_exp);
  s[idx(MemoryComponent::kGradients)] =
      fsdp ? P.dense_params * gb / dense_shard + P.expert_params * gb / expert_shard
           : (P.dense_params + P.expert_params) * gb;
  const double opt_params = sharded_opt
                                ? P.dense_params / dense_shard + P.expert_params / expert_shard
                                : P.dense_params + P.expert_params;
  // Offloaded optimizer state (MaxText optimizer_memory_host_offload) lives in host memory.
  const double on_device = rt.optimizer_host_offload ? 0.0 : 1.0;
  s[idx(MemoryComponent::kMasterWeights)] = opt_params * master_b * on_device;
  s[idx(MemoryComponent::kOptimizerStates)] = opt_params * state_b * on_device;
  if (fsdp) {
    // Gathered: the unit in use and the prefetched next (reshard_after_forward), else every unit
    // of the rank from its forward to its backward; unsharded: one unit's gradient before its
    // reduce-scatter. XLA's unit is one weight array (in the compute dtype, and so is the gradient
    // it reduces: fsdp_layer.cpp), FSDP2's one layer.
    const bool compiled = rt.whole_step_compiled;
    const double unit = compiled ? std::min(P.largest_unit_params, largest_weight_tensor(job))
                                 : P.largest_unit_params;
    const double gathered =
        par.reshard_after_forward ? 2.0 * unit : P.dense_params + P.expert_params;
    s[idx(MemoryComponent::kFsdpUnsharded)] =
        gathered * gather_b + unit * (compiled ? gather_b : gb);
    s[idx(MemoryComponent::kFp8WeightCopies)] = 2.0 * unit * copy_b;
  } else {
    s[idx(MemoryComponent::kFp8WeightCopies)] = ((prec.fp8_dense ? P.dense_gemm_params : 0.0) +
                                                 (prec.fp8_experts ? P.expert_params : 0.0)) *
                                                copy_b;
  }
  double comm = cal.comm_buffer_bytes_per_group.value * rm.communicators;
  if (rt.deepep && has_moe) {
    int topk = 0;
    for (const LayerSpec& l : job.model.layers) topk = std::max(topk, l.is_moe ? l.moe.topk : 0);
    // Dispatch + combine buffers sized for every routed copy with 2x over-provisioning.
    comm += 2.0 * (cx.geo.tokens / cx.geo.sp * topk * 2.0) * cx.geo.h * cx.geo.e;
  }
  s[idx(MemoryComponent::kCommBuffers)] = comm;
  s[idx(MemoryComponent::kRuntimeContext)] = cal.runtime_context_bytes.value;
  s[idx(MemoryComponent::kWorkspace)] = cal.workspace_bytes.value;
  return s;
}

RankMemory project_rank(Context& cx, int r) {
  RankMemory rm;
  const RankChunks& ch = rank_chunks(cx, r, rm);
  int at_point = 0;
  const double act_p = activation_peak(*cx.in_flight, r, rm.activation_per_chunk_bytes,
                                       rm.w_only_per_chunk_bytes, &at_point);
  const double act_u = activation_peak(*cx.in_flight, r, ch.full_upper, ch.w_only_upper, nullptr);
  rm.in_flight = to_in_flight(*cx.in_flight, r, at_point);
  rm.communicators = communicator_count(cx.job, rm.has_embedding || rm.has_output, ch.has_moe);

  const ComponentBytes s = static_memory(cx, rm, ch.has_moe);
  const AcceleratorSpec::Calibration& cal = cx.job.cluster.accelerator.calibration;
  rm.point = s;
  rm.upper = s;
  rm.point[idx(MemoryComponent::kActivations)] = act_p;
  rm.upper[idx(MemoryComponent::kActivations)] = act_u;
  const double window = s[idx(MemoryComponent::kFsdpUnsharded)];
  double transient_p = ch.transient_point;
  const double capacity = cx.job.cluster.accelerator.hbm_bytes;
  if (cx.job.runtime.whole_step_compiled && capacity > 0.0 && ch.transient_floor < transient_p) {
    // XLA rematerialises to the device's memory limit at compile time: a step whose working set
    // would not fit recomputes cheap tensors instead, down to the floor (ChunkActivation).
    const double frag = cal.fragmentation_fraction.value;
    const double total = sum(s) + act_p + transient_p + frag * (act_p + transient_p + window);
    const double excess = total - capacity;
    if (excess > 0.0) {
      transient_p = std::max(ch.transient_floor, transient_p - excess / (1.0 + frag));
      rm.transient_source = "working set rematerialised by XLA to the HBM limit";
    }
  }
  rm.point[idx(MemoryComponent::kTransient)] = transient_p;
  rm.upper[idx(MemoryComponent::kTransient)] = ch.transient_upper;
  rm.point[idx(MemoryComponent::kFragmentation)] =
      cal.fragmentation_fraction.value * (act_p + transient_p + window);
  rm.upper[idx(MemoryComponent::kFragmentation)] =
      cal.fragmentation_upper_fraction.value * (act_u + ch.transient_upper + window);
  rm.total_point_bytes = sum(rm.point);
  rm.total_upper_bytes = sum(rm.upper);
  const double outside =
      s[idx(MemoryComponent::kRuntimeContext)] + s[idx(MemoryComponent::kCommBuffers)];
  rm.allocator_point_bytes = rm.total_point_bytes - outside;
  rm.allocator_upper_bytes = rm.total_upper_bytes - outside;
  return rm;
}

void add_largest_components(const ComponentBytes& pk, MemoryReport& report) {
  std::array<int, kNumMemoryComponents> order{};
  for (int i = 0; i < kNumMemoryComponents; ++i) order[static_cast<std::size_t>(i)] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return pk[static_cast<std::size_t>(a)] > pk[static_cast<std::size_t>(b)];
  });
  for (int i = 0; i < 3; ++i) {
    report.largest_components.push_back(static_cast<MemoryComponent>(order[i]));
  }
}

// Peak ranks, verdict, the three largest components of the peak rank, remedies.
void summarise(const JobSpec& job, const MemoryOptions& options, MemoryReport& report) {
  for (const RankMemory& rm : report.ranks) {
    // A NaN or negative total would never exceed the capacity: refuse a verdict on it rather
    // than print FITS (the input bounds should make this unreachable; this keeps it so).
    for (const double total : {rm.total_point_bytes, rm.total_upper_bytes}) {
      if (!(std::isfinite(total) && total >= 0.0)) {
        throw InputError({job.source, 0, 0}, "memory",
                         fmt::format("the projected memory of pipeline rank {} is {} bytes: no "
                                     "verdict on a total that is not a finite, non-negative "
                                     "number",
                                     rm.pp_rank, total));
      }
    }
    if (rm.total_point_bytes > report.peak_point_bytes) {
      report.peak_point_bytes = rm.total_point_bytes;
      report.peak_rank = rm.pp_rank;
    }
    if (rm.total_upper_bytes > report.peak_upper_bytes) {
      report.peak_upper_bytes = rm.total_upper_bytes;
      report.peak_upper_rank = rm.pp_rank;
    }
  }
  report.capacity_bytes = job.cluster.accelerator.hbm_bytes;
  report.verdict =
      verdict_of(report.peak_point_bytes, report.peak_upper_bytes, report.capacity_bytes);
  if (!report.ranks.empty()) {
    add_largest_components(report.ranks[static_cast<std::size_t>(report.peak_rank)].point, report);
  }
  if (options.suggest_remedies &&
      (report.verdict == MemoryVerdict::kOom || report.verdict == MemoryVerdict::kAtRisk)) {
    memory_detail::add_remedies(job, options, report);
  }
}

}  // namespace

MemoryReport project_memory(const JobSpec& job) {
  return project_memory(job, MemoryOptions{});
}

MemoryReport project_memory(const JobSpec& job, const MemoryOptions& options) {
  check_job_invariants(job);  // a malformed job is refused, never repaired
  if (job.model.family == ModelFamily::kRecommendation) {
    MemoryReport report = memory_detail::project_recsys_memory(job, options);
    fill_sources(job.cluster.accelerator.calibration, report);
    if (!report.ranks.empty()) add_largest_components(report.ranks.front().point, report);
    return report;
  }
  MemoryReport report;
  Context cx{job, options};
  resolve_pipeline(cx, report);
  resolve_activations(cx, report);
  fill_sources(job.cluster.accelerator.calibration, report);
  report.ranks.reserve(static_cast<std::size_t>(cx.pp));
  for (int r = 0; r < cx.pp; ++r) report.ranks.push_back(project_rank(cx, r));
  summarise(job, options, report);
  const double budget = job.runtime.recompute.memory_budget;
  if (budget > 0.0 && budget < 1.0) {
    // A compiler-chosen budget is a point inside a bracket: full AC (0) to no AC (1).
    MemoryOptions inner = options;
    inner.suggest_remedies = false;
    double peak[2] = {0.0, 0.0};
    for (int i = 0; i < 2; ++i) {
      JobSpec j = job;
      j.runtime.recompute.memory_budget = i;
      peak[i] = project_memory(j, inner).peak_point_bytes;
    }
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    report.notes.push_back(fmt::format(
        "activation memory budget {}: the compiler decides what to save; the peak lies between "
        "{:.2f} GiB (budget 0, full AC) and {:.2f} GiB (budget 1, no AC)",
        budget, peak[0] / kGiB, peak[1] / kGiB));
  }
  return report;
}

namespace memory_detail {

MemoryVerdict verdict_of(double point, double upper, double capacity) {
  if (capacity <= 0.0) return MemoryVerdict::kUnknown;
  if (point > capacity) return MemoryVerdict::kOom;
  if (upper > capacity) return MemoryVerdict::kAtRisk;
  return MemoryVerdict::kFits;
}

}  // namespace memory_detail

MemoryVerdict verdict_with_range(double point_bytes, double upper_bytes, double lo_bytes,
                                 double hi_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0.0) return MemoryVerdict::kUnknown;
  // A published run of this regime measured up to (1 + q90) below the projection: the job is
  // out of memory only if it would be even then.
  if (lo_bytes > capacity_bytes) return MemoryVerdict::kOom;
  const double high = std::max({point_bytes, upper_bytes, hi_bytes});
  return high > capacity_bytes ? MemoryVerdict::kAtRisk : MemoryVerdict::kFits;
}

}  // namespace projector
