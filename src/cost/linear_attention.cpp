// The chunked delta rule's GEMMs (cost/linear_attention.h).
#include "projector/cost/linear_attention.h"

namespace projector {

std::array<ChunkGemm, 4> delta_rule_chunk_gemms(std::int64_t sequences, std::int64_t seq_len,
                                                int heads, int key_dim, int value_dim, int chunk,
                                                Dtype dtype) {
  const std::int64_t per_seq = (seq_len + chunk - 1) / chunk;
  const std::int64_t tiles = sequences * per_seq * heads;
  const std::int64_t c = chunk;
  auto shape = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
    return GemmShape{m, n, k, batch, dtype, dtype};
  };
  return {{{"linear_attn.chunk_scores", shape(c, c, key_dim, 2 * tiles)},
           {"linear_attn.chunk_solve", shape(c, c, c / 3, tiles)},
           {"linear_attn.chunk_wy", shape(c, 2 * value_dim + key_dim, c, tiles)},
           {"linear_attn.chunk_state", shape(c, value_dim, key_dim, 3 * tiles)}}};
}

}  // namespace projector
