// Helpers shared by the GEMM and attention models (internal).
#pragma once

#include "projector/hardware/hardware.h"

namespace projector::cost_detail {

// Fraction used when an accelerator has no calibration for a dtype (nor for bf16): a typical
// large-GEMM / peak ratio on current parts (MAMF 70-87% NVIDIA, hardware.md 2.1).
inline constexpr double kUncalibratedGemmFraction = 0.7;
// Fixed cost of one tile's prologue (first loads in flight), in cycles (Origami's per-tile fixed
// ~1500 cycles plus a ~200-cycle load latency; hardware_specs.yaml origami heuristic_defaults).
inline constexpr double kTilePrologueCycles = 1700.0;

inline double clock_ratio(const AcceleratorSpec& acc) {
  if (acc.sustained_clock_mhz > 0.0 && acc.boost_clock_mhz > 0.0) {
    return acc.sustained_clock_mhz / acc.boost_clock_mhz;
  }
  return 1.0;
}

inline double clock_hz(const AcceleratorSpec& acc) {
  const double mhz = acc.sustained_clock_mhz > 0.0 ? acc.sustained_clock_mhz : acc.boost_clock_mhz;
  return mhz > 0.0 ? mhz * 1e6 : 1.5e9;
}

}  // namespace projector::cost_detail
