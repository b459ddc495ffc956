// Validation files as users write them (issue 29 §3): a run that leaves a framework's own batch
// key or table dtype unstated is mapped from what it does state, each derivation recorded as an
// assumption, instead of refused "unmapped".
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kDataDir = PROJECTOR_DEFAULT_DATA_DIR;

RunEntry run(const std::string& file, const std::string& id) {
  for (const RunEntry& e : load_runs(kDataDir + "/validation/" + file)) {
    if (e.id == id) return e;
  }
  throw std::runtime_error("no run " + id);
}

// The run's assumptions (what validate prints and writes for it) name `key`.
bool assumed(const MappedRun& m, const std::string& key) {
  return std::any_of(m.assumptions.begin(), m.assumptions.end(),
                     [&](const std::string& a) { return a.rfind(key + " = ", 0) == 0; });
}

// torchtitan without PP: the micro batch is the per-rank batch; the same run with local batch 2
// stated maps to the same job.
TEST(UnstatedBatch, TorchtitanLocalBatchFromMicroBatch) {
  RunEntry e = run("calibration_runs.yaml", "torchtitan-llama3.1-8b-fsdp-bf16-h100x8");
  const MappedRun stated = map_run(e, kDataDir);
  ASSERT_TRUE(stated.mapped) << stated.reason;
  ASSERT_EQ(e.training.local_batch_size, 2);
  e.training.local_batch_size.reset();
  e.training.micro_batch_size = 2;
  const MappedRun derived = map_run(e, kDataDir);
  ASSERT_TRUE(derived.mapped) << derived.reason;
  EXPECT_EQ(derived.job.runtime.micro_batch_size, stated.job.runtime.micro_batch_size);
  EXPECT_EQ(derived.job.runtime.global_batch_size, stated.job.runtime.global_batch_size);
  EXPECT_TRUE(assumed(derived, "training.local_batch_size"));
  e.training.micro_batch_size.reset();
  EXPECT_FALSE(map_run(e, kDataDir).mapped);  // nothing to derive it from
}

// MaxText without per_device_batch_size: the global batch over the devices. The 128-chip TPU7x run
// (256 JAX devices) at global batch 2048 is per_device_batch_size 8, as the entry states.
TEST(UnstatedBatch, MaxTextPerDeviceFromGlobalBatch) {
  RunEntry e = run("calibration_runs_moe_tpu.yaml", "tpu7x-dsv3-671b-128chips-bf16");
  const MappedRun stated = map_run(e, kDataDir);
  ASSERT_TRUE(stated.mapped) << stated.reason;
  ASSERT_TRUE(e.training.per_device_batch_size && e.training.global_batch_size);
  const double pdbs = *e.training.per_device_batch_size;
  e.training.per_device_batch_size.reset();
  const MappedRun derived = map_run(e, kDataDir);
  ASSERT_TRUE(derived.mapped) << derived.reason;
  EXPECT_TRUE(assumed(derived, "training.per_device_batch_size"));
  EXPECT_EQ(derived.job.runtime.global_batch_size, stated.job.runtime.global_batch_size);
  EXPECT_EQ(derived.job.runtime.micro_batch_size, stated.job.runtime.micro_batch_size) << pdbs;
}

// A DLRM run whose table dtype is "not stated": the TorchRec profile's fp32, as an assumption.
TEST(UnstatedBatch, DlrmTableDtypeFromTheProfile) {
  RunEntry e = run("recsys_runs.yaml", "torchrec-dlrm-dot-sgd-a100x8-lbs256");
  ASSERT_TRUE(e.model.dlrm.has_value());
  e.model.dlrm->embedding_dtype = "not stated";
  const MappedRun m = map_run(e, kDataDir);
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_TRUE(assumed(m, "model.dlrm.embedding_dtype"));
  for (const EmbeddingTableSpec& t : m.job.model.recommendation.tables) {
    EXPECT_EQ(t.dtype, Dtype::kFp32);
  }
  e.model.dlrm->embedding_dtype = "fp3";
  EXPECT_FALSE(map_run(e, kDataDir).mapped);
}

}  // namespace
}  // namespace projector
