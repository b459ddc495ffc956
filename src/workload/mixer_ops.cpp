// Sequence mixers other than attention (layer_ops.h): Mamba-2, gated delta-rule linear
// attention, short convolutions.
#include <algorithm>
#include <cmath>

#include "projector/cost/linear_attention.h"
#include "projector/model/accounting.h"
#include "workload/layer_ops.h"

namespace projector::workload_detail {

// A Mamba-2 layer (MG11 mamba_layer.py, mamba_mixer.py): norm, in_proj (column-parallel), the
// causal depthwise conv with SiLU over xBC (causal_conv1d: reads and writes the conv channels; its
// backward moves twice that), the chunked SSD scan as its chunk products and state pass
// (cost/linear_attention.h; the backward's recomputation and decay gradient as backward-only
// ops), the gated RMSNorm over d_inner, out_proj (row-parallel), the residual. The scan runs
// over the rank's heads and groups, for every sequence of the microbatch.
void add_mamba(const Ctx& c, std::vector<Op>& f, const MambaSpec& m) {
  const std::int64_t h = c.job.model.hidden_size;
  const std::int64_t d_inner = m.d_inner() / c.tp;
  const std::int64_t conv_channels =
      d_inner + 2 * static_cast<std::int64_t>(m.num_groups) * m.state_dim / c.tp;
  const double T = static_cast<double>(c.tokens);
  f.push_back(mem_op("mamba.norm", norm_bytes(c, c.tokens_sp, h)));
  tp_enter(c, f, "mamba");
  push_gemm(c, f, "mamba.in_proj", c.tokens, m.in_proj_width() / c.tp, h);
  Op conv = mem_op("mamba.conv1d", 2.0 * T * static_cast<double>(conv_channels) * c.act_b);
  conv.bwd_bytes = 2.0 * conv.bytes;
  f.push_back(conv);
  const RuntimeSpec& rt = c.job.runtime;
  const SsdShape ssd{rt.micro_batch_size, c.tokens / std::max<std::int64_t>(1, rt.micro_batch_size),
                     m.num_heads / c.tp,  m.head_dim,
                     m.state_dim,         m.num_groups / c.tp,
                     m.chunk_size,        c.act};
  for (const ChunkGemm& g : ssd_chunk_gemms(ssd)) {
    Op op = einsum_op(c, g.name, g.shape.m, g.shape.n, g.shape.k, static_cast<int>(g.shape.batch));
    op.gemm = g.shape;
    f.push_back(op);
  }
  Op pass = mem_op("mamba.ssd_state_pass", ssd_state_pass_bytes(ssd));
  pass.bwd_bytes = 3.0 * pass.bytes;  // replayed, then states and their gradients read, one written
  f.push_back(pass);
  for (const ChunkGemm& g : ssd_backward_extra_gemms(ssd)) {
    Op op = einsum_op(c, g.name, g.shape.m, g.shape.n, g.shape.k, static_cast<int>(g.shape.batch));
    op.gemm = g.shape;
    op.backward_only = true;
    f.push_back(op);
  }
  f.push_back(mem_op("mamba.gated_norm", 3.0 * T * static_cast<double>(d_inner) * c.act_b));
  push_gemm(c, f, "mamba.out_proj", c.tokens, h, d_inner);
  tp_exit(c, f, "mamba");
  f.push_back(mem_op("mamba.residual", 3.0 * static_cast<double>(c.tokens_sp) * h * c.act_b));
}

// A GDN / KDA layer (MG16 gdn.py:91-288; Primus PR8 gated_delta_net.py,
// kimi_delta_attention.py): norm, in_proj (column-parallel), the causal depthwise conv with SiLU
// over [q, k, v] (memory-bound: reads and writes conv_dim per token), the gate and L2-norm
// preparation (memory-bound), the chunked delta rule as the batched GEMMs of its chunks over the
// rank's value heads (cost/linear_attention.h), the gated norm over each value head and out_proj
// (row-parallel). KDA adds its low-rank gate expansions f_b and g_b (TP-local GEMMs).
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
  for (const ChunkGemm& g :
       delta_rule_chunk_gemms(rt.micro_batch_size, rt.seq_length, heads, s.key_head_dim,
                              s.value_head_dim, s.chunk_size, c.act)) {
    f.push_back(
        einsum_op(c, g.name, g.shape.m, g.shape.n, g.shape.k, static_cast<int>(g.shape.batch)));
  }
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

}  // namespace projector::workload_detail
