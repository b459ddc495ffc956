// Flash-attention forward/backward time: a per-tile model (query tiles x KV tiles over the CUs,
// wave quantization, causal and sliding-window tile skipping) scaled by the calibrated attention
// fractions. FLOPs are counted the way the FlashAttention papers count them.
#pragma once

#include <cstdint>

#include "projector/cost/op_cost.h"
#include "projector/hardware/hardware.h"
#include "projector/model/job.h"

namespace projector {

struct AttentionShape {
  std::int64_t batch = 1;
  int q_heads = 1;
  int kv_heads = 1;  // GQA: K/V traffic only; the FLOPs follow the query heads
  std::int64_t seq_q = 0;
  std::int64_t seq_kv = 0;
  int head_dim_qk = 128;
  int head_dim_v = 128;
  bool causal = true;
  std::int64_t window = 0;  // sliding window (keys visible per query); 0 = unlimited
  Dtype dtype = Dtype::kBf16;
  AttentionKernel kernel = AttentionKernel::kFused;  // which calibrated fractions apply

  friend bool operator==(const AttentionShape&, const AttentionShape&) = default;
};

// Visible (query, key) pairs per head; causal masks are bottom-right aligned like FlashAttention.
double attention_visible_pairs(const AttentionShape& s);
// 2 x pairs x (d_qk + d_v) x batch x heads: equals 4*b*h*sq*skv*d, halved (approximately) when
// causal. The backward counts 2.5x this (QK^T recompute, dP, dV, dQ, dK).
double attention_fwd_flops(const AttentionShape& s);
double attention_bwd_flops(const AttentionShape& s);

// Forward: workgroups of 128 query rows sweep their visible 128-wide KV tiles; backward: workgroups
// of 128 keys sweep their visible 64-row query tiles. The time of a tile is its matmul FLOPs plus
// a softmax term (128 matmul-FLOP equivalents per score: exp/rescale on the vector units, which
// makes small head dims less efficient), at peak x sustained/boost x attention fraction / CUs.
// Makespan = max(total work / CUs, longest workgroup) for uneven (causal) work, and
// ceil(workgroups / CUs) x workgroup time for even work.
OpCost attention_fwd_time(const AcceleratorSpec& acc, const AttentionShape& s);
OpCost attention_bwd_time(const AcceleratorSpec& acc, const AttentionShape& s);

}  // namespace projector
