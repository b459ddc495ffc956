// Workload internals shared by build.cpp and the per-policy / per-layer op builders.
#pragma once

#include <vector>

#include "projector/job/spec.h"
#include "projector/workload/workload.h"

namespace projector::workload_detail {

// Under a per-tensor rematerialisation policy (RecomputeGranularity::kTensors): whether the
// backward pass replays forward op `op` of a decoder layer (or an MTP block), from the
// dependencies of the saved-tensor vocabulary (remat_policy.cpp).
bool recomputed_by_tensor_policy(const JobSpec& job, const Op& op);

// The copies to and from host memory of the tensors a policy keeps on the host, for one layer
// and one microbatch: device-to-host in the forward, host-to-device in the backward, both hidden
// behind the layer's compute.
std::vector<Op> offload_ops(const JobSpec& job, const LayerSpec& layer);

// Per-layer FSDP collectives (ParallelSpec::fsdp_per_layer) of a block holding `dense_params`
// and `expert_params` weights on this rank (after TP / EP sharding): the gathers before the
// forward and again before the backward, the gradient reduce-scatter after it and, with
// hybrid sharding, the all-reduce of the gradient shard over the replicas.
std::vector<Op> fsdp_layer_ops(const JobSpec& job, double dense_params, double expert_params);

// The communicator of `kind` on a job with a device mesh (ParallelSpec::mesh): the mesh axes
// that form it, their torus span inside a slice and the slices they cross (mesh_groups.cpp).
CommGroup mesh_group(const JobSpec& job, GroupKind kind);

}  // namespace projector::workload_detail
