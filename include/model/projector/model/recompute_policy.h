// Per-op selective activation checkpointing (RecomputeGranularity::kOpPolicy): which matmul
// outputs of a block the policy keeps. PyTorch's selective checkpoint with torchtitan's policy
// saves the output of every op in its save list (aten.mm, the attention kernels, reduce-scatter,
// all-to-all) except every second aten.mm of the block, counted in forward order; matmuls forced
// to recompute (the MoE router gate) are not counted; routed-expert grouped GEMMs are not in the
// list. Linears with a bias count as matmuls (compiled, they trace to mm + add). fp8 linears run
// scaled_mm, which is not in the list: none of their outputs is saved; the compiler's partitioner
// keeps the smaller fp8 copies of their inputs instead (memory.cpp).
// Memory (what is kept) and workload (what is replayed) both read these fractions.
#pragma once

#include "projector/model/job.h"

namespace projector {

// Fraction of each (possibly fused) GEMM's output features the policy keeps: 0 = recomputed,
// 1 = saved; fused GEMMs of several linears keep the share of the saved ones.
struct OpPolicySaved {
  double qkv = 0.0;  // standard attention: wq, wk, wv
  double q_proj = 0.0, q_down = 0.0, q_up = 0.0, kv_down = 0.0, kv_up = 0.0;  // MLA
  double out_proj = 0.0;
  double fc1 = 0.0;         // dense MLP: w1 (gate) and w3 (up), fused
  double fc2 = 0.0;         // dense MLP: w2
  double shared_fc1 = 0.0;  // shared experts
  double shared_fc2 = 0.0;
};

OpPolicySaved op_policy_saved(const LayerSpec& layer, const PrecisionSpec& precision);

struct LayerFlops;
// Forward FLOPs per token the policy replays in the backward: the unsaved share of the block's
// GEMMs, the router and the routed experts. With a compiler memory budget b, (1 - b) of the whole
// block (the budget trades recomputation for memory linearly, a stated assumption).
double op_policy_replayed_flops(const ModelSpec& model, const LayerSpec& layer,
                                const PrecisionSpec& precision, const RecomputeSpec& recompute,
                                const LayerFlops& f);

}  // namespace projector
