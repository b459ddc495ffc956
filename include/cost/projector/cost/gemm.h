// GEMM and grouped-GEMM time: a tile/wave model in the spirit of Origami and NVIDIA's
// "dimension quantization" guide, scaled by the accelerator's calibrated large-GEMM fraction.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "projector/cost/op_cost.h"
#include "projector/hardware/hardware.h"

namespace projector {

// C[m x n] = A[m x k] . B[k x n], `batch` independent problems of that shape (transposes do not
// matter to the model). `dtype` is the input dtype; fp8/mxfp8/fp4 outputs are written in `out`.
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  Dtype dtype = Dtype::kBf16;
  Dtype out = Dtype::kBf16;
  // fp8 with DeepSeek-style block scales (1 x 128 activations, 128 x 128 weights): priced with the
  // accelerator's gemm_fp8_blockwise_fraction where it has one (the per-block scaling runs in the
  // main loop), else like per-tensor fp8.
  bool blockwise = false;
  // One of Mamba-2's chunked SSD products (cost/linear_attention.h ssd_chunk_gemms): mamba_ssm's
  // Triton chunk kernels, whose main loop runs at the accelerator's ssd_scan_fraction of the dense
  // rate where it has one (fitted on data/kernels), else at the dense rate (an upper bound).
  bool ssd_chunk = false;

  double flops() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

// The dtype a GEMM in `d` is actually priced in: `d` when the accelerator has a peak for it, else
// the next wider supported format (fp4 -> mxfp8 -> fp8 -> bf16 -> fp16 -> tf32 -> fp32).
Dtype gemm_compute_dtype(const AcceleratorSpec& acc, Dtype d);

// Time of one GEMM kernel (launch and fixed overheads included). Pure function of its inputs.
// Model: for each candidate macro tile (64..256 x 64..256, those that fit the LDS) take
//   t = launch + fixed + prologue + max(t_compute, t_hbm),
//   t_compute = waves x (2*BM*BN*K / (per-CU rate x tile efficiency) + epilogue),
// the epilogue (the tile's output store at the CU's share of HBM) paid per tile, or only once
// where the part overlaps it with the next tile (AcceleratorSpec::gemm_epilogue_overlapped),
// with waves = ceil(tiles / CUs) (data-parallel) or tiles / CUs plus a fix-up (stream-K, only
// when tiles >= CUs), per-CU rate = peak(dtype) x sustained/boost clock x gemm_peak_fraction / CUs,
// and t_hbm the A/B traffic of each wave (square-ish wave footprint, L2 reuse inside a wave) plus
// C, at HBM bandwidth; the minimum over candidates is returned, like a heuristic library's choice.
OpCost gemm_time(const AcceleratorSpec& acc, const GemmShape& shape);

// The two gradient GEMMs of an activation x activation product C = A . B (no weight, so no
// weight gradient): dA = dC . B^T (m x k, over n) and dB = A^T . dC (k x n, over m).
std::array<GemmShape, 2> weightless_backward_shapes(const GemmShape& forward);

// Grouped GEMM (MoE experts in one kernel): `groups` problems [m_g x k] . [k x n]. Per-group M is
// padded to the tile, every group reads its own weights, and the main loop runs at
// grouped_gemm_fraction of the dense rate. Small M (few tokens per expert) therefore loses both to
// tile padding and to weight traffic.
OpCost grouped_gemm_time(const AcceleratorSpec& acc, std::int64_t groups, std::int64_t m_per_group,
                         std::int64_t n, std::int64_t k, Dtype dtype, Dtype out = Dtype::kBf16);
// Uneven routing: one M per group (empty groups are skipped).
OpCost grouped_gemm_time(const AcceleratorSpec& acc, std::span<const std::int64_t> m_per_group,
                         std::int64_t n, std::int64_t k, Dtype dtype, Dtype out = Dtype::kBf16);

}  // namespace projector
