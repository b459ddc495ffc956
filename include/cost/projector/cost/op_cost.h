// The result type shared by every cost model: a time with the provenance of the number.
#pragma once

#include <string>
#include <string_view>

#include "projector/util/dtype.h"

namespace projector {

// Where a time came from. Reports show this next to each op so users can tell a measurement from a
// model output.
enum class Provenance {
  kMeasured,      // looked up from a measurement (benchmark artifact, calibration table)
  kKernelModel,   // tile/wave model of a kernel with calibrated efficiency (GEMM, attention)
  kRoofline,      // bytes / bandwidth or flops / peak with a calibrated fraction (or none)
  kUserOverride,  // the user supplied the number
};

std::string_view to_string(Provenance p);

struct OpCost {
  double time_s = 0.0;
  Provenance provenance = Provenance::kRoofline;
  double flops = 0.0;          // useful FLOPs as the kernels' authors count them (0 for memory ops)
  double bytes = 0.0;          // HBM bytes (memory ops) or bytes on the wire per rank (collectives)
  double efficiency = 0.0;     // achieved / peak: FLOP/s over the dtype peak at boost clock,
                               // HBM B/s over peak HBM, or bus bandwidth over raw link bandwidth
  Dtype dtype = Dtype::kBf16;  // the dtype actually priced (after falling back from unsupported)
  // What a measured provenance refers to (the trace a measured ratio came from); the storage is
  // owned by the provider (MeasuredScale), which the CostCache that returned the cost keeps alive.
  std::string_view source;

  double achieved_flops_per_s() const { return time_s > 0.0 ? flops / time_s : 0.0; }
  double achieved_bytes_per_s() const { return time_s > 0.0 ? bytes / time_s : 0.0; }
};

// One line, e.g. "123.4 us kernel-model 612.3 TFLOP/s (46.8% of peak, bf16)".
std::string to_string(const OpCost& c);

inline OpCost operator+(OpCost a, const OpCost& b) {
  a.time_s += b.time_s;
  a.flops += b.flops;
  a.bytes += b.bytes;
  a.efficiency = 0.0;  // not meaningful for a sum
  return a;
}

}  // namespace projector
