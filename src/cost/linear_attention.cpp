// The chunked delta rule's and Mamba-2 SSD's chunk GEMMs (cost/linear_attention.h).
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

namespace {
GemmShape ssd_gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch, Dtype in,
                   Dtype out) {
  GemmShape g{m, n, k, batch, in, out};
  g.ssd_chunk = true;
  return g;
}
}  // namespace

std::array<ChunkGemm, 4> ssd_chunk_gemms(const SsdShape& s) {
  const std::int64_t c = s.chunk, p = s.head_dim, n = s.state_dim;
  const std::int64_t per_head = s.chunks() * s.heads;
  const std::int64_t per_group = s.chunks() * s.groups;
  return {{{"mamba.ssd_chunk_state", ssd_gemm(p, n, c, per_head, s.dtype, Dtype::kFp32)},
           {"mamba.ssd_bmm", ssd_gemm(c, c, n, per_group, s.dtype, Dtype::kFp32)},
           {"mamba.ssd_scan_diag", ssd_gemm(c, p, c, per_head, s.dtype, s.dtype)},
           {"mamba.ssd_scan_states", ssd_gemm(c, p, n, per_head, s.dtype, s.dtype)}}};
}

std::array<ChunkGemm, 3> ssd_backward_extra_gemms(const SsdShape& s) {
  const std::array<ChunkGemm, 4> f = ssd_chunk_gemms(s);
  const std::int64_t c = s.chunk, p = s.head_dim;
  return {{{"mamba.ssd_chunk_state.recompute", f[0].shape},
           {"mamba.ssd_bmm.recompute", f[1].shape},
           {"mamba.ssd_ddA", ssd_gemm(c, c, p, s.chunks() * s.heads, s.dtype, Dtype::kFp32)}}};
}

double ssd_state_pass_bytes(const SsdShape& s) {
  const double tokens = static_cast<double>(s.sequences) * static_cast<double>(s.seq_len);
  const double cumsum = tokens * s.heads * (bytes_per_element(s.dtype) + 2.0 * 4.0);
  const double states = static_cast<double>(s.chunks()) * s.heads * s.head_dim * s.state_dim;
  return cumsum + states * (4.0 + bytes_per_element(s.dtype));
}

}  // namespace projector
