// Issue 16: the MoE runs of calibration_runs_moe_tpu.yaml. A DeepSeek-V4 entry stops as
// not_modelled (as the Megatron front-end refuses model_type deepseek_v4) instead of being
// projected as a 64-head MHA; the GB200 Llama-4 Scout runs are read with local batch 1 (torchao's
// README for the same run) and fit the part.
#include <gtest/gtest.h>

#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kDataDir = PROJECTOR_DEFAULT_DATA_DIR;

const std::vector<RunEntry>& runs() {
  static const std::vector<RunEntry> r =
      load_runs(kDataDir + "/validation/calibration_runs_moe_tpu.yaml");
  return r;
}

std::vector<RunEntry> only(const std::string& prefix) {
  std::vector<RunEntry> out;
  for (const RunEntry& e : runs()) {
    if (e.id.rfind(prefix, 0) == 0) out.push_back(e);
  }
  return out;
}

TEST(MoeRuns, DeepSeekV4IsNotModelled) {
  const std::vector<RunEntry> v4 = only("mi355x-8gpu-dsv4");
  ASSERT_EQ(v4.size(), 1u);
  const MappedRun m = map_run(v4[0], kDataDir);
  EXPECT_NE(m.not_modelled.find("DeepSeek-V4"), std::string::npos);
  const ValidationReport rep = validate(v4, make_default_project_fn(), kDataDir);
  ASSERT_EQ(rep.runs.size(), 1u);
  EXPECT_EQ(rep.runs[0].status, "not_modelled");
}

// Local batch 1 x 256 FSDP ranks; 8192 tokens per GPU per step; the projection fits 186 GB.
TEST(MoeRuns, Gb200ScoutRunsFitWithBatchOne) {
  const std::vector<RunEntry> gb = only("gb200-llama4-scout");
  ASSERT_EQ(gb.size(), 2u);
  for (const RunEntry& e : gb) {
    const MappedRun m = map_run(e, kDataDir);
    ASSERT_TRUE(m.mapped) << m.reason;
    EXPECT_EQ(m.job.runtime.micro_batch_size, 1) << e.id;
    EXPECT_EQ(m.job.runtime.global_batch_size, 256) << e.id;
  }
  const ValidationReport rep = validate(gb, make_default_project_fn(), kDataDir);
  for (const RunResult& r : rep.runs) {
    ASSERT_EQ(r.status, "ok") << r.id << ": " << r.reason;
    EXPECT_FALSE(r.predicted.out_of_memory) << r.id;
  }
}

}  // namespace
}  // namespace projector
