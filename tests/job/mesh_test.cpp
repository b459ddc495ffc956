// Named device meshes (job/mesh.h): the -1 axis of each group, the neutral sizes a mesh implies,
// JAX-like placement of mesh axes on a slice's torus, MaxText's hybrid-ring custom meshes, the
// usual slice shapes, and the sweep's re-layout of a mesh job.
#include "projector/job/mesh.h"

#include <gtest/gtest.h>

#include "projector/job/spec.h"

namespace projector {
namespace {

MeshAxis ax(MeshRole role, const char* name, int ici, int dcn = 1) {
  return MeshAxis{role, name, ici, dcn, {}, {}};
}

TEST(Mesh, ResolveFillsTheUnsetAxis) {
  std::vector<MeshAxis> m = {ax(MeshRole::kData, "data", 1, -1), ax(MeshRole::kFsdp, "fsdp", -1),
                             ax(MeshRole::kTensor, "tensor", 4)};
  EXPECT_EQ(resolve_mesh(m, 64, 2), "");
  EXPECT_EQ(m[1].ici, 16);
  EXPECT_EQ(m[0].dcn, 2);
  const MeshSizes s = mesh_sizes(m);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.dp, 32);
  EXPECT_EQ(s.replicate, 2);
  EXPECT_EQ(s.fsdp_shard, 16);
  EXPECT_EQ(s.devices, 128);
  EXPECT_EQ(s.slices, 2);

  std::vector<MeshAxis> two = {ax(MeshRole::kFsdp, "fsdp", -1),
                               ax(MeshRole::kTensor, "tensor", -1)};
  EXPECT_NE(resolve_mesh(two, 64, 1).find("more than one"), std::string::npos);
  std::vector<MeshAxis> bad = {ax(MeshRole::kFsdp, "fsdp", -1), ax(MeshRole::kTensor, "tensor", 3)};
  EXPECT_NE(resolve_mesh(bad, 64, 1), "");
  std::vector<MeshAxis> wrong = {ax(MeshRole::kFsdp, "fsdp", 8)};
  EXPECT_NE(resolve_mesh(wrong, 64, 1), "");
}

TEST(Mesh, ExpertAxisShardsWeightsAndBatch) {
  const MeshSizes s =
      mesh_sizes({ax(MeshRole::kFsdp, "fsdp", 16), ax(MeshRole::kExpert, "expert", 4)});
  EXPECT_EQ(s.ep, 4);
  EXPECT_EQ(s.dp, 64);  // the expert axis also shards the batch outside the MoE blocks
  EXPECT_EQ(s.fsdp_shard, 64);
}

// JAX's mesh_utils: the last mesh axes first, each on whole physical axes when their sizes
// multiply to it, else a divisor of one axis.
TEST(Mesh, PlacementOnTheTorus) {
  std::vector<MeshAxis> m = {ax(MeshRole::kFsdp, "fsdp", 16), ax(MeshRole::kTensor, "tensor", 4)};
  EXPECT_EQ(place_mesh(m, {4, 4, 4}, 1), "");
  ASSERT_EQ(m[1].torus_axes.size(), 1u);
  EXPECT_EQ(m[1].torus_extent[0], 4);
  ASSERT_EQ(m[0].torus_axes.size(), 2u);
  EXPECT_EQ(m[0].torus_extent[0] * m[0].torus_extent[1], 16);

  // TPU7x: the chip's two devices are a physical axis of their own (index slice_shape.size()).
  std::vector<MeshAxis> t = {ax(MeshRole::kFsdp, "fsdp", 32), ax(MeshRole::kTensor, "tensor", 2)};
  EXPECT_EQ(place_mesh(t, {4, 4, 2}, 2), "");
  ASSERT_EQ(t[0].torus_axes.size(), 3u);
  bool core = false;
  for (const int i : t[0].torus_axes) core = core || i == 3;
  EXPECT_TRUE(core);  // fsdp 32 = 4 x 4 x the core pair; tensor takes the z axis (2)

  // A size that is no product of whole axes takes a divisor of one.
  std::vector<MeshAxis> e = {ax(MeshRole::kFsdp, "fsdp", 64), ax(MeshRole::kExpert, "expert", 4)};
  EXPECT_EQ(place_mesh(e, {16, 16}, 1), "");
  ASSERT_EQ(e[1].torus_axes.size(), 1u);
  EXPECT_EQ(e[1].torus_extent[0], 4);
}

// max_utils.py reshape_mesh_to_rings: hybrid_ring_64x4 puts the expert axis on 2x2 rings.
TEST(Mesh, HybridRingCustomMesh) {
  std::vector<MeshAxis> m = {ax(MeshRole::kFsdp, "fsdp", 64), ax(MeshRole::kExpert, "expert", 4)};
  EXPECT_EQ(place_mesh(m, {16, 16}, 1, "hybrid_ring_64x4"), "");
  EXPECT_EQ(m[1].torus_extent, (std::vector<int>{2, 2}));
  EXPECT_EQ(m[0].torus_extent, (std::vector<int>{8, 8}));
  std::vector<MeshAxis> r8 = {ax(MeshRole::kFsdp, "fsdp", 32), ax(MeshRole::kExpert, "expert", 8)};
  EXPECT_EQ(place_mesh(r8, {16, 16}, 1, "hybrid_ring_32x8"), "");
  EXPECT_EQ(r8[1].torus_extent, (std::vector<int>{2, 4}));
  // Not applicable: the default placement, and why.
  std::vector<MeshAxis> no = {ax(MeshRole::kFsdp, "fsdp", 16)};
  EXPECT_NE(place_mesh(no, {4, 4}, 1, "hybrid_ring_64x4"), "");
  EXPECT_FALSE(no[0].torus_axes.empty());
  EXPECT_NE(place_mesh(no, {4, 4}, 1, "ring_of_rings"), "");
}

TEST(Mesh, UsualSliceShapes) {
  AcceleratorSpec v5p;
  v5p.scaleup_topology = "torus";
  v5p.torus_dims = 3;
  EXPECT_EQ(default_slice_shape(64, v5p), (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(default_slice_shape(256, v5p), (std::vector<int>{4, 8, 8}));
  EXPECT_EQ(default_slice_shape(8, v5p), (std::vector<int>{2, 2, 2}));
  AcceleratorSpec v6e = v5p;
  v6e.torus_dims = 2;
  EXPECT_EQ(default_slice_shape(256, v6e), (std::vector<int>{16, 16}));
  EXPECT_EQ(default_slice_shape(32, v6e), (std::vector<int>{4, 8}));
  AcceleratorSpec gpu;
  EXPECT_TRUE(default_slice_shape(8, gpu).empty());
  EXPECT_EQ(parse_slice_shape("4x4x8"), (std::vector<int>{4, 4, 8}));
  EXPECT_TRUE(parse_slice_shape("4x").empty());
  EXPECT_EQ(to_string(std::vector<int>{16, 16}), "16x16");
}

TEST(Mesh, RelayoutForTheSweep) {
  JobSpec j;
  j.cluster.nodes = 16;
  j.cluster.gpus_per_node = 4;
  j.cluster.slices = 1;
  j.cluster.slice_shape = {4, 4, 4};
  j.parallel.mesh = {ax(MeshRole::kFsdp, "fsdp", 64)};
  j.parallel.tp = 4;
  j.parallel.ep = 2;
  ASSERT_TRUE(relayout_mesh(j));
  const MeshSizes s = mesh_sizes(j.parallel.mesh);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.ep, 2);
  EXPECT_EQ(s.fsdp_shard, 16);  // fsdp 8 x expert 2
  EXPECT_EQ(j.parallel.fsdp, FsdpKind::kFsdp2);
  EXPECT_TRUE(j.parallel.sequence_parallel);
  j.parallel.tp = 3;
  EXPECT_FALSE(relayout_mesh(j));
}

}  // namespace
}  // namespace projector
