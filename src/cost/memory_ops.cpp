#include "projector/cost/memory_ops.h"

namespace projector {

namespace {
// Typical STREAM copy / peak on HBM parts (H100 2.90/3.35, H200 4.01/4.8, A100 1.61/2.0 in
// hardware_specs.yaml measured.memory_bandwidth): used only when a spec has no calibration.
constexpr double kUncalibratedHbmFraction = 0.85;
// Primus' sparse-gather efficiency for DLRM embeddings (spec 6.7, P7: 0.30 x HBM).
constexpr double kUncalibratedGatherFraction = 0.30;
}  // namespace

std::string_view to_string(MemOpClass c) {
  switch (c) {
    case MemOpClass::kElementwise:
      return "elementwise";
    case MemOpClass::kPermute:
      return "permute";
    case MemOpClass::kOptimizer:
      return "optimizer";
    case MemOpClass::kLoss:
      return "loss";
    case MemOpClass::kEmbedding:
      return "embedding";
  }
  return "?";
}

double hbm_fraction(const AcceleratorSpec& acc, MemOpClass cls) {
  const auto& cal = acc.calibration;
  double f = 0.0;
  switch (cls) {
    case MemOpClass::kElementwise:
      f = cal.hbm_elementwise_fraction.value;
      break;
    case MemOpClass::kPermute:
      f = cal.hbm_permute_fraction.value;
      break;
    case MemOpClass::kOptimizer:
      f = cal.hbm_optimizer_fraction.value;
      break;
    case MemOpClass::kLoss:
      f = cal.hbm_loss_fraction.value;
      break;
    case MemOpClass::kEmbedding:
      f = cal.hbm_gather_fraction.value > 0.0 ? cal.hbm_gather_fraction.value
                                              : kUncalibratedGatherFraction;
      break;
  }
  if (f <= 0.0) f = cal.hbm_elementwise_fraction.value;
  if (f <= 0.0) f = kUncalibratedHbmFraction;
  return f;
}

CrossEntropyTraffic cross_entropy_traffic(double elements, double logit_bytes,
                                          CrossEntropyKernel kernel) {
  constexpr double kF32 = 4.0;
  CrossEntropyTraffic t;
  switch (kernel) {
    case CrossEntropyKernel::kFused:
      t.fwd_bytes = elements * 2.0 * logit_bytes;
      t.bwd_bytes = 1.5 * t.fwd_bytes;
      return t;
    case CrossEntropyKernel::kEager:
      // .float(): read a, write 4; max: read 4; -= max: 8; exp (out=): 8; sum: 4; div_: 8.
      t.fwd_bytes = elements * (logit_bytes + 9.0 * kF32);
      break;
    case CrossEntropyKernel::kCompiled:
      // .float() with max: read a, write 4; -= max with exp: 8; sum: 4; div_: 8.
      t.fwd_bytes = elements * (logit_bytes + 6.0 * kF32);
      break;
  }
  // mul_(grad_output): 8; the fp32 gradient cast back to the logits' dtype: 4 + a.
  t.bwd_bytes = elements * (3.0 * kF32 + logit_bytes);
  return t;
}

OpCost memory_bound_time(const AcceleratorSpec& acc, double bytes, MemOpClass cls, int kernels) {
  OpCost c;
  c.provenance = Provenance::kRoofline;
  c.bytes = bytes;
  if (bytes <= 0.0 || kernels <= 0) return c;
  const double bw = acc.hbm_bw_bytes_per_s * hbm_fraction(acc, cls);
  const double transfer_s = bw > 0.0 ? bytes / bw : 0.0;
  c.time_s = transfer_s + kernels * acc.calibration.kernel_launch_s.value;
  if (acc.hbm_bw_bytes_per_s > 0.0 && c.time_s > 0.0) {
    c.efficiency = bytes / c.time_s / acc.hbm_bw_bytes_per_s;
  }
  return c;
}

OpCost host_transfer_time(const AcceleratorSpec& acc, double bytes) {
  OpCost c;
  c.provenance = Provenance::kRoofline;
  c.bytes = bytes;
  constexpr double kPcieGen4X16 = 32e9;  // estimate when the accelerator states no host link
  const double bw = acc.host_bw_bytes_per_s > 0.0 ? acc.host_bw_bytes_per_s : kPcieGen4X16;
  c.time_s = bytes > 0.0 ? bytes / bw : 0.0;
  return c;
}

}  // namespace projector
