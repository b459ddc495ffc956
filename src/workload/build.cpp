// Builds the per-microbatch op lists. Conventions (Megatron-Core):
// - Column-parallel GEMMs (QKV, FC1) shard their output features over TP, row-parallel GEMMs
//   (output projection, FC2) their input features. Every TP rank processes all b*s/cp tokens.
// - With sequence parallelism norms, dropout and residuals see b*s/(cp*tp) tokens, and the TP
//   collectives are all-gather (before column-parallel) and reduce-scatter (after row-parallel);
//   without it they are one all-reduce after each row-parallel GEMM (forward) and after each
//   column-parallel GEMM's input gradient (backward).
// - MoE (alltoall dispatcher): routed tokens are dispatched over EP, gathered over ETP, run through
//   the local experts as one grouped GEMM and combined back. Routing is assumed balanced.
// - Backward of a GEMM: the input gradient (B) has the same FLOPs as the forward, the weight
//   gradient (W) too. Attention backward is its own kernel. The backward of a memory-bound op
//   reads the saved input and the upstream gradient and writes one gradient: 1.5x the forward
//   bytes.
#include <algorithm>
#include <array>
#include <cmath>

#include "projector/cost/moe_routing.h"
#include "projector/model/accounting.h"
#include "projector/model/family.h"
#include "projector/model/recompute_policy.h"
#include "projector/workload/workload.h"
#include "workload/build_detail.h"
#include "workload/ops.h"

namespace projector {
namespace {

struct Ctx {
  const JobSpec& job;
  Dtype act;               // activation dtype
  Dtype gemm;              // GEMM input dtype (attention, dense MLP, shared experts)
  Dtype gemm_expert;       // routed-expert grouped GEMMs
  Dtype gemm_output;       // the output layer
  double act_b;            // bytes per activation element
  std::int64_t tokens;     // b*s/cp: rows of every GEMM on a TP rank
  std::int64_t tokens_sp;  // tokens seen by norms / residuals (divided by tp with SP)
  int tp;
  bool sp;
};

Ctx make_ctx(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const RuntimeSpec& r = job.runtime;
  const std::int64_t tokens = static_cast<std::int64_t>(r.micro_batch_size) * r.seq_length / p.cp;
  const bool sp = p.sequence_parallel && p.tp > 1;
  const PrecisionSpec& pr = r.precision;
  return Ctx{job,
             pr.params_dtype,
             pr.fp8_dense ? pr.gemm_dtype() : pr.params_dtype,
             pr.fp8_experts ? pr.gemm_dtype() : pr.params_dtype,
             pr.fp8_output ? pr.gemm_dtype() : pr.params_dtype,
             bytes_per_element(r.precision.params_dtype),
             tokens,
             sp ? tokens / p.tp : tokens,
             p.tp,
             sp};
}

// `in`: the GEMM's input dtype (the job's GEMM dtype unless the op stays in the activation dtype).
Op gemm_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
           int groups, Dtype in) {
  Op op;
  op.name = std::move(name);
  op.kind = groups > 1 ? OpKind::kGroupedGemm : OpKind::kGemm;
  op.gemm = GemmShape{m, n, k, groups, in, c.act};
  op.gemm.blockwise = in == Dtype::kFp8 && c.job.runtime.precision.fp8 == Fp8Recipe::kBlockwise;
  op.flops = op.gemm.flops();
  const double in_b = bytes_per_element(in);
  op.bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n) * groups * in_b +
             static_cast<double>(m) * n * groups * c.act_b;
  return op;
}

// A GEMM that runs in the job's GEMM dtype. With an fp8 recipe (Transformer Engine) its input
// is quantized first: a fused cast + transpose reads the bf16 activation and writes the fp8
// copy and its transpose (the transpose feeds the weight-gradient GEMM); in the backward the
// output gradient is quantized the same way. Weights are cast once per iteration (cached).
Op mem_op(std::string name, double bytes, MemOpClass cls = MemOpClass::kElementwise);
void push_gemm(const Ctx& c, std::vector<Op>& f, const std::string& name, std::int64_t m,
               std::int64_t n, std::int64_t k, int groups = 1) {
  // Routed experts (grouped) and the output layer follow their own fp8 coverage.
  const Dtype in = name.rfind("moe.experts", 0) == 0 ? c.gemm_expert : c.gemm;
  if (in != c.act) {
    const double rows = static_cast<double>(m) * groups;
    const double q = bytes_per_element(in);
    Op cast = mem_op(name + ".fp8_cast", rows * k * (c.act_b + 2.0 * q), MemOpClass::kElementwise);
    cast.bwd_bytes = rows * n * (c.act_b + 2.0 * q);
    f.push_back(cast);
  }
  f.push_back(gemm_op(c, name, m, n, k, groups, in));
}

// GEMMs that stay in the activation dtype under fp8 recipes (router, output layer).
Op act_gemm_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k) {
  return gemm_op(c, std::move(name), m, n, k, 1, c.act);
}

Op mem_op(std::string name, double bytes, MemOpClass cls) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kMemoryBound;
  op.mem_class = cls;
  op.bytes = bytes;
  return op;
}

Op comm_op(std::string name, GroupKind g, CollectiveKind coll, int size, double bytes,
           Overlap overlap = Overlap::kExposed) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::kCollective;
  op.group = g;
  op.collective = coll;
  op.group_size = size;
  op.bytes = bytes;
  op.overlap = overlap;
  return op;
}

// Forward-side TP collectives around a column-parallel (before) / row-parallel (after) pair.
void tp_enter(const Ctx& c, std::vector<Op>& f, const std::string& what) {
  if (c.tp > 1 && c.sp) {
    f.push_back(
        comm_op(what + ".sp_all_gather", GroupKind::kTp, CollectiveKind::kAllGather, c.tp,
                static_cast<double>(c.tokens) * c.job.model.hidden_size * c.act_b,
                c.job.parallel.tp_comm_overlap ? Overlap::kWithCompute : Overlap::kExposed));
  }
}
void tp_exit(const Ctx& c, std::vector<Op>& f, const std::string& what) {
  if (c.tp <= 1) return;
  const double bytes = static_cast<double>(c.tokens) * c.job.model.hidden_size * c.act_b;
  f.push_back(comm_op(what + (c.sp ? ".sp_reduce_scatter" : ".tp_all_reduce"), GroupKind::kTp,
                      c.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, c.tp,
                      bytes,
                      c.job.parallel.tp_comm_overlap ? Overlap::kWithCompute : Overlap::kExposed));
}

double norm_bytes(const Ctx& c, std::int64_t rows, std::int64_t width) {
  return 2.0 * static_cast<double>(rows) * width * c.act_b;  // read x, write y
}

// `width`: the MLP's input / output features (0: the hidden size). `sequential`: the `groups`
// experts run as one GEMM each (Megatron's SequentialMLP when moe_grouped_gemm is false: MG8
// experts.py), not as one grouped GEMM.
void add_mlp(const Ctx& c, std::vector<Op>& f, const std::string& prefix, const MlpSpec& mlp,
             std::int64_t rows, std::int64_t ffn_per_rank, int groups, std::int64_t width = 0,
             bool sequential = false) {
  const std::int64_t h = width > 0 ? width : c.job.model.hidden_size;
  const std::int64_t up = mlp.gated ? 2 * ffn_per_rank : ffn_per_rank;
  const std::size_t first = f.size();
  push_gemm(c, f, prefix + ".fc1", rows, up, h, groups);
  // Activation (and gating product): read the fc1 output, write the activated half; a GLU moves
  // what its implementation moves per gated element (glu_forward_bytes_per_element).
  const double act_bytes =
      mlp.gated ? ffn_per_rank * glu_forward_bytes_per_element(mlp.activation, c.act_b)
                : static_cast<double>(up + ffn_per_rank) * c.act_b;
  f.push_back(mem_op(prefix + ".act", static_cast<double>(rows) * groups * act_bytes));
  push_gemm(c, f, prefix + ".fc2", rows, h, ffn_per_rank, groups);
  if (!sequential && groups == 1 && prefix == "moe.experts") {
    // One local expert still runs the grouped kernel (torch._grouped_mm, TE GroupedLinear).
    for (std::size_t i = first; i < f.size(); ++i) {
      if (f[i].kind == OpKind::kGemm) f[i].kind = OpKind::kGroupedGemm;
    }
  }
  if (!sequential || groups <= 1) return;
  for (std::size_t i = first; i < f.size(); ++i) {
    Op& op = f[i];
    if (op.kind != OpKind::kGroupedGemm) continue;
    // One kernel per expert: a GEMM of the expert's rows, run `groups` times.
    op.kind = OpKind::kGemm;
    op.gemm.batch = 1;
    op.steps = groups;
  }
}

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
  core.attention.dtype = c.act;
  core.attention.kernel = job.runtime.attention_kernel;
  if (p.cp > 1) {
    // Equivalent work: s/cp query rows against s/2 keys, unmasked (the causal half of the ring).
    core.attention.seq_q = s / p.cp;
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
      f.push_back(
          comm_op("attn.cp_all_to_all", GroupKind::kCp, CollectiveKind::kAllToAll, p.cp, qkvo));
    }
  }
}

// A weightless (activation x activation) batched GEMM, e.g. a one-hot dispatch einsum.
Op einsum_op(const Ctx& c, std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
             int batch) {
  Op op = gemm_op(c, std::move(name), m, n, k, batch, c.act);
  op.kind = OpKind::kGemm;
  op.weightless = true;
  return op;
}

// Dense MoE dispatch (MoeDispatchKind::kDenseCapacity / kDenseAll), as MaxText's dense_matmul
// computes it. Capacity: per sequence of S tokens each expert takes C = ceil(S topk / E) x cf
// slots; the dispatch einsum [S, E C] x [S, h] and the combine einsum cost 2 S E C h FLOPs each
// per sequence, the experts run as a batched GEMM over their E x C slots (over the expert-parallel
// group's sequences after an all-to-all). Dense all: every expert computes every token.
void add_dense_moe(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const JobSpec& job = c.job;
  const ParallelSpec& p = job.parallel;
  const MoeSpec& m = layer.moe;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t local = c.tokens / c.tp;
  const int ep = std::max(1, p.ep);
  const int local_experts = std::max(1, m.num_experts / ep);
  const std::int64_t fe = m.expert_ffn_hidden_size / std::max(1, p.etp);
  const std::int64_t up_e = layer.mlp.gated ? 2 * fe : fe;
  f.push_back(act_gemm_op(c, "moe.router", local, m.num_experts, h));
  f.push_back(mem_op("moe.topk", 3.0 * static_cast<double>(local) * m.num_experts * 4.0));
  if (job.runtime.moe_dispatch == MoeDispatchKind::kDenseAll) {
    push_gemm(c, f, "moe.experts.fc1", local, up_e * local_experts, h);
    f.push_back(mem_op("moe.experts.act",
                       static_cast<double>(local) * local_experts * (up_e + fe) * c.act_b));
    push_gemm(c, f, "moe.experts.fc2", local, h, fe, local_experts);
    f.back().kind = OpKind::kGemm;  // a batched einsum over the experts, not a grouped kernel
    f.push_back(
        mem_op("moe.weight_sum", static_cast<double>(local) * (local_experts + 1) * h * c.act_b));
  } else {
    const std::int64_t seq = std::max<std::int64_t>(1, job.runtime.seq_length / p.cp);
    const int sequences = static_cast<int>(std::max<std::int64_t>(1, local / seq));
    const double cf = m.capacity_factor > 0.0 ? m.capacity_factor : 1.0;
    const std::int64_t per_expert = (seq * m.topk + m.num_experts - 1) / m.num_experts;
    const auto capacity =
        static_cast<std::int64_t>(std::max(cf, std::floor(static_cast<double>(per_expert) * cf)));
    const std::int64_t slots = m.num_experts * capacity;
    f.push_back(einsum_op(c, "moe.dispatch", slots, h, seq, sequences));
    const double buffer = static_cast<double>(slots) * sequences * h * c.act_b;
    if (ep > 1) {
      f.push_back(
          comm_op("moe.dispatch_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, ep, buffer));
    }
    const std::int64_t rows = capacity * sequences * ep;  // per local expert
    add_mlp(c, f, "moe.experts", layer.mlp, rows, fe, local_experts);
    for (Op& op : f) {
      if (op.kind == OpKind::kGroupedGemm && op.name.rfind("moe.experts.", 0) == 0) {
        op.kind = OpKind::kGemm;  // einsum over equal capacity buffers
      }
    }
    if (ep > 1) {
      f.push_back(
          comm_op("moe.combine_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, ep, buffer));
    }
    f.push_back(einsum_op(c, "moe.combine", seq, h, slots, sequences));
  }
  if (m.shared_expert_ffn_hidden_size > 0) {
    tp_enter(c, f, "moe.shared");
    add_mlp(c, f, "moe.shared", layer.mlp, c.tokens, m.shared_expert_ffn_hidden_size / c.tp, 1);
    tp_exit(c, f, "moe.shared");
  }
}

// The EP collectives of one direction (dispatch or combine) for the layer's dispatcher
// (MG8 token_dispatcher.py): allgather gathers every token over ETP x EP (:281-303) and
// reduce-scatters the outputs back (:355-369); alltoall exchanges the routed copies over EP
// (:682-726, :837-880) with an all-gather / reduce-scatter over ETP behind / before it (:728-760,
// :796-835); flex runs one fused dispatch / combine over ETP x EP (:1809-2030), deduplicated per
// destination. Overlap: with moe_shared_expert_overlap the shared experts hide dispatch / combine;
// with overlap_moe_expert_parallel_comm another microbatch's compute does (the schedule pairs F
// and B; the EP part of each phase is what the pair can hide).
struct MoeComm {
  double local_tokens = 0.0;   // tokens entering the layer on this rank (sequence-parallel)
  double width_bytes = 0.0;    // bytes of one token in the dispatch width (h, or the latent)
  double routed_bytes = 0.0;   // routed copies of the local tokens x width bytes
  double a2a_bytes = 0.0;      // routed bytes after deduplication (flex)
  double forward_ratio = 0.0;  // node-aggregated over nodes: CommGroup::node_forward_ratio
  // Wire bytes over activation bytes of the forward dispatch and of the combine's backward
  // (RuntimeSpec::moe_dispatch_fwd_fp8 / moe_combine_bwd_fp8); 1: the activation dtype.
  double dispatch_fwd_wire = 1.0;
  double combine_bwd_wire = 1.0;
};

// MXFP8 on the wire: 1 byte per element and one E8M0 scale byte per block of 32 elements (the
// same 1.03 bytes as DeepEP's FP8 dispatch: 1 byte and an fp32 scale per 128 elements).
constexpr double kMxfp8WireBytes = 1.0 + 1.0 / 32.0;

// Fused permute / unpermute kernels gather whole token rows in one pass (priced as row gathers,
// like embedding lookups); unfused, PyTorch's sort / index_select / scatter (the permute class).
MemOpClass permute_class(const JobSpec& job) {
  return job.runtime.moe_permute_fusion ? MemOpClass::kEmbedding : MemOpClass::kPermute;
}

Overlap ep_overlap(const JobSpec& job) {
  return job.runtime.moe_overlap.has(MoeOverlap::kSharedExperts) ? Overlap::kWithSharedExperts
                                                                 : Overlap::kExposed;
}

void moe_dispatch(const Ctx& c, std::vector<Op>& f, const MoeSpec& m, const MoeComm& mc) {
  const ParallelSpec& p = c.job.parallel;
  const Overlap ov = ep_overlap(c.job);
  const int tp_ep = p.etp * p.ep;
  switch (c.job.runtime.moe_dispatcher) {
    case MoeDispatcher::kAllGather:
      if (tp_ep > 1) {
        // Routing map (1 byte) and probabilities (4 bytes) of every token, then the tokens.
        f.push_back(comm_op("moe.dispatch_all_gather_probs", GroupKind::kEtpEp,
                            CollectiveKind::kAllGather, tp_ep,
                            mc.local_tokens * m.num_experts * 5.0 * tp_ep));
        f.push_back(comm_op("moe.dispatch_all_gather", GroupKind::kEtpEp,
                            CollectiveKind::kAllGather, tp_ep,
                            mc.local_tokens * mc.width_bytes * tp_ep));
      }
      break;
    case MoeDispatcher::kAllToAll:
      if (p.ep > 1) {
        f.push_back(comm_op("moe.dispatch_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, p.ep,
                            mc.a2a_bytes, ov));
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      if (p.etp > 1) {
        f.push_back(comm_op("moe.etp_all_gather", GroupKind::kEtp, CollectiveKind::kAllGather,
                            p.etp, mc.routed_bytes * p.etp));
      }
      break;
    case MoeDispatcher::kFlex:
      if (tp_ep > 1) {
        // Quantized forward; its backward (the gradient coming back) in the activation dtype.
        f.push_back(comm_op("moe.dispatch", GroupKind::kEtpEp, CollectiveKind::kAllToAll, tp_ep,
                            mc.a2a_bytes * p.etp * mc.dispatch_fwd_wire, ov));
        f.back().bwd_bytes = mc.a2a_bytes * p.etp;
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      break;
  }
}

void moe_combine(const Ctx& c, std::vector<Op>& f, const MoeComm& mc) {
  const ParallelSpec& p = c.job.parallel;
  const Overlap ov = ep_overlap(c.job);
  const int tp_ep = p.etp * p.ep;
  switch (c.job.runtime.moe_dispatcher) {
    case MoeDispatcher::kAllGather:
      if (tp_ep > 1) {
        // Reduce-scattered in the probabilities' dtype (MG8 token_dispatcher.py:365-367).
        const double b = c.job.runtime.moe_probs_fp32 ? 4.0 : c.act_b;
        f.push_back(comm_op("moe.combine_reduce_scatter", GroupKind::kEtpEp,
                            CollectiveKind::kReduceScatter, tp_ep,
                            mc.local_tokens * mc.width_bytes / c.act_b * b * tp_ep));
      }
      break;
    case MoeDispatcher::kAllToAll:
      if (p.etp > 1) {
        f.push_back(comm_op("moe.etp_reduce_scatter", GroupKind::kEtp,
                            CollectiveKind::kReduceScatter, p.etp, mc.routed_bytes * p.etp));
      }
      if (p.ep > 1) {
        f.push_back(comm_op("moe.combine_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, p.ep,
                            mc.a2a_bytes, ov));
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      break;
    case MoeDispatcher::kFlex:
      if (tp_ep > 1) {
        f.push_back(comm_op("moe.combine", GroupKind::kEtpEp, CollectiveKind::kAllToAll, tp_ep,
                            mc.a2a_bytes * p.etp, ov));
        f.back().bwd_bytes = mc.a2a_bytes * p.etp * mc.combine_bwd_wire;
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      break;
  }
}

void add_moe(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const JobSpec& job = c.job;
  const ParallelSpec& p = job.parallel;
  const MoeSpec& m = layer.moe;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t width = m.latent_size > 0 ? m.latent_size : h;
  // Tokens enter the MoE block sequence-parallel (Megatron requires SP with MoE and TP > 1).
  const std::int64_t local = c.tokens / c.tp;
  const bool shared = m.shared_expert_ffn_hidden_size > 0;
  auto shared_experts = [&] {
    tp_enter(c, f, "moe.shared");
    add_mlp(c, f, "moe.shared", layer.mlp, c.tokens, m.shared_expert_ffn_hidden_size / c.tp, 1);
    tp_exit(c, f, "moe.shared");
    if (m.shared_expert_gate) {
      f.push_back(act_gemm_op(c, "moe.shared.gate", local, 1, h));
      f.push_back(mem_op("moe.shared.gate_mul", 3.0 * static_cast<double>(local) * h * c.act_b));
    }
  };
  // Without an EP overlap the shared experts run before the router (MG2 transformer_config.py
  // :701-711); with one, between the router and the routed experts, beside the dispatch.
  const bool shared_beside_dispatch = !job.runtime.moe_overlap.empty();
  if (shared && !shared_beside_dispatch) shared_experts();
  f.push_back(act_gemm_op(c, "moe.router", local, m.num_experts, h));
  f.push_back(mem_op("moe.topk", 3.0 * static_cast<double>(local) * m.num_experts * 4.0));
  if (m.latent_size > 0) push_gemm(c, f, "moe.latent_down", local, width, h);
  const double routed =
      static_cast<double>(local) * m.topk * (m.capacity_factor > 0.0 ? m.capacity_factor : 1.0);
  MoeComm mc;
  mc.local_tokens = static_cast<double>(local);
  mc.width_bytes = static_cast<double>(width) * c.act_b;
  mc.routed_bytes = routed * mc.width_bytes;
  mc.a2a_bytes = mc.routed_bytes;
  if (job.runtime.moe_dispatch_fwd_fp8) mc.dispatch_fwd_wire = kMxfp8WireBytes / c.act_b;
  if (job.runtime.moe_combine_bwd_fp8) mc.combine_bwd_wire = kMxfp8WireBytes / c.act_b;
  if (job.runtime.moe_dedup_dispatch && p.ep > 1) {
    const CommGroup g = job_group(job, GroupKind::kEp);
    mc.a2a_bytes *= dedup_dispatch_factor(m, p.ep, g.nodes);
    if (g.nodes > 1 && g.ranks_per_node > 1 && m.topk > 0) {
      // Each GPU's own copies (deduplicated per GPU) arrive through its node's counterparts.
      const double k = g.ranks_per_node;
      const double forwarded =
          mc.routed_bytes / m.topk * expected_destinations(m, p.ep) * (k - 1.0) / k;
      mc.forward_ratio = forwarded / mc.a2a_bytes;
    }
  }
  // Uneven routing: the busiest rank receives `load` times the mean routed rows; every rank waits
  // for it at the dispatch and combine, so its exchange and its experts' GEMMs set the pace.
  const double load = moe_rank_load_factor(job, m);
  mc.a2a_bytes *= load;
  if (job.runtime.moe_dispatcher != MoeDispatcher::kAllGather) {
    f.push_back(mem_op("moe.permute", 2.0 * mc.routed_bytes, permute_class(job)));
  }
  if (shared && shared_beside_dispatch) shared_experts();
  moe_dispatch(c, f, m, mc);
  // Static worst-case receive buffers (RuntimeSpec::moe_static_recv_factor): the local sort
  // after the dispatch (a gather into the expert-sorted layout) and the fan-in before the
  // combine stream the whole buffer.
  const double static_rows =
      p.ep > 1 ? std::max(0.0, job.runtime.moe_static_recv_factor) * mc.routed_bytes : 0.0;
  if (static_rows > 0.0) f.push_back(mem_op("moe.static_sort", 2.0 * static_rows));
  const int local_experts = std::max(1, m.num_experts / p.ep);
  if (job.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
    // The local experts' rows picked out of every gathered token.
    f.push_back(
        mem_op("moe.permute", 2.0 * routed * load * p.etp * mc.width_bytes, permute_class(job)));
  }
  const auto rows_total = static_cast<std::int64_t>(std::llround(routed * load * p.etp));
  const std::int64_t rows_per_expert = std::max<std::int64_t>(1, rows_total / local_experts);
  add_mlp(c, f, "moe.experts", layer.mlp, rows_per_expert, m.expert_ffn_hidden_size / p.etp,
          local_experts, width, !m.grouped_gemm);
  if (job.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
    f.push_back(
        mem_op("moe.unpermute", 2.0 * routed * load * p.etp * mc.width_bytes, permute_class(job)));
  }
  if (static_rows > 0.0) f.push_back(mem_op("moe.static_fan_in", 2.0 * static_rows));
  moe_combine(c, f, mc);
  if (job.runtime.moe_dispatcher != MoeDispatcher::kAllGather) {
    f.push_back(mem_op("moe.unpermute", 2.0 * mc.routed_bytes, permute_class(job)));
  }
  if (m.latent_norm) f.push_back(mem_op("moe.latent_norm", norm_bytes(c, local, width)));
  if (m.latent_size > 0) push_gemm(c, f, "moe.latent_up", local, h, width);
}

void add_ffn(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const std::int64_t h = c.job.model.hidden_size;
  add_hc_pre(c, f, "mlp");
  f.push_back(mem_op("mlp.norm", norm_bytes(c, c.tokens_sp, h)));
  if (!layer.is_moe) {
    tp_enter(c, f, "mlp");
    add_mlp(c, f, "mlp", layer.mlp, c.tokens, layer.mlp.ffn_hidden_size / c.tp, 1);
    tp_exit(c, f, "mlp");
  } else if (c.job.runtime.moe_dispatch != MoeDispatchKind::kPermute) {
    add_dense_moe(c, f, layer);
  } else {
    add_moe(c, f, layer);
  }
  add_hc_post(c, f, "mlp");
}

// A Mamba-2 layer (MG11 mamba_layer.py, mamba_mixer.py): norm, in_proj (column-parallel), the
// causal depthwise conv and the chunked SSD scan (one fused kernel, priced as memory-bound by the
// bytes it moves: zxBCdt in, the conv output and y out, the fp32 chunk states written and read),
// the gated RMSNorm over d_inner, out_proj (row-parallel), the residual. Its backward recomputes
// the conv and the chunk states (MG11 mamba_mixer.py:707 mamba_split_conv1d_scan_combined), so
// it moves about twice the forward's bytes.
void add_mamba(const Ctx& c, std::vector<Op>& f, const MambaSpec& m) {
  const std::int64_t h = c.job.model.hidden_size;
  const std::int64_t d_inner = m.d_inner() / c.tp;
  const std::int64_t conv_channels =
      d_inner + 2 * static_cast<std::int64_t>(m.num_groups) * m.state_dim / c.tp;
  const double T = static_cast<double>(c.tokens);
  f.push_back(mem_op("mamba.norm", norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, f, "mamba");
  push_gemm(c, f, "mamba.in_proj", c.tokens, m.in_proj_width() / c.tp, h);
  const double states =
      T / std::max(1, m.chunk_size) * static_cast<double>(d_inner) * m.state_dim * 4.0;
  Op scan = mem_op(
      "mamba.conv_scan",
      T * (static_cast<double>(m.in_proj_width()) / c.tp + conv_channels + d_inner) * c.act_b +
          2.0 * states);
  scan.bwd_bytes = 2.0 * scan.bytes;
  scan.flops = 7.0 * T * static_cast<double>(d_inner) * m.state_dim;
  f.push_back(scan);
  f.push_back(mem_op("mamba.gated_norm", 3.0 * T * static_cast<double>(d_inner) * c.act_b));
  push_gemm(c, f, "mamba.out_proj", c.tokens, h, d_inner);
  tp_exit(c, f, "mamba");
  f.push_back(mem_op("mamba.residual", 3.0 * static_cast<double>(c.tokens_sp) * h * c.act_b));
}

// A GDN / KDA layer (MG16 gdn.py:91-288; Primus PR8 gated_delta_net.py,
// kimi_delta_attention.py): norm, in_proj (column-parallel), the causal depthwise conv with SiLU
// over [q, k, v] (memory-bound: reads and writes conv_dim per token), the gate and L2-norm
// preparation (memory-bound), the chunked delta rule as the batched GEMMs of its chunks (chunk C,
// value heads per rank H: the C x C x d_k products Q K^T and K_beta K^T, the forward
// substitution as C x C x floor(C / 3), A [V_beta | K_beta e^g] and P V_new as C x C x
// (2 d_v + d_k), three C x d_k x d_v state products), the gated norm over each value head and
// out_proj (row-parallel). KDA adds its low-rank gate expansions f_b and g_b (TP-local GEMMs).
void add_linear_attention(const Ctx& c, std::vector<Op>& f, const LinearAttentionSpec& s) {
  const std::int64_t h = c.job.model.hidden_size;
  const RuntimeSpec& rt = c.job.runtime;
  const int heads = s.num_value_heads / c.tp;
  const std::int64_t v_dim = static_cast<std::int64_t>(heads) * s.value_head_dim;
  const std::int64_t conv_dim = s.conv_dim() / c.tp;
  const double T = static_cast<double>(c.tokens);
  f.push_back(mem_op("linear_attn.norm", norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, f, "linear_attn");
  push_gemm(c, f, "linear_attn.in_proj", c.tokens, s.in_proj_width() / c.tp, h);
  if (s.conv_kernel > 0) {
    Op conv = mem_op("linear_attn.conv1d", 2.0 * T * static_cast<double>(conv_dim) * c.act_b);
    conv.bwd_bytes = 2.0 * conv.bytes;  // reads input and output grad, writes both grads
    f.push_back(conv);
  }
  if (s.kind == LinearAttentionKind::kKda) {
    push_gemm(c, f, "linear_attn.f_b_proj", c.tokens,
              static_cast<std::int64_t>(heads) * s.key_head_dim, s.value_head_dim);
    // Kimi-K3's full-rank output gate is part of in_proj (no bottleneck expansion).
    if (!s.full_rank_gate)
      push_gemm(c, f, "linear_attn.g_b_proj", c.tokens, v_dim, s.value_head_dim);
  }
  // q / k L2 norms (repeated to the value heads) and the decay / beta gates.
  const double qk_rep = 2.0 * heads * s.key_head_dim;
  f.push_back(
      mem_op("linear_attn.prepare", T * (static_cast<double>(conv_dim) + qk_rep) * c.act_b));
  const std::int64_t per_seq = (rt.seq_length + s.chunk_size - 1) / s.chunk_size;
  const int tiles = static_cast<int>(rt.micro_batch_size * per_seq * heads);
  const int C = s.chunk_size;
  f.push_back(einsum_op(c, "linear_attn.chunk_scores", C, C, s.key_head_dim, 2 * tiles));
  f.push_back(einsum_op(c, "linear_attn.chunk_solve", C, C, C / 3, tiles));
  f.push_back(
      einsum_op(c, "linear_attn.chunk_wy", C, 2 * s.value_head_dim + s.key_head_dim, C, tiles));
  f.push_back(
      einsum_op(c, "linear_attn.chunk_state", C, s.value_head_dim, s.key_head_dim, 3 * tiles));
  f.push_back(mem_op("linear_attn.gated_norm", 3.0 * T * static_cast<double>(v_dim) * c.act_b));
  push_gemm(c, f, "linear_attn.out_proj", c.tokens, h, v_dim);
  tp_exit(c, f, "linear_attn");
  f.push_back(mem_op("linear_attn.residual", 3.0 * static_cast<double>(c.tokens_sp) * h * c.act_b));
}

// LFM2's gated short conv (PR10 attention.py:165-181), whole on every rank (parallel_mode None,
// TP 1 enforced by the front-end): in_proj (a GEMM h -> 3 w), B * x (reads B and x, writes w),
// the depthwise causal conv (reads and writes w; its backward moves twice the bytes), C * conv
// (reads two, writes one) and out_proj (w -> h). No norm.
void add_short_conv(const Ctx& c, std::vector<Op>& f, const LinearAttentionSpec& s) {
  const std::int64_t h = c.job.model.hidden_size;
  const double tw = static_cast<double>(c.tokens) * static_cast<double>(s.short_conv_width);
  push_gemm(c, f, "short_conv.in_proj", c.tokens, s.in_proj_width(), h);
  f.push_back(mem_op("short_conv.gate_in", 3.0 * tw * c.act_b));
  Op conv = mem_op("short_conv.conv1d", 2.0 * tw * c.act_b);
  conv.bwd_bytes = 2.0 * conv.bytes;  // reads input and output grad, writes both grads
  f.push_back(conv);
  f.push_back(mem_op("short_conv.gate_out", 3.0 * tw * c.act_b));
  push_gemm(c, f, "short_conv.out_proj", c.tokens, h, s.short_conv_width);
  f.push_back(mem_op("short_conv.residual", 3.0 * static_cast<double>(c.tokens_sp) * h * c.act_b));
}

// The backward of a forward op list: B ops (input gradients, attention backward, collectives
// mirrored) in reverse order, then W ops (weight gradients).
void add_backward(const std::vector<Op>& fwd, std::vector<Op>& out, bool sp) {
  std::vector<Op> w_ops;
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    const Op& f = *it;
    if (f.forward_only) continue;
    Op b = f;
    b.phase = WorkPhase::kB;
    b.recompute = false;
    switch (f.kind) {
      case OpKind::kGemm:
      case OpKind::kGroupedGemm: {
        if (f.weightless) {
          // d(left) = dC . right^T and d(right) = left^T . dC: both activation gradients.
          b.name = f.name + ".dgrad_a";
          b.gemm = GemmShape{f.gemm.m, f.gemm.k, f.gemm.n, f.gemm.batch, f.gemm.dtype, f.gemm.out};
          b.gemm.blockwise = f.gemm.blockwise;
          b.flops = b.gemm.flops();
          out.push_back(b);
          b.name = f.name + ".dgrad_b";
          b.gemm = GemmShape{f.gemm.k, f.gemm.n, f.gemm.m, f.gemm.batch, f.gemm.dtype, f.gemm.out};
          b.gemm.blockwise = f.gemm.blockwise;
          out.push_back(b);
          break;
        }
        b.name = f.name + ".dgrad";
        b.gemm = GemmShape{f.gemm.m, f.gemm.k, f.gemm.n, f.gemm.batch, f.gemm.dtype, f.gemm.out};
        b.gemm.blockwise = f.gemm.blockwise;
        b.flops = b.gemm.flops() * f.steps;
        out.push_back(b);
        Op w = f;
        w.phase = WorkPhase::kW;
        w.recompute = false;
        w.name = f.name + ".wgrad";
        w.gemm = GemmShape{f.gemm.n, f.gemm.k, f.gemm.m, f.gemm.batch, f.gemm.dtype, Dtype::kFp32};
        w.gemm.blockwise = f.gemm.blockwise;
        w.flops = w.gemm.flops() * f.steps;
        w_ops.push_back(w);
        break;
      }
      case OpKind::kAttention:
        b.name = f.name + ".bwd";
        b.flops = attention_bwd_flops(f.attention);
        out.push_back(b);
        break;
      case OpKind::kMemoryBound:
        b.name = f.name + ".bwd";
        b.bytes = f.bwd_bytes >= 0.0 ? f.bwd_bytes : 1.5 * f.bytes;
        out.push_back(b);
        break;
      case OpKind::kCollective:
        b.name = f.name + ".bwd";
        if (f.bwd_bytes >= 0.0) b.bytes = f.bwd_bytes;  // e.g. a quantized dispatch's gradient
        if (f.collective == CollectiveKind::kAllGather && f.group == GroupKind::kTp && sp) {
          b.collective = CollectiveKind::kReduceScatter;
        } else if (f.collective == CollectiveKind::kReduceScatter) {
          b.collective = CollectiveKind::kAllGather;
        } else if (f.collective == CollectiveKind::kAllGather) {
          b.collective = CollectiveKind::kReduceScatter;
        }
        out.push_back(b);
        break;
      case OpKind::kHostTransfer:
        break;  // offload copies are added per phase by the layer (offload_ops)
    }
  }
  // Without SP the conjugate of the forward all-reduce after a row-parallel GEMM is an all-reduce
  // of the input gradient of the column-parallel GEMM: same count and size, already mirrored.
  for (Op& w : w_ops) out.push_back(std::move(w));
}

bool layer_fully_recomputed(const JobSpec& job, int layer_index) {
  const RecomputeSpec& r = job.runtime.recompute;
  if (std::find(r.layer_ids.begin(), r.layer_ids.end(), layer_index) != r.layer_ids.end()) {
    return true;
  }
  if (r.granularity != RecomputeGranularity::kFull) return false;
  if (r.method == RecomputeMethod::kUniform || r.num_layers <= 0) return true;
  // Block: the first num_layers layers of each model chunk are recomputed.
  for (const VirtualStage& st : job.parallel.stages) {
    if (layer_index >= st.first_layer && layer_index < st.first_layer + st.num_layers) {
      return layer_index - st.first_layer < r.num_layers;
    }
  }
  return false;
}

bool module_selected(const JobSpec& job, RecomputeModule module) {
  const RecomputeSpec& r = job.runtime.recompute;
  return r.granularity == RecomputeGranularity::kSelective && r.modules.has(module);
}

// Which forward ops a selective recompute replays. The moe module (and mlp on a MoE layer)
// checkpoints the MoE layer's whole forward, its token dispatch and combine included (MG8
// moe_layer.py: custom_forward under tensor_parallel.checkpoint); no other module replays a
// collective.
bool selectively_recomputed(const JobSpec& job, const Op& op) {
  const std::string& n = op.name;
  const bool moe_block = n.rfind("moe.", 0) == 0;
  if (moe_block && (module_selected(job, RecomputeModule::kMoe) ||
                    module_selected(job, RecomputeModule::kMlp))) {
    return true;
  }
  if (op.kind == OpKind::kCollective) return false;
  if (module_selected(job, RecomputeModule::kCoreAttn) && n == "attn.core") return true;
  if (module_selected(job, RecomputeModule::kLayernorm) &&
      (n == "attn.input_norm" || n == "mlp.norm"))
    return true;
  if (module_selected(job, RecomputeModule::kMlaUpProj) && (n == "attn.q_up" || n == "attn.kv_up"))
    return true;
  if (module_selected(job, RecomputeModule::kMoeAct) && n == "moe.experts.act") return true;
  if (module_selected(job, RecomputeModule::kMlp) && n.rfind("mlp.", 0) == 0 && n != "mlp.residual")
    return true;
  if (module_selected(job, RecomputeModule::kSharedExperts) && n.rfind("moe.shared", 0) == 0)
    return true;
  return false;
}

// The share of a forward op that per-op selective checkpointing replays (model/recompute_policy.h):
// the attention core and the collectives are saved, GEMMs keep the saved share of their output
// features, every other op is recomputed. 0: nothing replayed.
double op_policy_replay(const OpPolicySaved& s, const Op& op) {
  if (op.kind == OpKind::kCollective || op.kind == OpKind::kAttention) return 0.0;
  if (op.kind != OpKind::kGemm) return 1.0;
  const std::pair<const char*, double> saved[] = {{"attn.qkv", s.qkv},
                                                  {"attn.q_proj", s.q_proj},
                                                  {"attn.q_down", s.q_down},
                                                  {"attn.q_up", s.q_up},
                                                  {"attn.kv_down", s.kv_down},
                                                  {"attn.kv_up", s.kv_up},
                                                  {"attn.out_proj", s.out_proj},
                                                  {"mlp.fc1", s.fc1},
                                                  {"mlp.fc2", s.fc2},
                                                  {"moe.shared.fc1", s.shared_fc1},
                                                  {"moe.shared.fc2", s.shared_fc2}};
  for (const auto& [name, share] : saved) {
    if (op.name == name) return 1.0 - share;
  }
  return 1.0;  // the router and anything else outside the save list
}

// Bytes of PyTorch's eager decompositions relative to the fused kernels priced above (each op
// reads and writes whole tensors): RMSNorm as upcast, pow, mean, rsqrt, multiply, downcast,
// weight multiply = 36 bytes per bf16 element against 4 fused; rotary embedding through fp32
// complex numbers (upcast, complex multiply, downcast) = 28 against 4; SwiGLU as silu then
// multiply = 10 bytes per intermediate element against 6.
void apply_eager_elementwise(std::vector<Op>& fwd) {
  for (Op& op : fwd) {
    if (op.kind != OpKind::kMemoryBound) continue;
    const std::string& n = op.name;
    double factor = 1.0;
    if (n.ends_with("norm") || n.ends_with("norms")) factor = 36.0 / 4.0;
    if (n == "attn.rope") factor = 28.0 / 4.0;
    if (n.ends_with(".act")) factor = 10.0 / 6.0;
    op.bytes *= factor;
    if (op.bwd_bytes >= 0.0) op.bwd_bytes *= factor;
  }
}

void finish_block(const JobSpec& job, std::vector<Op>& fwd, bool full_recompute, LayerWork& lw,
                  bool sp, const LayerSpec* layer = nullptr) {
  if (!job.runtime.fused_elementwise) apply_eager_elementwise(fwd);
  std::vector<Op> ops = fwd;
  const bool op_policy = layer != nullptr && !full_recompute &&
                         job.runtime.recompute.granularity == RecomputeGranularity::kOpPolicy;
  if (op_policy) {
    const OpPolicySaved saved = op_policy_saved(*layer, job.runtime.precision);
    for (const Op& f : fwd) {
      const double share = op_policy_replay(saved, f);
      if (share <= 0.0) continue;
      Op r = f;
      r.phase = WorkPhase::kB;
      r.recompute = true;
      r.name = f.name + ".recompute";
      if (share < 1.0 && r.kind == OpKind::kGemm) {
        // The replayed linears of a fused GEMM: the same rows and inputs, fewer output features.
        r.gemm.n = std::max<std::int64_t>(1, std::llround(static_cast<double>(f.gemm.n) * share));
        r.flops = r.gemm.flops();
        r.bytes *= share;
      }
      ops.push_back(r);
    }
  }
  // Recompute forward, replayed at the start of the backward.
  const bool tensor_policy = job.runtime.recompute.granularity == RecomputeGranularity::kTensors;
  for (const Op& f : fwd) {
    if (op_policy) break;
    if (full_recompute || selectively_recomputed(job, f) ||
        (tensor_policy && workload_detail::recomputed_by_tensor_policy(job, f))) {
      Op r = f;
      r.phase = WorkPhase::kB;
      r.recompute = true;
      r.name = f.name + ".recompute";
      ops.push_back(r);
    }
  }
  add_backward(fwd, ops, sp);
  if (job.runtime.precision.fp8 == Fp8Recipe::kRowwiseHpWgrad) {
    // rowwise_with_gw_hp: the weight-gradient GEMMs run in the activation dtype.
    for (Op& op : ops) {
      if (op.phase == WorkPhase::kW && op.gemm.dtype != job.runtime.precision.params_dtype &&
          (op.kind == OpKind::kGemm || op.kind == OpKind::kGroupedGemm)) {
        op.gemm.dtype = job.runtime.precision.params_dtype;
      }
    }
  }
  lw.ops = std::move(ops);
}

}  // namespace

CommGroup job_group(const JobSpec& job, GroupKind kind) {
  const ParallelSpec& p = job.parallel;
  if (!p.mesh.empty()) return workload_detail::mesh_group(job, kind);
  ParallelSizes sizes;
  sizes.tp = p.tp;
  sizes.cp = p.cp;
  sizes.dp = job.dp();
  sizes.pp = p.pp;
  sizes.ep = p.ep;
  sizes.etp = p.etp;
  sizes.dp_replicate = p.dp_replicate;
  return make_group(
      kind, sizes,
      collective_node_gpus(job.cluster.accelerator, job.cluster.network, job.cluster.gpus_per_node),
      job.cluster.network.pod_size);
}

namespace {
// Per-layer FSDP collectives of the weights a block of one stage holds (its VirtualStage).
void add_fsdp_ops(const JobSpec& job, const VirtualStage& part, LayerWork& lw) {
  if (!job.parallel.fsdp_per_layer || job.parallel.fsdp == FsdpKind::kNone) return;
  const StageParams sp = stage_params(job.model, job.parallel, part, false);
  for (Op& op : workload_detail::fsdp_layer_ops(job, sp.dense_params, sp.expert_params)) {
    lw.ops.push_back(std::move(op));
  }
}
}  // namespace

namespace {
// Per-sample GEMMs of a Flux model (docs/diffusion.md): one row per sample of the microbatch.
std::int64_t diffusion_rows(const Ctx& c) {
  return static_cast<std::int64_t>(c.job.runtime.micro_batch_size);
}
}  // namespace

// The attention-residual mixers of decoder layer i (ModelSpec::attn_res_block_size; Kimi-K3
// attention_residual.py, attn_res_kernels/_eager/reference.py:88-102): before the attention (from
// layer 1) and before the MLP, each a per-token softmax over the checkpoints and the running
// stream. Primus runs them eager in fp32: six [tokens, candidates, h] intermediates, five fp32,
// 16x the candidates' bf16 bytes (attn_res_kernels/__init__.py:25-34). Empty ops without them.
std::array<Op, 2> attn_res_mixers(const Ctx& c, int i) {
  std::array<Op, 2> out;
  const int block = c.job.model.attn_res_block_size;
  if (block <= 0) return out;
  const int nb_in = (i + block - 1) / block;
  const int nb_mlp = nb_in + (i % block == 0 ? 1 : 0);
  const double stream = static_cast<double>(c.tokens_sp) * c.job.model.hidden_size * c.act_b;
  out[0] = mem_op("attn_res.attn_mixer", 16.0 * (nb_in + 1) * stream);
  out[1] = mem_op("attn_res.mlp_mixer", 16.0 * (nb_mlp + 1) * stream);
  return out;
}

LayerWork build_layer_work(const JobSpec& job, int layer_index) {
  const Ctx c = make_ctx(job);
  const LayerSpec& layer = job.model.layers[static_cast<std::size_t>(layer_index)];
  std::vector<Op> fwd;
  if (layer.dit.streams > 0) {
    // adaLN modulation of each stream: Linear(h -> chunks x h) on the conditioning vector.
    const std::int64_t h = job.model.hidden_size;
    fwd.push_back(
        act_gemm_op(c, "dit.adaln_modulation", diffusion_rows(c),
                    static_cast<std::int64_t>(layer.dit.streams) * layer.dit.adaln_chunks * h, h));
  }
  if (layer.has_mamba()) add_mamba(c, fwd, layer.mamba);
  const std::array<Op, 2> mixers = attn_res_mixers(c, layer_index);
  if (layer_index > 0 && mixers[0].bytes > 0.0) fwd.push_back(mixers[0]);
  if (layer.has_linear_attention()) {
    if (layer.linear.short_conv()) {
      add_short_conv(c, fwd, layer.linear);
    } else {
      add_linear_attention(c, fwd, layer.linear);
    }
  }
  if (layer.has_attention()) add_attention(c, fwd, layer);
  if (mixers[1].bytes > 0.0) fwd.push_back(mixers[1]);
  if (layer.has_ffn()) add_ffn(c, fwd, layer);
  LayerWork lw;
  lw.layer = layer_index;
  switch (layer.kind) {
    case LayerKind::kTransformer:
      lw.label = layer.is_moe ? "moe_layer" : "dense_layer";
      break;
    case LayerKind::kAttention:
      lw.label = "attention_layer";
      break;
    case LayerKind::kMamba:
      lw.label = "mamba_layer";
      break;
    case LayerKind::kFfn:
      lw.label = layer.is_moe ? "moe_ffn_layer" : "mlp_layer";
      break;
    case LayerKind::kLinearTransformer:
      if (layer.linear.short_conv()) {
        lw.label = layer.is_moe ? "short_conv_moe_layer" : "short_conv_dense_layer";
      } else {
        lw.label = layer.is_moe ? "linear_moe_layer" : "linear_dense_layer";
      }
      break;
    case LayerKind::kLinearAttention:
      lw.label = "linear_attention_layer";
      break;
  }
  finish_block(job, fwd, layer_fully_recomputed(job, layer_index), lw, c.sp, &layer);
  for (Op& op : workload_detail::offload_ops(job, layer)) lw.ops.push_back(std::move(op));
  add_fsdp_ops(job, VirtualStage{layer_index, 1, false, false, 0}, lw);
  return lw;
}

namespace {

// Flux's input side beside img_in (the "embedding"; PR9 model.py:178-199, 480-507): txt_in on
// the text tokens and the per-sample time / vector / guidance MLPs (in -> h, h -> h).
void add_diffusion_embedders(const Ctx& c, std::vector<Op>& fwd) {
  const DiffusionSpec& d = c.job.model.diffusion;
  const std::int64_t h = c.job.model.hidden_size;
  const std::int64_t b = c.job.runtime.micro_batch_size;
  fwd.push_back(
      act_gemm_op(c, "diffusion.txt_in", b * d.text_tokens / c.job.parallel.cp, h, d.context_dim));
  const std::int64_t in =
      d.model_channels + d.vec_in_dim + (d.guidance_embed ? d.model_channels : 0);
  fwd.push_back(act_gemm_op(c, "diffusion.embedders_in", b, h, in));
  const std::int64_t mlps = d.guidance_embed ? 3 : 2;
  fwd.push_back(act_gemm_op(c, "diffusion.embedders_out", b, mlps * h, h));
}

LayerWork embedding_work(const Ctx& c) {
  const std::int64_t h = c.job.model.hidden_size;
  std::vector<Op> fwd;
  fwd.push_back(mem_op("embedding.lookup", 2.0 * static_cast<double>(c.tokens_sp) * h * c.act_b,
                       MemOpClass::kPermute));
  if (c.job.model.diffusion.enabled()) add_diffusion_embedders(c, fwd);
  LayerWork lw;
  lw.label = "embedding";
  lw.ops = fwd;
  // The weight gradient is a scatter-add of the output gradient into the (fp32) grad buffer.
  Op w = mem_op("embedding.wgrad", static_cast<double>(c.tokens_sp) * h * (c.act_b + 8.0),
                MemOpClass::kPermute);
  w.phase = WorkPhase::kW;
  lw.ops.push_back(w);
  add_fsdp_ops(c.job, VirtualStage{0, 0, true, false, 0}, lw);
  return lw;
}

void add_output_head(const Ctx& c, std::vector<Op>& fwd, const std::string& prefix) {
  const JobSpec& job = c.job;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t v_local = padded_vocab_size(job.model, c.tp) / c.tp;
  fwd.push_back(mem_op(prefix + ".final_norm", norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, fwd, prefix);
  // Flux: norm_out's modulation per sample, proj_out on the image tokens only.
  const DiffusionSpec& d = job.model.diffusion;
  const std::int64_t rows =
      d.enabled() ? job.runtime.micro_batch_size * d.image_tokens / job.parallel.cp : c.tokens;
  if (d.enabled()) {
    fwd.push_back(
        act_gemm_op(c, prefix + ".adaln_modulation", job.runtime.micro_batch_size, 2 * h, h));
  }
  if (c.gemm_output != c.act) {
    push_gemm(c, fwd, prefix + ".logits", rows, v_local, h);
  } else {
    fwd.push_back(act_gemm_op(c, prefix + ".logits", rows, v_local, h));
  }
  // Without a vocabulary-parallel loss the logits are gathered and every TP rank runs the loss on
  // the full vocabulary.
  const bool gathered = c.tp > 1 && !job.parallel.vocab_parallel_loss;
  if (gathered) {
    fwd.push_back(comm_op(prefix + ".logits_all_gather", GroupKind::kTp, CollectiveKind::kAllGather,
                          c.tp, static_cast<double>(c.tokens) * v_local * c.tp * c.act_b));
  }
  // Cross entropy over the vocabulary shard: fused it reads the logits once and writes the
  // gradient once; unfused it also writes and re-reads an fp32 copy (softmax, log, gather).
  const double logits = static_cast<double>(rows) * v_local * (gathered ? c.tp : 1);
  const double loss_bytes = job.runtime.cross_entropy_fusion
                                ? logits * (c.act_b + c.act_b)
                                : logits * (c.act_b + 4.0 + 4.0 + 4.0 + 4.0);
  fwd.push_back(mem_op(prefix + ".cross_entropy", loss_bytes, MemOpClass::kLoss));
  if (c.tp > 1 && !gathered) {
    fwd.push_back(comm_op(prefix + ".loss_all_reduce", GroupKind::kTp, CollectiveKind::kAllReduce,
                          c.tp, 3.0 * c.tokens * 4.0));
  }
}

// A vocab-tiled loss (RuntimeSpec::vocab_tiles; MaxText utils/vocabulary_tiling.py:197-277)
// replays each tile's logits GEMM and loss forward in its backward: the whole head's forward
// once more, placed before the head's backward ops (priced as one GEMM over all the tokens).
void add_vocab_tile_recompute(const JobSpec& job, const std::vector<Op>& fwd, LayerWork& lw) {
  if (job.runtime.vocab_tiles <= 1) return;
  std::vector<Op> replay;
  for (const Op& f : fwd) {
    if (f.name != "output.logits" && f.name != "output.cross_entropy") continue;
    Op r = f;
    r.phase = WorkPhase::kB;
    r.recompute = true;
    r.name = f.name + ".recompute";
    replay.push_back(r);
  }
  const auto first_b = std::find_if(lw.ops.begin(), lw.ops.end(),
                                    [](const Op& op) { return op.phase != WorkPhase::kF; });
  lw.ops.insert(first_b, replay.begin(), replay.end());
}

// A loss that computes its gradients in the forward (RuntimeSpec::loss_grad_in_forward; FLA's
// fused linear cross entropy): the head's input- and weight-gradient GEMMs and the loss gradient
// run tile by tile inside the forward; nothing is replayed.
void move_loss_grad_to_forward(LayerWork& lw) {
  for (Op& op : lw.ops) {
    const bool head =
        op.name.rfind("output.logits", 0) == 0 || op.name.rfind("output.cross_entropy", 0) == 0;
    if (head) op.phase = WorkPhase::kF;
  }
  std::stable_partition(lw.ops.begin(), lw.ops.end(),
                        [](const Op& op) { return op.phase == WorkPhase::kF; });
}

LayerWork output_work(const Ctx& c) {
  std::vector<Op> fwd;
  add_output_head(c, fwd, "output");
  LayerWork lw;
  lw.label = "output";
  finish_block(c.job, fwd, false, lw, c.sp);
  if (c.job.runtime.vocab_tiles > 1 && c.job.runtime.loss_grad_in_forward) {
    move_loss_grad_to_forward(lw);
  } else {
    add_vocab_tile_recompute(c.job, fwd, lw);
  }
  // The output layer (a tied one is the embedding, gathered again here).
  const int layers = c.job.model.num_layers();
  add_fsdp_ops(c.job, VirtualStage{layers, 0, false, true, 0}, lw);
  return lw;
}

LayerWork mtp_work(const Ctx& c, int depth) {
  const JobSpec& job = c.job;
  const std::int64_t h = job.model.hidden_size;
  std::vector<Op> fwd;
  fwd.push_back(mem_op("mtp.norms", 2.0 * norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, fwd, "mtp");
  push_gemm(c, fwd, "mtp.eh_proj", c.tokens, h / c.tp, 2 * h);
  tp_exit(c, fwd, "mtp");
  add_attention(c, fwd, job.model.layers.back());
  add_ffn(c, fwd, job.model.layers.back());
  add_output_head(c, fwd, "mtp.output");
  LayerWork lw;
  lw.label = "mtp_" + std::to_string(depth);
  finish_block(job, fwd, false, lw, c.sp);
  return lw;
}

// PyTorch FSDP2 (one unit per block, embedding, norm + output): gradients reduce-scatter in the
// shard group, then (HSDP) all-reduce across the replicate groups; weights all-gather in the
// shard group before the forward and, with reshard_after_forward, again before the backward.
// With fp8 all-gather the GEMM weights travel in one byte.
void add_fsdp2_comm(const JobSpec& job, const Ctx& c, const StageParams& sp, int ch,
                    IterationWork& it) {
  const ParallelSpec& p = job.parallel;
  const PrecisionSpec& pr = job.runtime.precision;
  const double grad_b = bytes_per_element(job.runtime.main_grads_dtype);
  const int rep = std::max(1, p.dp_replicate);
  const bool hsdp = rep > 1;
  const Overlap grad_ov = p.overlap_grad_reduce ? Overlap::kWithCompute : Overlap::kExposed;
  struct Part {
    const char* name;
    GroupKind group;
    int shard;
    double params;
    double gather_bytes;
  };
  const double dense_gather =
      pr.fp8_param ? sp.dense_gemm_params + (sp.dense_params - sp.dense_gemm_params) * c.act_b
                   : sp.dense_params * c.act_b;
  const double expert_gather = sp.expert_params * (pr.fp8_param && pr.fp8_experts ? 1.0 : c.act_b);
  const Part parts[] = {{"dp", hsdp ? GroupKind::kDpCpShard : GroupKind::kDpCp,
                         job.fsdp_shard_size(), sp.dense_params, dense_gather},
                        {"edp", hsdp ? GroupKind::kEdpShard : GroupKind::kEdp,
                         std::max(1, job.expert_dp() / rep), sp.expert_params, expert_gather}};
  for (const Part& part : parts) {
    if (part.params <= 0.0) continue;
    const std::string n = part.name;
    if (part.shard > 1) {
      it.grad_sync.push_back(comm_op(n + ".grad_sync", part.group, CollectiveKind::kReduceScatter,
                                     part.shard, part.params * grad_b, grad_ov));
      it.grad_sync_chunk.push_back(ch);
    }
    if (hsdp) {
      it.grad_sync.push_back(comm_op(n + ".grad_sync_replicate", GroupKind::kDpCpReplicate,
                                     CollectiveKind::kAllReduce, rep,
                                     part.params * grad_b / part.shard, grad_ov));
      it.grad_sync_chunk.push_back(ch);
    }
    if (part.shard <= 1) continue;
    for (int pass = 0; pass < (p.reshard_after_forward ? 2 : 1); ++pass) {
      it.param_gather.push_back(comm_op(n + (pass == 0 ? ".param_gather" : ".param_gather_bwd"),
                                        part.group, CollectiveKind::kAllGather, part.shard,
                                        part.gather_bytes, Overlap::kWithCompute));
      it.param_gather_chunk.push_back(ch);
    }
  }
}

// The blocks of one virtual stage: embedding, its decoder layers (consecutive layers of the same
// shape and recompute policy do identical work: one block stands for all of them, so building and
// pricing scale with distinct layers only), MTP layers, output head.
ChunkWork chunk_work(const JobSpec& job, const Ctx& c, const VirtualStage& st, int r, int ch) {
  ChunkWork cw;
  cw.pp_rank = r;
  cw.chunk = ch;
  if (st.has_embedding) cw.blocks.push_back(embedding_work(c));
  for (int i = st.first_layer; i < st.first_layer + st.num_layers; ++i) {
    if (!cw.blocks.empty() && cw.blocks.back().layer >= 0) {
      LayerWork& prev = cw.blocks.back();
      const int last = prev.layer + prev.count - 1;
      if (last == i - 1 &&
          same_layer_shape(job.model.layers[static_cast<std::size_t>(last)],
                           job.model.layers[static_cast<std::size_t>(i)]) &&
          layer_fully_recomputed(job, last) == layer_fully_recomputed(job, i)) {
        ++prev.count;
        continue;
      }
    }
    cw.blocks.push_back(build_layer_work(job, i));
  }
  for (int d = 0; d < st.mtp_layers; ++d) cw.blocks.push_back(mtp_work(c, d));
  if (st.has_output) cw.blocks.push_back(output_work(c));
  return cw;
}

// Data-parallel traffic of one chunk (Megatron DDP / distributed optimizer / FSDP1): gradient
// synchronisation once its backward is done; parameter all-gathers after the optimizer
// (distributed optimizer) or before each use (FSDP: forward and backward, counted here once per
// pass).
void add_dp_comm(const JobSpec& job, const Ctx& c, const StageParams& sp, int ch,
                 IterationWork& it) {
  const ParallelSpec& p = job.parallel;
  const double grad_b = bytes_per_element(job.runtime.main_grads_dtype);
  const int dense_dp = job.dp() * p.cp;
  const bool sharded = p.distributed_optimizer || p.fsdp != FsdpKind::kNone;
  const CollectiveKind op = sharded ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce;
  const Overlap grad_ov = p.overlap_grad_reduce ? Overlap::kWithCompute : Overlap::kExposed;
  if (dense_dp > 1) {
    it.grad_sync.push_back(
        comm_op("dp.grad_sync", GroupKind::kDpCp, op, dense_dp, sp.dense_params * grad_b, grad_ov));
    it.grad_sync_chunk.push_back(ch);
  }
  if (job.expert_dp() > 1 && sp.expert_params > 0) {
    it.grad_sync.push_back(comm_op("edp.grad_sync", GroupKind::kEdp, op, job.expert_dp(),
                                   sp.expert_params * grad_b, grad_ov));
    it.grad_sync_chunk.push_back(ch);
  }
  if (!sharded) return;
  const int passes = p.fsdp != FsdpKind::kNone ? 2 : 1;
  const Overlap ov = (p.overlap_param_gather || p.fsdp != FsdpKind::kNone) ? Overlap::kWithCompute
                                                                           : Overlap::kExposed;
  for (int pass = 0; pass < passes; ++pass) {
    if (dense_dp > 1) {
      it.param_gather.push_back(comm_op("dp.param_gather", GroupKind::kDpCp,
                                        CollectiveKind::kAllGather, dense_dp,
                                        sp.dense_params * c.act_b, ov));
      it.param_gather_chunk.push_back(ch);
    }
    if (job.expert_dp() > 1 && sp.expert_params > 0) {
      it.param_gather.push_back(comm_op("edp.param_gather", GroupKind::kEdp,
                                        CollectiveKind::kAllGather, job.expert_dp(),
                                        sp.expert_params * c.act_b, ov));
      it.param_gather_chunk.push_back(ch);
    }
  }
}

// Optimizer step over this rank's shard: the bytes it reads and writes per parameter follow the
// optimizer and its dtypes (accounting.h, shared with the memory projection).
Op optimizer_op(const JobSpec& job, double dense_total, double expert_total) {
  const ParallelSpec& p = job.parallel;
  const bool sharded = p.distributed_optimizer || p.fsdp != FsdpKind::kNone;
  const int replicate = std::max(1, p.dp_replicate);
  const double shard_params = sharded ? dense_total / std::max(1, job.dp() * p.cp / replicate) +
                                            expert_total / std::max(1, job.expert_dp() / replicate)
                                      : dense_total + expert_total;
  const double bytes_per_param = optimizer_bytes_per_param(job.runtime).step_traffic_bytes;
  return mem_op("optimizer.step", shard_params * bytes_per_param, MemOpClass::kOptimizer);
}

}  // namespace

Workload build_workload(const JobSpec& job) {
  require_modelled(job.model, ProjectionStage::kWorkload);
  if (job.model.family == ModelFamily::kRecommendation) {
    return workload_detail::build_recsys_workload(job);
  }
  const Ctx c = make_ctx(job);
  const ParallelSpec& p = job.parallel;
  Workload wl;
  wl.ranks.resize(static_cast<std::size_t>(p.pp));
  for (int r = 0; r < p.pp; ++r) {
    RankWork& rw = wl.ranks[static_cast<std::size_t>(r)];
    rw.pp_rank = r;
    // Hyper-connections send all K streams between stages ([S K, B, D], PR11 deepseek_v4_block.py).
    rw.p2p_bytes = static_cast<double>(c.tokens_sp) * job.model.hidden_size * c.act_b *
                   std::max(1, job.model.hc_mult);
    // Attention residuals send the stream and every checkpoint slot, zero-padded to the most a
    // stage can hold: 1 + ceil(layers / block) slabs (Kimi-K3 kimi_k3_pp_shape_patches.py:83-101).
    const int block = job.model.attn_res_block_size;
    if (block > 0) rw.p2p_bytes *= 1 + (job.model.num_layers() + block - 1) / block;
    double dense_total = 0.0;
    double expert_total = 0.0;
    bool holds_embedding = false;
    for (int ch = 0; ch < p.vpp; ++ch) {
      const VirtualStage& st = p.stage(r, ch);
      rw.chunks.push_back(chunk_work(job, c, st, r, ch));
      const StageParams sp = stage_params(job.model, p, st, holds_embedding);
      holds_embedding = holds_embedding || st.has_embedding;
      dense_total += sp.dense_params;
      expert_total += sp.expert_params;
      // Per-layer FSDP reduces and gathers inside the layers' blocks (add_fsdp_ops).
      if (p.fsdp_per_layer && p.fsdp != FsdpKind::kNone) continue;
      if (p.fsdp == FsdpKind::kFsdp2) {
        add_fsdp2_comm(job, c, sp, ch, rw.iteration);
      } else {
        add_dp_comm(job, c, sp, ch, rw.iteration);
      }
    }
    rw.iteration.local_params = static_cast<std::int64_t>(dense_total + expert_total);
    rw.iteration.optimizer = optimizer_op(job, dense_total, expert_total);
  }
  return wl;
}

std::string_view to_string(WorkPhase p) {
  switch (p) {
    case WorkPhase::kF:
      return "F";
    case WorkPhase::kB:
      return "B";
    case WorkPhase::kW:
      return "W";
  }
  return "?";
}

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kGroupedGemm:
      return "grouped_gemm";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kMemoryBound:
      return "memory";
    case OpKind::kCollective:
      return "collective";
    case OpKind::kHostTransfer:
      return "host_transfer";
  }
  return "?";
}

namespace workload_detail {

void add_backward_ops(const std::vector<Op>& fwd, std::vector<Op>& out) {
  add_backward(fwd, out, false);
}

Op memory_op(std::string name, double bytes, MemOpClass cls) {
  return mem_op(std::move(name), bytes, cls);
}

Op collective_op(std::string name, GroupKind group, CollectiveKind kind, int size, double bytes) {
  return comm_op(std::move(name), group, kind, size, bytes);
}

}  // namespace workload_detail
}  // namespace projector
