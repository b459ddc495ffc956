// The chunked gated delta rule (GDN / KDA linear attention) and Mamba-2's chunked SSD scan as the
// batched GEMMs of their chunks, shared by the workload (workload/mixer_ops.cpp) and
// `projector kernels` (kernels/price.cpp).
#pragma once

#include <array>
#include <cstdint>

#include "projector/cost/gemm.h"

namespace projector {

// One batched GEMM of the chunk algorithm and the name the workload gives it.
struct ChunkGemm {
  const char* name;
  GemmShape shape;
};

// The forward of the chunked delta rule over `sequences` sequences of `seq_len` tokens, `heads`
// value heads, key / value head dims `key_dim` / `value_dim`, chunks of `chunk` tokens (FLA's
// chunk_gated_delta_rule, MG16 gdn.py:73: 64): per chunk and head the C x C x d_k products
// Q K^T and K_beta K^T, the forward substitution of the C x C lower-triangular system as
// C x C x floor(C / 3), A [V_beta | K_beta e^g] and P V_new as C x (2 d_v + d_k) x C, and three
// C x d_v x d_k state products (the state update, the inter-chunk output and the new values).
// The backward of each is the two gradient GEMMs of an activation product
// (weightless_backward_shapes).
std::array<ChunkGemm, 4> delta_rule_chunk_gemms(std::int64_t sequences, std::int64_t seq_len,
                                                int heads, int key_dim, int value_dim, int chunk,
                                                Dtype dtype);

// Mamba-2's chunked SSD scan (mamba_ssm ops/triton/ssd_combined.py, MB1), over `sequences`
// sequences of `seq_len` tokens: `heads` heads of `head_dim` channels, B and C shared by `groups`
// groups of `state_dim`, chunks of `chunk` tokens.
struct SsdShape {
  std::int64_t sequences = 1;
  std::int64_t seq_len = 0;
  int heads = 0;
  int head_dim = 0;
  int state_dim = 0;
  int groups = 1;
  int chunk = 0;
  Dtype dtype = Dtype::kBf16;
  std::int64_t chunks() const { return sequences * ((seq_len + chunk - 1) / chunk); }
};

// The forward's four chunk products, one batched GEMM each (GemmShape::ssd_chunk): per chunk and
// head the chunk state x^T B (head_dim x state_dim over the chunk, fp32 out: _chunk_state_fwd);
// per chunk and group C B^T (chunk x chunk over state_dim, fp32 out: _bmm_chunk_fwd); per chunk
// and head the intra-chunk output (C B^T masked) x (chunk x head_dim over the chunk) and the
// inter-chunk output C . state (chunk x head_dim over state_dim), both in _chunk_scan_fwd.
// The backward of each is the two gradient GEMMs of an activation product
// (weightless_backward_shapes).
std::array<ChunkGemm, 4> ssd_chunk_gemms(const SsdShape& s);

// What the backward adds beyond those gradients (_mamba_chunk_scan_combined_bwd): it recomputes
// the chunk states and C B^T before differentiating, and forms the decay gradient from
// dout . x^T (chunk x chunk over head_dim, per chunk and head: _chunk_scan_bwd_ddAcs_stable).
std::array<ChunkGemm, 3> ssd_backward_extra_gemms(const SsdShape& s);

// Bytes of the forward's memory-bound steps: the per-head decay cumsum (_chunk_cumsum_fwd: dt
// read, dt and its cumsum written in fp32) and the sequential pass over the chunk states
// (_state_passing_fwd: fp32 states read, states in `dtype` written).
double ssd_state_pass_bytes(const SsdShape& s);

}  // namespace projector
