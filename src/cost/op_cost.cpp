#include "projector/cost/op_cost.h"

#include <fmt/format.h>

namespace projector {

std::string_view to_string(Provenance p) {
  switch (p) {
    case Provenance::kMeasured:
      return "measured";
    case Provenance::kKernelModel:
      return "kernel-model";
    case Provenance::kRoofline:
      return "roofline";
    case Provenance::kUserOverride:
      return "user-override";
  }
  return "?";
}

std::string to_string(const OpCost& c) {
  std::string s = fmt::format("{:.2f} us {}", c.time_s * 1e6, to_string(c.provenance));
  if (c.flops > 0.0) {
    s += fmt::format(" {:.1f} TFLOP/s", c.achieved_flops_per_s() / 1e12);
  } else if (c.bytes > 0.0) {
    s += fmt::format(" {:.1f} GB/s", c.achieved_bytes_per_s() / 1e9);
  }
  if (c.efficiency > 0.0)
    s += fmt::format(" ({:.1f}% of peak, {})", 100.0 * c.efficiency, to_string(c.dtype));
  return s;
}

}  // namespace projector
