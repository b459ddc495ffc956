// The attention part of a decoder layer (layer_ops.h): GQA / MHA / MLA with flash or unfused
// attention and context parallelism, DeepSeek-V4's compressed attention and its indexer,
// hyper-connection mixers.
#include <algorithm>
#include <cmath>

#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "workload/layer_ops.h"

namespace projector::workload_detail {

void add_flash_attention(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer, int heads,
                         int kv_heads, int d_qk, int d_v);

// Unfused attention (no flash attention): scores = Q K^T as a batched GEMM over b x heads,
// Megatron's fused scale-mask-softmax (reads the scores, writes the probabilities), dropout
// (writes the dropped probabilities and a 1-byte mask) when attention dropout is on, and the
// context = P V batched GEMM. The whole s x s product is computed even when causal.
void add_unfused_attention(const Ctx& c, std::vector<Op>& f, int heads, int d_qk, int d_v) {
  const JobSpec& job = c.job;
  const std::int64_t s = job.runtime.seq_length;
  const int batch = job.runtime.micro_batch_size * heads;
  const double scores = static_cast<double>(batch) * s * s;
  Op qk = gemm_op(c, "attn.scores", s, s, d_qk, batch, c.act);
  qk.kind = OpKind::kGemm;  // a strided batched GEMM, not an expert grouped GEMM
  qk.weightless = true;
  f.push_back(qk);
  f.push_back(mem_op("attn.softmax", scores * 2.0 * c.act_b));
  if (job.model.attention_dropout > 0.0) {
    f.push_back(mem_op("attn.dropout", scores * (2.0 * c.act_b + 1.0)));
  }
  Op pv = gemm_op(c, "attn.context", s, d_v, s, batch, c.act);
  pv.kind = OpKind::kGemm;
  pv.weightless = true;
  f.push_back(pv);
}

// The lightning indexer of a CSA layer (PR11 indexer.py forward): its projections and its own
// compressor on the detached layer input, RoPE + Hadamard on q and k, the per-head scores of every
// pool entry (an einsum: T x heads rows against the pool), the fused ReLU / head-weighting / mask
// tail and the top-k. Frozen (no distillation loss), so nothing runs backward.
void add_indexer(const Ctx& c, std::vector<Op>& f, const AttentionSpec& a, std::int64_t pool) {
  const CompressedAttentionSpec& x = a.compressed;
  const std::int64_t h = c.job.model.hidden_size;
  const std::int64_t T = c.tokens;
  const std::int64_t ihd = x.index_head_dim, ih = x.index_n_heads;
  const double e = c.act_b;
  const std::size_t first = f.size();
  f.push_back(act_gemm_op(c, "attn.indexer.w_dq_w", T, ihd + ih, h));
  f.push_back(act_gemm_op(c, "attn.indexer.w_iuq", T, ih * ihd, ihd));
  f.push_back(act_gemm_op(c, "attn.indexer.compressor", T, 4 * ihd, h));
  f.push_back(mem_op("attn.indexer.pool_rotate", static_cast<double>(T) * 4.0 * ihd * e +
                                                     4.0 * static_cast<double>(T) * ih * ihd * e));
  const int b = c.job.runtime.micro_batch_size;
  Op scores = gemm_op(c, "attn.indexer.scores", T / b * ih, pool, ihd, b, c.act);
  scores.kind = OpKind::kGemm;
  scores.weightless = true;
  f.push_back(scores);
  const double dot = static_cast<double>(T) * ih * pool * e;
  f.push_back(mem_op("attn.indexer.tail", dot + static_cast<double>(T) * pool * e));
  f.push_back(mem_op("attn.indexer.topk", static_cast<double>(T) * pool * e +
                                              static_cast<double>(T) * x.index_topk * 8.0));
  for (std::size_t i = first; i < f.size(); ++i) f[i].forward_only = true;
}

// Hyper-connections before a sublayer (PR11 hyper_connection.py HyperMixer, deepseek_v4_block.py
// _hc_apply): the parameter-free RMS of the K flattened streams (fp32 out), the fn GEMM K h ->
// (2 + K) K in fp32, the sigmoid / softmax / Sinkhorn tail in one fused pass over the small
// logits, and the collapse of the K streams into the sublayer input.
void add_hc_pre(const Ctx& c, std::vector<Op>& f, const std::string& sub) {
  const int k = c.job.model.hc_mult;
  if (k <= 1) return;
  const double rows = static_cast<double>(c.tokens_sp);
  const std::int64_t h = c.job.model.hidden_size;
  f.push_back(mem_op("hc." + sub + ".norm", rows * k * h * (c.act_b + 4.0)));
  Op fn = gemm_op(c, "hc." + sub + ".fn", c.tokens_sp, static_cast<std::int64_t>(2 + k) * k,
                  static_cast<std::int64_t>(k) * h, 1, Dtype::kFp32);
  f.push_back(fn);
  f.push_back(mem_op("hc." + sub + ".sinkhorn", rows * 2.0 * ((2.0 + k) * k + k * k) * 4.0));
  f.push_back(mem_op("hc." + sub + ".collapse", rows * (k + 1.0) * h * c.act_b));
}

// After the sublayer: new_streams = post x out + comb @ streams, replacing the residual add.
void add_hc_post(const Ctx& c, std::vector<Op>& f, const std::string& sub) {
  const int k = c.job.model.hc_mult;
  const double rows = static_cast<double>(c.tokens_sp);
  const double h = static_cast<double>(c.job.model.hidden_size);
  if (k <= 1) {
    f.push_back(mem_op(sub + ".residual", 3.0 * rows * h * c.act_b));
    return;
  }
  f.push_back(mem_op("hc." + sub + ".expand", rows * (2.0 * k + 1.0) * h * c.act_b));
}

// DeepSeek-V4 attention (docs/deepseek-v4.md; PR11 deepseek_v4_attention.py forward): TP and CP
// are 1 (the layout rules refuse more). The local branch is a sliding-window MQA over the shared
// latent; the compressed branch attends its pool (HCA: every visible entry; CSA: the indexer's
// top-k, gathered per query); the frozen indexer runs forward only.
void add_compressed_attention(const Ctx& c, std::vector<Op>& f, const AttentionSpec& a) {
  const JobSpec& job = c.job;
  const CompressedAttentionSpec& x = a.compressed;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t T = c.tokens;
  const std::int64_t d = a.head_dim;
  const std::int64_t qd = static_cast<std::int64_t>(a.num_heads) * d;
  const double e = c.act_b;
  push_gemm(c, f, "attn.q_down", T, a.q_lora_rank, h);
  f.push_back(mem_op("attn.q_norm", norm_bytes(c, T, a.q_lora_rank)));
  push_gemm(c, f, "attn.q_up", T, qd, a.q_lora_rank);
  f.push_back(mem_op("attn.q_rms", 2.0 * static_cast<double>(T) * qd * e));
  push_gemm(c, f, "attn.kv", T, d, h);
  f.push_back(mem_op("attn.kv_norm", norm_bytes(c, T, d)));
  f.push_back(mem_op(
      "attn.rope", 2.0 * static_cast<double>(T) * (a.num_heads + 1.0) * a.qk_pos_emb_head_dim * e));
  const std::int64_t s = job.runtime.seq_length;
  const std::int64_t pool = x.compress_ratio > 0 ? s / x.compress_ratio : 0;
  if (x.compress_ratio > 0) {
    // The compressor stays out of low precision (PR11 compressor.py: a plain nn.Linear).
    const std::int64_t width = 2LL * x.overlap() * d;
    f.push_back(act_gemm_op(c, "attn.compressor", T, width, h));
    f.push_back(mem_op("attn.compressor_pool",
                       static_cast<double>(T) * width * e + 3.0 * (T / x.compress_ratio) * d * e));
  }
  if (x.csa()) add_indexer(c, f, a, pool);
  // Local branch: sliding-window attention, one K = V latent shared by all heads.
  Op core;
  core.name = "attn.core";
  core.kind = OpKind::kAttention;
  core.attention.batch = job.runtime.micro_batch_size;
  core.attention.q_heads = a.num_heads;
  core.attention.kv_heads = 1;
  core.attention.head_dim_qk = static_cast<int>(d);
  core.attention.head_dim_v = static_cast<int>(d);
  core.attention.window = a.sliding_window;
  core.attention.dtype = c.act;
  core.attention.kernel = job.runtime.attention_kernel;
  core.attention.seq_q = s;
  core.attention.seq_kv = s;
  core.attention.causal = true;
  core.flops = attention_fwd_flops(core.attention);
  f.push_back(core);
  if (x.compress_ratio > 0) {
    // The pool keys each query sees on average, priced as an even (unmasked) sweep.
    FlopOptions causal;
    causal.causal_attention_half = true;
    const double keys = compressed_attention_flops(h, a, s, causal).pool_keys;
    Op p = core;
    p.name = "attn.core_pool";
    p.attention.window = 0;
    p.attention.causal = false;
    p.attention.seq_kv = std::max<std::int64_t>(1, std::llround(keys));
    p.flops = attention_fwd_flops(p.attention);
    if (x.csa()) {
      // Each query reads its own top-k entries: a gather of k latents per query (its backward
      // scatter-adds the key gradients into the pool).
      Op g = mem_op("attn.sparse_gather", static_cast<double>(T) * keys * d * e);
      g.bwd_bytes = 2.0 * g.bytes;
      f.push_back(g);
    }
    f.push_back(p);
  }
  f.push_back(mem_op("attn.inverse_rope",
                     2.0 * static_cast<double>(T) * a.num_heads * a.qk_pos_emb_head_dim * e));
  if (x.o_lora_rank > 0) {
    // wo_a: one rank-o_lora_rank projection per group of heads (a batched einsum).
    push_gemm(c, f, "attn.o_a", T, x.o_lora_rank, qd / x.o_groups, x.o_groups);
    f.back().kind = OpKind::kGemm;
    push_gemm(c, f, "attn.o_b", T, h, static_cast<std::int64_t>(x.o_groups) * x.o_lora_rank);
  } else {
    push_gemm(c, f, "attn.out_proj", T, h, qd);
  }
}

void add_attention(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const JobSpec& job = c.job;
  const ParallelSpec& p = job.parallel;
  const AttentionSpec& a = layer.attention;
  const std::int64_t h = job.model.hidden_size;
  const int heads = std::max(1, a.num_heads / c.tp);
  int kv_heads = p.kv_heads_per_rank(a.num_query_groups);
  int d_qk = a.head_dim;
  int d_v = a.head_dim;

  add_hc_pre(c, f, "attn");
  f.push_back(mem_op("attn.input_norm", norm_bytes(c, c.tokens_sp, h)));
  if (a.kind == AttentionKind::kCompressed) {
    add_compressed_attention(c, f, a);
    add_hc_post(c, f, "attn");
    return;
  }
  tp_enter(c, f, "attn");
  if (a.kind == AttentionKind::kMla) {
    d_qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    d_v = a.v_head_dim;
    kv_heads = heads;
    // Down-projections are replicated over TP; up-projections are column-parallel.
    if (a.q_lora_rank > 0) {
      push_gemm(c, f, "attn.q_down", c.tokens, a.q_lora_rank, h);
      f.push_back(mem_op("attn.q_norm", norm_bytes(c, c.tokens, a.q_lora_rank)));
      push_gemm(c, f, "attn.q_up", c.tokens, static_cast<std::int64_t>(heads) * d_qk,
                a.q_lora_rank);
    } else {
      push_gemm(c, f, "attn.q_proj", c.tokens, static_cast<std::int64_t>(heads) * d_qk, h);
    }
    push_gemm(c, f, "attn.kv_down", c.tokens, a.kv_lora_rank + a.qk_pos_emb_head_dim, h);
    f.push_back(mem_op("attn.kv_norm", norm_bytes(c, c.tokens, a.kv_lora_rank)));
    push_gemm(c, f, "attn.kv_up", c.tokens,
              static_cast<std::int64_t>(heads) * (a.qk_head_dim + a.v_head_dim), a.kv_lora_rank);
    // Kimi-K3's linear_o_gate reads the normed input (column-parallel, kimi_k3_mla_attention.py).
    if (a.output_gate) {
      push_gemm(c, f, "attn.o_gate", c.tokens, static_cast<std::int64_t>(heads) * a.v_head_dim, h);
    }
  } else {
    // attention_output_gate widens linear_qkv by a gate of heads x head_dim.
    const int gate_heads = a.output_gate ? heads : 0;
    push_gemm(c, f, "attn.qkv", c.tokens,
              static_cast<std::int64_t>(heads + gate_heads + 2 * kv_heads) * d_qk, h);
  }
  if (job.model.position_embedding == PositionEmbeddingKind::kRope) {
    f.push_back(mem_op("attn.rope",
                       2.0 * static_cast<double>(c.tokens) * (heads + kv_heads) * d_qk * c.act_b));
  }
  if (!job.runtime.flash_attention && p.cp == 1) {
    add_unfused_attention(c, f, heads, d_qk, d_v);
  } else {
    add_flash_attention(c, f, layer, heads, kv_heads, d_qk, d_v);
  }
  if (a.output_gate) {
    // sigmoid(gate) x core output (MG18 attention.py:1635): reads both, writes the gated output.
    f.push_back(
        mem_op("attn.output_gate", 3.0 * static_cast<double>(c.tokens) * heads * d_v * c.act_b));
  }
  push_gemm(c, f, "attn.out_proj", c.tokens, h, static_cast<std::int64_t>(heads) * d_v);
  tp_exit(c, f, "attn");
  add_hc_post(c, f, "attn");
}

// Transformer Engine's a2a+p2p (MG24): the all-to-all of q, k, v and the output over the first
// level (cp_a2a_size neighbouring CP ranks, tp apart), then the KV ring over the second (the
// ranks a2a x tp apart). A ring of one rank sends nothing. The ring's KV per step is the rank's
// share of the sequence's K and V, as with p2p: a2a x the tokens, 1 / a2a of the heads.
namespace {
void add_hierarchical_cp(const Ctx& c, std::vector<Op>& f, double qkvo_bytes, double kv_bytes) {
  const ParallelSpec& p = c.job.parallel;
  const int a2a = p.cp_a2a_size;
  const int ring = p.cp / a2a;
  Op all_to_all =
      comm_op("attn.cp_all_to_all", GroupKind::kCp, CollectiveKind::kAllToAll, a2a, qkvo_bytes);
  all_to_all.group_stride = p.tp;
  f.push_back(all_to_all);
  if (ring <= 1) return;
  Op hop = comm_op("attn.cp_ring_kv", GroupKind::kCp, CollectiveKind::kSendRecv, ring, kv_bytes,
                   Overlap::kWithCompute);
  hop.group_stride = p.tp * a2a;
  hop.steps = ring - 1;
  f.push_back(hop);
}
}  // namespace

// Flash attention: one fused kernel per direction.
void add_flash_attention(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer, int heads,
                         int kv_heads, int d_qk, int d_v) {
  const JobSpec& job = c.job;
  const ParallelSpec& p = job.parallel;
  const AttentionSpec& a = layer.attention;
  // Attention core. With CP each rank holds s/cp queries (load-balanced causal chunks) and, over
  // the ring, sees every key: its share of the causal score matrix is 1/cp.
  Op core;
  core.name = "attn.core";
  core.kind = OpKind::kAttention;
  const std::int64_t s = job.runtime.seq_length;
  core.attention.batch = job.runtime.micro_batch_size;
  core.attention.q_heads = heads;
  core.attention.kv_heads = kv_heads;
  core.attention.head_dim_qk = d_qk;
  core.attention.head_dim_v = d_v;
  core.attention.window = a.sliding_window;
  // Transformer Engine's fp8_dpa quantises q, k, v and runs cuDNN's 8-bit kernel (not in the
  // layers kept out of the recipe, which run outside its autocast).
  const PrecisionSpec& prec = job.runtime.precision;
  const bool quantized = c.gemm != prec.params_dtype;
  core.attention.dtype = prec.fp8_attention && quantized ? prec.attention_dtype() : c.act;
  core.attention.kernel = job.runtime.attention_kernel;
  // a2a+p2p (MG24): an all-to-all over `a2a` neighbouring CP ranks trades heads for sequence, so
  // the ring runs over cp / a2a ranks with a2a x longer chunks of heads / a2a heads.
  const int a2a = p.cp > 1 && p.cp_comm_type == CpCommType::kA2aP2p && p.cp_a2a_size > 1 &&
                          heads % p.cp_a2a_size == 0 && kv_heads % p.cp_a2a_size == 0
                      ? p.cp_a2a_size
                      : 1;
  if (p.cp > 1) {
    // Equivalent work: s/cp query rows against s/2 keys, unmasked (the causal half of the ring).
    core.attention.q_heads = heads / a2a;
    core.attention.kv_heads = kv_heads / a2a;
    core.attention.seq_q = s / p.cp * a2a;
    core.attention.seq_kv =
        a.sliding_window > 0 ? std::min<std::int64_t>(a.sliding_window, s / 2) : s / 2;
    core.attention.causal = false;
  } else if (a.chunk_window > 0 && a.chunk_window < s) {
    // Chunked attention: each chunk is its own causal sequence.
    core.attention.batch *= (s + a.chunk_window - 1) / a.chunk_window;
    core.attention.seq_q = a.chunk_window;
    core.attention.seq_kv = a.chunk_window;
    core.attention.causal = a.causal;
  } else {
    core.attention.seq_q = s;
    core.attention.seq_kv = s;
    core.attention.causal = a.causal;
  }
  core.flops = attention_fwd_flops(core.attention);
  f.push_back(core);
  if (p.cp > 1) {
    const double kv_bytes = static_cast<double>(job.runtime.micro_batch_size) * (s / p.cp) *
                            kv_heads * (d_qk + d_v) * c.act_b;
    if (p.cp_comm_type == CpCommType::kP2p) {
      Op ring = comm_op("attn.cp_ring_kv", GroupKind::kCp, CollectiveKind::kSendRecv, p.cp,
                        kv_bytes, Overlap::kWithCompute);
      ring.steps = p.cp - 1;
      f.push_back(ring);
    } else if (p.cp_comm_type == CpCommType::kAllGather) {
      f.push_back(comm_op("attn.cp_all_gather_kv", GroupKind::kCp, CollectiveKind::kAllGather, p.cp,
                          kv_bytes * p.cp));
    } else {
      // Ulysses-style: all-to-all of q, k, v before and of the output after the core.
      const double qkvo = static_cast<double>(job.runtime.micro_batch_size) * (s / p.cp) *
                          (2.0 * heads * d_qk + kv_heads * (d_qk + d_v)) * c.act_b;
      if (p.cp_comm_type == CpCommType::kA2aP2p && p.cp_a2a_size > 1) {
        add_hierarchical_cp(c, f, qkvo, kv_bytes);
      } else {
        f.push_back(
            comm_op("attn.cp_all_to_all", GroupKind::kCp, CollectiveKind::kAllToAll, p.cp, qkvo));
      }
    }
  }
}

}  // namespace projector::workload_detail
