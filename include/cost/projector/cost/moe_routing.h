// Where a token's routed copies go: the statistics of top-k routing (uniform, or limited to the
// best groups, DeepSeek's node-limited routing) that decide how many destinations a
// deduplicating dispatcher (DeepEP, HybridEP) sends a token to. Shared by the workload and the
// kernel-row check, so a dispatcher is priced on the same bytes in both.
#pragma once

#include "projector/hardware/hardware.h"
#include "projector/model/job.h"

namespace projector {

// Probability that a token reaches a given destination holding num_experts / parts of the
// experts (parts equal destinations: nodes, or GPUs within one node).
double destination_hit_probability(const MoeSpec& m, int parts,
                                   MoePlacement placement = MoePlacement::kUniform);

// Expected destinations one token is sent to by a deduplicating dispatcher: parts x the hit
// probability (the token's own destination included). Consecutive placement: the destinations
// the k experts [k t, k t + k) mod E span, averaged over t.
double expected_destinations(const MoeSpec& m, int parts,
                             MoePlacement placement = MoePlacement::kUniform);

// Bytes a deduplicating dispatcher moves relative to one copy per (token, expert) pair. The
// expert-parallel group spans `nodes` nodes of equal share; when it spans several, the
// inter-node copies dominate: (nodes - 1) x P(a remote node is hit) instead of
// topk x (nodes - 1) / nodes. Within one node the same holds per GPU.
double dedup_dispatch_factor(const MoeSpec& m, int ep, int nodes,
                             MoePlacement placement = MoePlacement::kUniform);

// Time a DeepEP-class normal dispatch / combine needs on the `units` SMs (CUs) it is given: its
// bytes over units x the accelerator's ep_kernel_unit_bytes_per_s. The links' time is the other
// bound; the kernel takes the longer. 0 when the rate is not measured or no unit count is known.
double ep_kernel_unit_bound_s(const AcceleratorSpec& acc, double bytes, int units);

}  // namespace projector
