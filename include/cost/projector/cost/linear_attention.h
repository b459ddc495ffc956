// The chunked gated delta rule (GDN / KDA linear attention) as the batched GEMMs of its chunks,
// shared by the workload (workload/mixer_ops.cpp) and `projector kernels` (kernels/price.cpp).
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

}  // namespace projector
