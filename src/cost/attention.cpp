#include "projector/cost/attention.h"

#include <algorithm>
#include <cmath>

#include "compute_common.h"

namespace projector {

namespace {

using cost_detail::clock_ratio;

// Tile shapes of FlashAttention-2/3 and AITER/CK kernels at head dim 128.
constexpr double kFwdQRows = 128.0;
constexpr double kFwdKvCols = 128.0;
constexpr double kBwdKvRows = 128.0;
constexpr double kBwdQRows = 64.0;
// Softmax work per score in matmul-FLOP equivalents (exp, max, rescale on the vector/SFU units,
// not fully hidden behind the matmuls): H100 has ~3.9 T exp/s against 989 TFLOP/s of matmul, i.e.
// one exp costs ~250 matmul FLOPs; about half is overlapped. At head dim 128 a score carries
// 4*128 = 512 matmul FLOPs, so efficiency falls to ~0.83x at hd64 relative to hd128.
constexpr double kSoftmaxFlopsPerScore = 128.0;
constexpr double kReferenceDim = 128.0;  // fractions are calibrated at head dim 128

// Keys visible to query row r (0-based), as a half-open interval [lo, hi).
struct Span {
  double lo, hi;
};
Span visible(const AttentionShape& s, double r) {
  const double skv = static_cast<double>(s.seq_kv);
  double hi = skv;
  if (s.causal) hi = std::clamp(r + 1.0 + (skv - static_cast<double>(s.seq_q)), 0.0, skv);
  double lo = 0.0;
  if (s.window > 0) lo = std::max(0.0, (s.causal ? hi : std::min(skv, r + 1.0)) - s.window);
  return {lo, std::max(lo, hi)};
}

// Number of `cols`-wide key tiles touched by query rows [r0, r1).
double kv_tiles_for_rows(const AttentionShape& s, double r0, double r1, double cols) {
  const Span a = visible(s, r0);
  const Span b = visible(s, r1 - 1.0);
  const double lo = std::min(a.lo, b.lo);
  const double hi = std::max(a.hi, b.hi);
  if (hi <= lo) return 0.0;
  return std::ceil(hi / cols) - std::floor(lo / cols);
}

double softmax_factor(const AttentionShape& s) {
  const double d = 0.5 * (s.head_dim_qk + s.head_dim_v);
  return (1.0 + kSoftmaxFlopsPerScore / (4.0 * d)) /
         (1.0 + kSoftmaxFlopsPerScore / (4.0 * kReferenceDim));
}

struct Work {
  double total_tiles = 0.0;  // tile visits over all workgroups of one (batch, head)
  double longest = 0.0;      // tiles of the longest workgroup
  double groups = 0.0;       // workgroups per (batch, head)
  bool uniform = true;
};

// Forward: workgroups own query tiles and sweep key tiles. Backward: own key tiles, sweep queries.
Work forward_work(const AttentionShape& s) {
  Work w;
  const double sq = static_cast<double>(s.seq_q);
  for (double r0 = 0.0; r0 < sq; r0 += kFwdQRows) {
    const double t = kv_tiles_for_rows(s, r0, std::min(sq, r0 + kFwdQRows), kFwdKvCols);
    if (w.groups > 0 && t != w.longest) w.uniform = false;
    w.total_tiles += t;
    w.longest = std::max(w.longest, t);
    w.groups += 1.0;
  }
  return w;
}

Work backward_work(const AttentionShape& s) {
  // Count, per key tile, the query tiles that see any of its keys (symmetric to the forward).
  Work w;
  const double sq = static_cast<double>(s.seq_q);
  const double skv = static_cast<double>(s.seq_kv);
  const double n_kv = std::ceil(skv / kBwdKvRows);
  // Each query tile adds one to a range of key tiles: a difference array keeps this linear in the
  // sequence (adding to every tile of the range is quadratic: hours at 10^8 tokens).
  std::vector<double> per_kv(static_cast<std::size_t>(n_kv) + 1, 0.0);
  for (double r0 = 0.0; r0 < sq; r0 += kBwdQRows) {
    const double r1 = std::min(sq, r0 + kBwdQRows);
    const Span a = visible(s, r0);
    const Span b = visible(s, r1 - 1.0);
    const double lo = std::min(a.lo, b.lo);
    const double hi = std::max(a.hi, b.hi);
    if (hi <= lo) continue;
    const double first = std::floor(lo / kBwdKvRows);
    const double last = std::min(std::ceil(hi / kBwdKvRows), n_kv);
    if (first >= last) continue;
    per_kv[static_cast<std::size_t>(first)] += 1.0;
    per_kv[static_cast<std::size_t>(last)] -= 1.0;
  }
  per_kv.pop_back();
  double running = 0.0;  // prefix sums of whole numbers: exact in double
  for (double& t : per_kv) {
    running += t;
    t = running;
  }
  for (double t : per_kv) {
    if (w.groups > 0 && t != w.longest) w.uniform = false;
    w.total_tiles += t;
    w.longest = std::max(w.longest, t);
    w.groups += 1.0;
  }
  return w;
}

// The measured fraction of an 8-bit attention kernel (cuDNN's FP8 / MXFP8), 0 when none.
double low_precision_fraction(const AcceleratorSpec& acc, Dtype d, bool backward) {
  const auto& c = acc.calibration;
  if (d == Dtype::kFp8) {
    return (backward ? c.attention_fp8_bwd_fraction : c.attention_fp8_fwd_fraction).value;
  }
  if (d == Dtype::kMxfp8) {
    return (backward ? c.attention_mxfp8_bwd_fraction : c.attention_mxfp8_fwd_fraction).value;
  }
  return 0.0;
}

OpCost price(const AcceleratorSpec& acc, const AttentionShape& s, bool backward) {
  OpCost c;
  c.dtype = s.dtype;
  // 8-bit attention runs at its own measured fraction of the 8-bit peak; without one (or without
  // that peak) it is priced as the 16-bit kernel.
  const double low = low_precision_fraction(acc, c.dtype, backward);
  if (acc.peak_flops(c.dtype) <= 0.0 ||
      ((c.dtype == Dtype::kFp8 || c.dtype == Dtype::kMxfp8) && low <= 0.0)) {
    c.dtype = Dtype::kBf16;
  }
  c.flops = backward ? attention_bwd_flops(s) : attention_fwd_flops(s);
  if (c.flops <= 0.0) return c;
  const auto& calib = acc.calibration;
  const Sourced& fused = backward ? calib.attention_bwd_fraction : calib.attention_fwd_fraction;
  const Sourced& fa2 =
      backward ? calib.attention_fa2_bwd_fraction : calib.attention_fa2_fwd_fraction;
  double frac = s.kernel == AttentionKernel::kFa2 && fa2.value > 0.0 ? fa2.value : fused.value;
  if (c.dtype == Dtype::kFp8 || c.dtype == Dtype::kMxfp8) frac = low;
  c.provenance = Provenance::kKernelModel;
  if (frac <= 0.0) {  // no attention calibration: 80% of the GEMM fraction (typical FA3 / cuBLAS)
    const double g = acc.calibration.gemm_peak_fraction[static_cast<int>(c.dtype)];
    frac = 0.8 * (g > 0.0 ? g : cost_detail::kUncalibratedGemmFraction);
    c.provenance = Provenance::kRoofline;
  }
  const double peak = acc.peak_flops(c.dtype);
  double rate = peak * clock_ratio(acc) * frac;
  if (acc.matrix_unit_dim > 0) {
    // Systolic matrix units: Q K^T contracts over d_qk and P V produces d_v columns, each padded
    // to the array's side (a 128-wide head fills half of a 256 x 256 MXU).
    const double side = acc.matrix_unit_dim;
    auto padded = [side](double d) { return std::ceil(d / side) * side; };
    const double dqk = s.head_dim_qk;
    const double dv = s.head_dim_v;
    rate *= (dqk + dv) / (padded(dqk) + padded(dv));
  }
  const double cus = std::max(1, acc.compute_units);
  const double per_cu = rate / cus;
  const double dqk = s.head_dim_qk;
  const double dv = s.head_dim_v;
  // Matmul FLOPs of one tile: fwd QK^T + PV; bwd QK^T, dP, dV, dQ, dK.
  const double tile_flops = backward ? 2.0 * kBwdKvRows * kBwdQRows * (3.0 * dqk + 2.0 * dv)
                                     : 2.0 * kFwdQRows * kFwdKvCols * (dqk + dv);
  const double tile_s = tile_flops * softmax_factor(s) / per_cu;
  const Work w = backward ? backward_work(s) : forward_work(s);
  const double heads = static_cast<double>(s.batch) * s.q_heads;
  const double groups = w.groups * heads;
  // Each workgroup's fixed work, in key tiles: short sequences give it few tiles to amortise it.
  const double fixed = calib.attention_workgroup_tiles.value;
  double t;
  if (w.uniform) {
    t = std::ceil(groups / cus) * (w.longest + fixed) * tile_s;
  } else {
    t = std::max((w.total_tiles + fixed * w.groups) * heads / cus, w.longest + fixed) * tile_s;
  }
  const double prologue_s = cost_detail::kTilePrologueCycles / cost_detail::clock_hz(acc);
  c.time_s =
      t + prologue_s + acc.calibration.kernel_launch_s.value + acc.calibration.kernel_fixed_s.value;
  // K/V (GQA: kv heads) and Q/O traffic bound tiny-head or short-sequence cases.
  const double b = bytes_per_element(c.dtype);
  const double bytes = static_cast<double>(s.batch) *
                       (static_cast<double>(s.seq_q) * s.q_heads * (dqk + dv) +
                        static_cast<double>(s.seq_kv) * s.kv_heads * (dqk + dv)) *
                       b * (backward ? 2.5 : 1.0);
  if (acc.hbm_bw_bytes_per_s > 0.0) {
    c.time_s = std::max(c.time_s, bytes / acc.hbm_bw_bytes_per_s);
  }
  c.bytes = bytes;
  if (peak > 0.0) c.efficiency = c.flops / c.time_s / peak;
  return c;
}

}  // namespace

double attention_visible_pairs(const AttentionShape& s) {
  const double sq = static_cast<double>(s.seq_q);
  const double skv = static_cast<double>(s.seq_kv);
  if (sq <= 0 || skv <= 0) return 0.0;
  if (!s.causal && s.window <= 0) return sq * skv;
  // Sum of visible keys over query rows; closed forms would need case splits, rows are cheap
  // relative to everything else priced once per shape (and cached).
  if (sq <= 65536) {
    double pairs = 0.0;
    for (double r = 0; r < sq; r += 1.0) {
      const Span v = visible(s, r);
      pairs += v.hi - v.lo;
    }
    return pairs;
  }
  double pairs = 0.0;  // very long: integrate in blocks of 64 rows
  for (double r = 0; r < sq; r += 64.0) {
    const double n = std::min(64.0, sq - r);
    const Span a = visible(s, r);
    const Span b = visible(s, r + n - 1.0);
    pairs += 0.5 * ((a.hi - a.lo) + (b.hi - b.lo)) * n;
  }
  return pairs;
}

double attention_fwd_flops(const AttentionShape& s) {
  // The FlashAttention papers count causal as exactly half of the full 4*s^2*d; visible pairs
  // give s(s+1)/2 which differs by 1/s — use the papers' convention for the square causal case.
  const double pairs = s.causal && s.window <= 0 && s.seq_q == s.seq_kv
                           ? 0.5 * static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv)
                           : attention_visible_pairs(s);
  return 2.0 * pairs * (s.head_dim_qk + s.head_dim_v) * static_cast<double>(s.batch) * s.q_heads;
}

double attention_bwd_flops(const AttentionShape& s) {
  return 2.5 * attention_fwd_flops(s);
}

OpCost attention_fwd_time(const AcceleratorSpec& acc, const AttentionShape& s) {
  return price(acc, s, false);
}

OpCost attention_bwd_time(const AcceleratorSpec& acc, const AttentionShape& s) {
  return price(acc, s, true);
}

}  // namespace projector
