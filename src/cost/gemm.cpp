#include "projector/cost/gemm.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compute_common.h"

namespace projector {

namespace {

using cost_detail::clock_hz;
using cost_detail::clock_ratio;

struct Tile {
  int bm;
  int bn;
};
// Macro tiles a heuristic library chooses from (Primus' Origami candidate list, 64..256).
constexpr Tile kTiles[] = {{256, 256}, {256, 128}, {128, 256}, {128, 128},
                           {128, 64},  {64, 128},  {64, 64}};

// Main-loop efficiency of a tile relative to 256x256: operand reuse grows with the tile's
// "radius" r = BM*BN/(BM+BN); eff = r/(r+16) normalised (256x256 1.0, 128x128 0.90, 64x64 0.75).
double tile_efficiency(const Tile& t) {
  auto e = [](double bm, double bn) {
    const double r = bm * bn / (bm + bn);
    return r / (r + 16.0);
  };
  return e(t.bm, t.bn) / e(256.0, 256.0);
}

double ceil_div(double a, double b) {
  return std::ceil(a / b);
}

double gemm_fraction(const AcceleratorSpec& acc, Dtype d, bool blockwise, bool* calibrated) {
  const auto& f = acc.calibration.gemm_peak_fraction;
  double v = f[static_cast<int>(d)];
  const double block = acc.calibration.gemm_fp8_blockwise_fraction.value;
  if (blockwise && d == Dtype::kFp8 && block > 0.0) v = block;
  if (v <= 0.0) v = f[static_cast<int>(Dtype::kBf16)];
  *calibrated = v > 0.0;
  return v > 0.0 ? v : cost_detail::kUncalibratedGemmFraction;
}

double in_bytes(Dtype d) {
  // MX formats carry one 8-bit scale per 32 elements.
  return bytes_per_element(d) + ((d == Dtype::kMxfp8 || d == Dtype::kFp4) ? 1.0 / 32.0 : 0.0);
}

// One problem family: `problems` GEMMs of m x n x k (all the same shape) in one kernel.
// `unique_b` is whether each problem has its own B (grouped / batched) or shares it.
struct Problem {
  double m, n, k;
  double problems;
  Dtype in;
  Dtype out;
  double mainloop_scale;   // grouped kernels run slower per tile
  bool blockwise = false;  // block-scaled fp8 (GemmShape::blockwise)
};

OpCost price(const AcceleratorSpec& acc, const Problem& p) {
  OpCost c;
  const Dtype d = gemm_compute_dtype(acc, p.in);
  c.dtype = d;
  c.flops = 2.0 * p.m * p.n * p.k * p.problems;
  if (c.flops <= 0.0) return c;
  bool calibrated = false;
  const double frac = gemm_fraction(acc, d, p.blockwise, &calibrated);
  c.provenance = calibrated ? Provenance::kKernelModel : Provenance::kRoofline;
  const double peak = acc.peak_flops(d);
  const double rate = peak * clock_ratio(acc) * frac * p.mainloop_scale;  // whole chip, FLOP/s
  const double bin = in_bytes(p.in == d ? d : p.in);
  const double bout = bytes_per_element(p.out);
  const double hbm = acc.hbm_bw_bytes_per_s > 0.0 ? acc.hbm_bw_bytes_per_s : 1e30;
  const double fixed_s =
      acc.calibration.kernel_launch_s.value + acc.calibration.kernel_fixed_s.value;
  const double cus = acc.compute_units;

  if (acc.matrix_unit_dim > 0 && rate > 0.0) {
    // Systolic matrix units (TPU MXU, weight-stationary): a d x d block of the K x N operand is
    // loaded and the M rows stream through, so K and N are padded to d; rows are padded to the
    // 8-row sublane. Compute or HBM bound, whichever is longer.
    const double side = acc.matrix_unit_dim;
    const double kp = ceil_div(p.k, side) * side;
    const double np = ceil_div(p.n, side) * side;
    const double mp = ceil_div(p.m, 8.0) * 8.0;
    const double bytes = p.problems * ((p.m * p.k + p.k * p.n) * bin + p.m * p.n * bout);
    c.time_s = fixed_s + std::max(2.0 * mp * np * kp * p.problems / rate, bytes / hbm);
  } else if (cus <= 0 || rate <= 0.0) {  // no structure known: plain roofline
    const double bytes = p.problems * ((p.m * p.k + p.k * p.n) * bin + p.m * p.n * bout);
    c.time_s = fixed_s + std::max(rate > 0.0 ? c.flops / rate : 0.0, bytes / hbm);
    c.provenance = Provenance::kRoofline;
  } else {
    const double per_cu = rate / cus;
    const double per_cu_hbm = hbm / cus;
    const double bk = 128.0 / bytes_per_element(d) * 0.5;  // 64 for 2-byte, 128 for 1-byte inputs
    const double prologue_s = cost_detail::kTilePrologueCycles / clock_hz(acc);
    double best = std::numeric_limits<double>::infinity();
    for (const Tile& t : kTiles) {
      if (acc.lds_bytes_per_cu > 0.0 && (t.bm + t.bn) * bk * bin > acc.lds_bytes_per_cu) continue;
      const double tm = ceil_div(p.m, t.bm);
      const double tn = ceil_div(p.n, t.bn);
      const double tiles = tm * tn * p.problems;
      const double kpad = ceil_div(p.k, bk) * bk;
      const double tile_s = 2.0 * t.bm * t.bn * kpad / (per_cu * tile_efficiency(t));
      const double epilogue_s = t.bm * t.bn * bout / per_cu_hbm;
      // Data-parallel: whole waves. Stream-K (only with at least one full wave): fractional waves
      // plus one partial-tile fix-up (fp32 partials written and read back, ~ an epilogue).
      // A tile's epilogue stores its output at the CU's share of HBM. Per tile (AcceleratorSpec::
      // gemm_epilogue_overlapped false) it is paid before the CU's next tile, which a short K loop
      // cannot hide; overlapped, only the last one is.
      const bool overlapped = acc.gemm_epilogue_overlapped;
      const double per_tile_s = tile_s + (overlapped ? 0.0 : epilogue_s);
      double waves_s = std::ceil(tiles / cus) * per_tile_s;
      if (tiles >= cus) waves_s = std::min(waves_s, tiles / cus * per_tile_s + epilogue_s);
      if (overlapped) waves_s += epilogue_s;
      // Split-K (fewer tiles than CUs, a long K loop: weight gradients of narrow layers over a
      // large batch): the K loop of each tile over s CUs, fp32 partials written and reduced.
      const double splits = std::min(std::floor(cus / tiles), kpad / bk / 4.0);
      if (splits >= 2.0) {
        const double reduce_s = 2.0 * splits * tiles * t.bm * t.bn * 4.0 / hbm;
        waves_s = std::min(waves_s, tile_s / splits + epilogue_s + reduce_s);
      }
      const double compute_s = waves_s;
      // HBM traffic: each wave of tiles covers a square-ish block of the output grid and reads
      // the A rows and B columns of that block once (L2 reuse inside a wave), then writes C.
      const double active = std::min(tiles, cus);
      const double per_problem_tiles = tm * tn;
      const double wave_rows =
          std::min(tm, std::ceil(std::sqrt(std::min(active, per_problem_tiles))));
      const double wave_cols =
          std::min(tn, std::ceil(std::min(active, per_problem_tiles) / wave_rows));
      const double waves = std::ceil(tiles / cus);
      const double wave_in = (wave_rows * t.bm * (p.m < t.bm ? p.m / t.bm : 1.0) +
                              wave_cols * t.bn * (p.n < t.bn ? p.n / t.bn : 1.0)) *
                             p.k * bin * std::max(1.0, active / per_problem_tiles);
      const double unique_in = p.problems * (p.m * p.k + p.k * p.n) * bin;
      const double in_traffic = std::max(unique_in, waves * wave_in);
      const double mem_s = (in_traffic + p.problems * p.m * p.n * bout) / hbm;
      best = std::min(best, prologue_s + std::max(compute_s, mem_s));
    }
    c.time_s = fixed_s + best;
  }
  if (peak > 0.0 && c.time_s > 0.0) c.efficiency = c.flops / c.time_s / peak;
  return c;
}

}  // namespace

Dtype gemm_compute_dtype(const AcceleratorSpec& acc, Dtype d) {
  static constexpr Dtype kChain[] = {Dtype::kFp4,  Dtype::kMxfp8, Dtype::kFp8, Dtype::kBf16,
                                     Dtype::kFp16, Dtype::kTf32,  Dtype::kFp32};
  if (acc.peak_flops(d) > 0.0) return d;
  // fp32 falls back to tf32 tensor cores, anything else walks to wider formats.
  if (d == Dtype::kFp32 && acc.peak_flops(Dtype::kTf32) > 0.0) return Dtype::kTf32;
  bool after = false;
  for (Dtype c : kChain) {
    if (c == d) {
      after = true;
      continue;
    }
    if (after && acc.peak_flops(c) > 0.0) return c;
  }
  return acc.peak_flops(Dtype::kBf16) > 0.0 ? Dtype::kBf16 : d;
}

std::array<GemmShape, 2> weightless_backward_shapes(const GemmShape& f) {
  GemmShape a = f;
  a.n = f.k;
  a.k = f.n;
  GemmShape b = f;
  b.m = f.k;
  b.k = f.m;
  return {a, b};
}

OpCost gemm_time(const AcceleratorSpec& acc, const GemmShape& s) {
  const double ssd = acc.calibration.ssd_scan_fraction.value;
  return price(acc, {static_cast<double>(s.m), static_cast<double>(s.n), static_cast<double>(s.k),
                     static_cast<double>(std::max<std::int64_t>(1, s.batch)), s.dtype, s.out,
                     s.ssd_chunk && ssd > 0.0 ? ssd : 1.0, s.blockwise});
}

namespace {
// Scaled (8-bit / 4-bit) grouped GEMMs have their own kernels (CUTLASS scaled grouped GEMM,
// per-group scale layouts), so they carry their own fraction when the part has one.
double grouped_scale(const AcceleratorSpec& acc, Dtype dtype) {
  const auto& cal = acc.calibration;
  const bool quantized = bytes_per_element(dtype) < 2.0;
  const double q = cal.grouped_gemm_fraction_fp8.value;
  const double g = quantized && q > 0.0 ? q : cal.grouped_gemm_fraction.value;
  return g > 0.0 ? g : 1.0;
}
}  // namespace

OpCost grouped_gemm_time(const AcceleratorSpec& acc, std::int64_t groups, std::int64_t m_per_group,
                         std::int64_t n, std::int64_t k, Dtype dtype, Dtype out) {
  if (groups <= 0 || m_per_group <= 0) {
    OpCost c;
    c.dtype = gemm_compute_dtype(acc, dtype);
    return c;
  }
  return price(acc,
               {static_cast<double>(m_per_group), static_cast<double>(n), static_cast<double>(k),
                static_cast<double>(groups), dtype, out, grouped_scale(acc, dtype)});
}

OpCost grouped_gemm_time(const AcceleratorSpec& acc, std::span<const std::int64_t> m_per_group,
                         std::int64_t n, std::int64_t k, Dtype dtype, Dtype out) {
  // One kernel over all groups: price the tiles of every group together. Equal-M groups are
  // merged so the common uniform case costs one evaluation.
  OpCost total;
  total.dtype = gemm_compute_dtype(acc, dtype);
  double tiles_time = 0.0;
  std::int64_t groups = 0;
  double flops = 0.0;
  double peak = acc.peak_flops(total.dtype);
  for (std::int64_t m : m_per_group) {
    if (m <= 0) continue;
    ++groups;
    flops += 2.0 * static_cast<double>(m) * n * k;
  }
  if (groups == 0) return total;
  // The kernel's time ~ that of `groups` problems of the mean padded M; padding per group is
  // charged through the per-group ceil in the uniform model, so price each distinct M's share.
  double mean_m = flops / (2.0 * n * k * groups);
  OpCost u = grouped_gemm_time(acc, groups, static_cast<std::int64_t>(std::ceil(mean_m)), n, k,
                               dtype, out);
  // Uneven routing: the largest group bounds the kernel when it alone needs more than a wave.
  std::int64_t max_m = *std::max_element(m_per_group.begin(), m_per_group.end());
  OpCost big = grouped_gemm_time(acc, 1, max_m, n, k, dtype, out);
  tiles_time = std::max(u.time_s, big.time_s);
  total = u;
  total.time_s = tiles_time;
  total.flops = flops;
  total.efficiency = peak > 0.0 ? flops / tiles_time / peak : 0.0;
  return total;
}

}  // namespace projector
