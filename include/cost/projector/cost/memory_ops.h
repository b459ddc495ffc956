// Memory-bound kernels: time = bytes / (peak HBM x calibrated fraction for the op class) + launch.
#pragma once

#include <string_view>

#include "projector/cost/op_cost.h"
#include "projector/hardware/hardware.h"

namespace projector {

enum class MemOpClass {
  kElementwise,  // norms, activations, residual adds, RoPE, casts: streaming reads/writes
  kPermute,      // gather/scatter (MoE token permute/unpermute)
  kOptimizer,    // optimizer step (many tensors, fp32 states)
  kLoss,         // cross-entropy passes over the logits
  kEmbedding,    // embedding-row gathers / scatters of large tables (TBE lookup, fused update)
};

std::string_view to_string(MemOpClass c);

// The calibrated fraction of peak HBM bandwidth for the class, falling back to the elementwise
// fraction when the class has none and to 0.85 (roofline, typical STREAM copy) when nothing is set;
// kEmbedding falls back to Primus' sparse-gather fraction 0.30 (spec 6.7, P7).
double hbm_fraction(const AcceleratorSpec& acc, MemOpClass cls);

// `bytes` read plus written by the op; `kernels` launches are charged kernel_launch_s each.
OpCost memory_bound_time(const AcceleratorSpec& acc, double bytes, MemOpClass cls, int kernels = 1);

// Traffic of a cross entropy over `elements` logits of `logit_bytes` each (docs/kernels.md
// "Cross entropy"). Fused: one kernel reads the logits and writes the gradient, its backward
// rescales it. Eager (Megatron's vocab_parallel_cross_entropy, MG29), pass by pass: the fp32 copy,
// max, subtract, exp, sum and divide forward; the in-place scale of the saved softmax and the
// cast of the fp32 gradient back to the logits' dtype backward. Compiled (the same steps through
// torch.compile): the pointwise steps fuse into their neighbours (the copy with the max, the
// subtract with the exp), the reductions and the in-place updates stay passes of their own.
enum class CrossEntropyKernel { kEager, kCompiled, kFused };
struct CrossEntropyTraffic {
  double fwd_bytes = 0.0;
  double bwd_bytes = 0.0;
};
CrossEntropyTraffic cross_entropy_traffic(double elements, double logit_bytes,
                                          CrossEntropyKernel kernel);

// A copy of `bytes` between device and host memory (activation / optimizer offload) over the
// accelerator's host link (host_bw_bytes_per_s; when unknown, a 32 GB/s PCIe Gen4 x16 estimate,
// marked roofline).
OpCost host_transfer_time(const AcceleratorSpec& acc, double bytes);

}  // namespace projector
