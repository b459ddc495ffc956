// A torchtitan job that does not fit is told what to change in torchtitan's own keys: its
// activation-checkpointing modes, a smaller local batch, a deeper pipeline; never Megatron's
// words (core_attn, distributed optimizer), whose recompute sets torchtitan does not have.
#include <gtest/gtest.h>

#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "support/config_text.h"

namespace projector {
namespace {

TEST(TorchtitanRemedies, InTorchtitansKeys) {
  LoadRequest r = testing::bundled_request(
      std::string(PROJECTOR_TEST_DATA_DIR) + "/torchtitan/upstream/llama3_8b.toml", "h100_sxm");
  r.set_overrides = {"activation_checkpoint.mode=none", "training.local_batch_size=8",
                     "training.global_batch_size=64"};
  const JobSpec job = load_job(r);
  ASSERT_EQ(job.runtime.backend, "torchtitan");
  const MemoryReport m = project_memory(job);
  ASSERT_NE(m.verdict, MemoryVerdict::kFits);
  ASSERT_FALSE(m.remedies.empty());
  bool selective = false, full = false, batch = false;
  for (const MemoryRemedy& x : m.remedies) {
    EXPECT_LT(x.peak_point_bytes, 0.99 * m.peak_point_bytes) << x.change;
    EXPECT_EQ(x.change.find("core_attn"), std::string::npos) << x.change;
    EXPECT_EQ(x.change.find("distributed optimizer"), std::string::npos) << x.change;
    selective = selective || x.change.rfind("activation_checkpoint.mode: selective", 0) == 0;
    full = full || x.change == "activation_checkpoint.mode: full";
    // 8 sequences per rank -> 4 with 2 accumulation rounds (the global batch 64 kept).
    batch = batch || x.change.rfind("training.local_batch_size: 4", 0) == 0;
  }
  EXPECT_TRUE(selective);
  EXPECT_TRUE(full);
  EXPECT_TRUE(batch);
}

}  // namespace
}  // namespace projector
