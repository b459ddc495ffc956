// The MaxText validation mapper (validate/map_maxtext.cpp): entries that state only ici_* / dcn_*
// axes and per_device_batch_size, the custom hybrid-ring mesh, TPU7x's two devices per chip with
// figures per chip, dtypes and MoE dispatch read from the entry, and the GPU (MI355X) MaxText rows.
#include <gtest/gtest.h>

#include <algorithm>

#include "projector/frontend/maxtext.h"
#include "projector/job/spec.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kDataDir = PROJECTOR_DEFAULT_DATA_DIR;

const RunEntry& run(const std::string& id) {
  static const std::vector<RunEntry> runs =
      load_runs(kDataDir + "/validation/calibration_runs_moe_tpu.yaml");
  for (const RunEntry& e : runs) {
    if (e.id == id) return e;
  }
  throw std::runtime_error("no run " + id);
}

const MeshAxis* axis(const JobSpec& j, MeshRole role) {
  for (const MeshAxis& a : j.parallel.mesh) {
    if (a.role == role) return &a;
  }
  return nullptr;
}

// ici_fsdp_parallelism=64, ici_expert_parallelism=4, custom_mesh=hybrid_ring_64x4 on a v6e-256:
// the expert axis on 2x2 rings, dense dispatch with token dropping, bf16 weights.
TEST(MapMaxText, MeshTextAndCustomMesh) {
  const MappedRun m = map_run(run("v6e-mixtral-8x22b-256chips-fsdp64-ep4"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  const JobSpec& j = m.job;
  EXPECT_EQ(m.framework, "maxtext");
  EXPECT_EQ(j.cluster.world_size(), 256);
  EXPECT_EQ(j.cluster.slice_shape, (std::vector<int>{16, 16}));
  ASSERT_NE(axis(j, MeshRole::kExpert), nullptr);
  EXPECT_EQ(axis(j, MeshRole::kExpert)->torus_extent, (std::vector<int>{2, 2}));
  EXPECT_EQ(axis(j, MeshRole::kFsdp)->ici, 64);
  EXPECT_EQ(j.parallel.ep, 4);
  EXPECT_EQ(j.runtime.micro_batch_size, 8);  // per_device_batch_size
  EXPECT_EQ(j.runtime.global_batch_size, 2048);
  EXPECT_EQ(j.runtime.moe_dispatch, MoeDispatchKind::kDenseCapacity);
  EXPECT_DOUBLE_EQ(j.model.layers[0].moe.capacity_factor, 1.25);
  EXPECT_EQ(j.runtime.precision.stored_weights_dtype(), Dtype::kBf16);
  EXPECT_TRUE(j.runtime.recompute.tensors.any_on_host());  // offloaded tensors
}

// A fractional per_device_batch_size (read as a number) maps as MaxText counts it: the step batch
// is int(devices x pdbs) = int(128 x 0.25) = 32 sequences (types.py:3458-3466), one per rank of
// the 32-way fsdp axis (the 4-way tensor axis does not shard the batch).
TEST(MapMaxText, FractionalPerDeviceBatch) {
  RunEntry e = run("v5p-llama4-maverick-128chips-fsdp32-tp4");
  e.training.per_device_batch_size = 0.25;
  e.training.global_batch_size = 32;
  const MappedRun m = map_run(e, kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.runtime.global_batch_size, 32);
  EXPECT_EQ(m.job.dp(), 32);
  EXPECT_EQ(m.job.runtime.micro_batch_size, 1);
  const std::vector<RunEntry> parsed = parse_runs(
      "- id: f\n  framework: MaxText\n  training: {per_device_batch_size: 0.125}\n", "f.yaml");
  ASSERT_TRUE(parsed.at(0).training.per_device_batch_size.has_value());
  EXPECT_DOUBLE_EQ(*parsed.at(0).training.per_device_batch_size, 0.125);
}

// TPU7x: two devices per chip; the entry counts chips and its figures are per chip.
TEST(MapMaxText, Tpu7xDevicesPerChip) {
  const MappedRun m = map_run(run("tpu7x-dsv3-671b-128chips-bf16"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.cluster.devices_per_chip, 2);
  EXPECT_EQ(m.job.cluster.world_size(), 256);  // 128 chips x 2 devices
  EXPECT_EQ(axis(m.job, MeshRole::kFsdp)->ici, 256);
  EXPECT_EQ(m.job.cluster.slice_shape, (std::vector<int>{4, 4, 8}));
}

// Only ici_fsdp_parallelism=-1: the rest of the mesh from MaxText's base.yml defaults.
TEST(MapMaxText, DefaultsForAMinimalMesh) {
  const MappedRun m = map_run(run("v6e-llama3.1-8b-256chips"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.dp(), 256);
  EXPECT_EQ(m.job.parallel.tp, 1);
  EXPECT_EQ(m.job.parallel.fsdp, FsdpKind::kFsdp2);
  EXPECT_TRUE(m.job.runtime.whole_step_compiled);
}

// A MaxText run on GPUs (MI355X): the same mapper, mesh across nodes (dcn_fsdp 8 x ici_expert 8).
TEST(MapMaxText, GpuRows) {
  const MappedRun m = map_run(run("mi355x-dsv3-671b-maxtext-dense-cf1.25-pdbs16"), kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.framework, "maxtext");
  EXPECT_EQ(m.job.cluster.world_size(), 64);
  EXPECT_EQ(m.job.parallel.ep, 8);
  EXPECT_EQ(axis(m.job, MeshRole::kFsdp)->dcn, 8);
  EXPECT_TRUE(m.job.cluster.slice_shape.empty());  // no torus
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// A run's quantization is read as the MaxText adapter reads the config key (parse_quantization):
// `fp8` is delayed scaling there and here, `fp8_full` tensorwise; an unknown name refuses the run.
TEST(MapMaxText, QuantizationReadAsTheAdapterReadsIt) {
  RunEntry e = run("v6e-mixtral-8x22b-256chips-fsdp64-ep4");
  auto recipe = [&](const std::string& precision) {
    e.training.precision = precision;
    const MappedRun m = map_run(e, kDataDir);
    EXPECT_TRUE(m.mapped) << m.reason;
    return m.job.runtime.precision.fp8;
  };
  EXPECT_EQ(recipe("bf16 (quantization=fp8)"), maxtext::parse_quantization("fp8")->recipe);
  EXPECT_EQ(recipe("bf16 (quantization=fp8)"), Fp8Recipe::kDelayed);
  EXPECT_EQ(recipe("fp8_full"), Fp8Recipe::kTensorwise);
  EXPECT_EQ(recipe("bf16"), Fp8Recipe::kNone);
  e.training.precision = "quantization=fp3_magic";
  const MappedRun bad = map_run(e, kDataDir);
  EXPECT_FALSE(bad.mapped);
  EXPECT_NE(bad.reason.find("fp3_magic"), std::string::npos) << bad.reason;
}

}  // namespace
}  // namespace projector
