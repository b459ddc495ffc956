// Bounds for every integer a user gives (config keys, environment variables, CLI flags). Each size,
// batch or length is at most kMaxCount, so a product of two of them computed in 64 bits cannot
// overflow; world sizes are computed in 64 bits and refused above kMaxWorldSize, so every group
// size derived from them (DP, expert DP, microbatches) fits an int.
#pragma once

#include <cstdint>

namespace projector {

inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 30;
inline constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 24;  // 16.7M accelerators

}  // namespace projector
