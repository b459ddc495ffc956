// Small statistics shared by the validation and kernel reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace projector {

// Quantile q in [0, 1] of ascending values, linearly interpolated between the order statistics at
// q (n - 1) (0-based); 0 for no values.
inline double interpolated_quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace projector
