// Named device meshes (MaxText's ici_* / dcn_* axes, model/job.h MeshAxis): resolving the one
// unspecified axis per group, the neutral parallel sizes a mesh implies, and where its ICI axes
// lie on a slice's torus. Used by the job builder and by the sweep's mesh candidates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/hardware/hardware.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

// The neutral sizes of a resolved mesh (every ici / dcn >= 1).
struct MeshSizes {
  int tp = 1;          // tensor x tensor_sequence
  int pp = 1;          // stage
  int cp = 1;          // context
  int ep = 1;          // expert
  int dp = 1;          // data x fsdp x fsdp_transpose x expert x other (the batch axes)
  int replicate = 1;   // data x other: replicas of one weight shard
  int fsdp_shard = 1;  // fsdp x fsdp_transpose x context x expert: what 'embed' weights shard over
  bool tensor_sequence = false;  // a tensor_sequence axis > 1 (norms sequence-sharded too)
  std::int64_t devices = 1;
  int slices = 1;
};
MeshSizes mesh_sizes(const std::vector<MeshAxis>& mesh);

// Replaces the -1 of the ICI group (at most one) by devices_per_slice / (product of the others)
// and the -1 of the DCN group by slices / (product of the others). Returns an empty string when
// the mesh fits, else why not (MaxText's fill_unspecified_mesh_axes: more than one -1, a quotient
// that is not a positive integer, a product that differs from the devices).
std::string resolve_mesh(std::vector<MeshAxis>& mesh, std::int64_t devices_per_slice, int slices);

// Places the ICI part of each axis on a slice of `slice_shape` chips (devices_per_chip > 1 adds
// the chip's core axis last), the way JAX's mesh_utils assigns logical to physical axes: the
// last mesh axes first (the most communication-heavy), each onto the largest subset of remaining
// physical axes (three, two, then one) whose sizes multiply to its size; an axis that fits no
// such subset takes a divisor of one remaining physical axis (allow_split_physical_axes), else a
// product across several. Fills MeshAxis::torus_axes / torus_extent.
// `custom` names MaxText's custom_mesh (max_utils.py reshape_mesh_to_rings): "hybrid_ring_64x4"
// puts the last ICI axis (4) on the rings of 2x2 chips of a 16x16 slice and the other (64) across
// the 8x8 rings; "hybrid_ring_32x8" rings of 2x4 chips and 8x4 of them. Returns an empty string
// when placed, else why `custom` does not apply (then the default placement is used).
std::string place_mesh(std::vector<MeshAxis>& mesh, const std::vector<int>& slice_shape,
                       int devices_per_chip, const std::string& custom = "");

// The usual torus shape of a slice of `chips` chips (docs/tpu.md): 3D parts (v4, v5p, TPU7x) the
// most cubic shape whose sides are multiples of 4 when the slice is whole 4x4x4 cubes, else the
// most cubic power-of-two shape; 2D parts (v5e, v6e) the most square power-of-two shape. Empty
// when the accelerator has no torus.
std::vector<int> default_slice_shape(std::int64_t chips, const AcceleratorSpec& accelerator);

// Re-lays a mesh job out for its (changed) TP, PP, CP and EP, MaxText's way: tensor, stage,
// context and expert axes inside each slice, the FSDP axis taking the rest of the slice, the data
// axis across its slices; placed on the torus again, with hybrid sharding, FSDP and sequence
// sharding following. False (and the job untouched) when TP x PP x CP x EP does not divide the
// devices of a slice. A job without a mesh is left as it is (true).
bool relayout_mesh(JobSpec& job);

// "4x4x8" -> {4, 4, 8}; empty on a malformed text.
std::vector<int> parse_slice_shape(const std::string& text);
std::string to_string(const std::vector<int>& slice_shape);

}  // namespace projector
