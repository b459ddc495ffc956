// Deriving a layout: data-parallel sizes and the virtual-stage split. The job builder and every
// producer that re-lays out a built job (the sweep, the memory remedies) use these and nothing
// else, so DP, expert DP and the stages are derived in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

// DP = world / (TP x PP x CP) and expert DP = world / (ETP x EP x PP), in 64 bits; 0 when the world
// does not divide (the rules report which).
struct DataParallelSizes {
  std::int64_t dp = 0;
  std::int64_t expert_dp = 0;
};
DataParallelSizes data_parallel_sizes(std::int64_t world, int tp, int pp, int cp, int etp, int ep);

// Megatron's balanced split of `num_layers` decoder layers over pp x vpp virtual stages (in
// data-flow order): the first L mod (pp x vpp) stages take one more layer; the embedding on the
// first stage, the output layer and the MTP layers on the last. Reuses `out`'s storage.
void balanced_stages_into(std::vector<VirtualStage>& out, int num_layers, int pp, int vpp,
                          int mtp_layers);
std::vector<VirtualStage> balanced_stages(int num_layers, int pp, int vpp, int mtp_layers);

// Re-lays out a built job in place: the parallel sizes of `choice`, DP and expert DP for the job's
// cluster, balanced stages, MBS, schedule. Leaves everything else (sharding, recompute, ...) to the
// caller. The caller checks `choice` against the rules first (check_layout).
void apply_layout(JobSpec& job, const LayoutChoice& choice);

// Re-lays out a built job as its framework would: apply_layout, then the switches its profile
// ties to the layout (sequence parallelism, the overlapped parameter gather, TP communication
// overlap) decided again by the rules the builder kept (ParallelSpec::*_rule; a stated value
// stays). The sweep and the memory remedies use it; set the sharding first, the rules read it.
void relayout(JobSpec& job, const LayoutChoice& choice);

}  // namespace projector
