// The DeepSeek-V3 training fixture (licence to be confirmed, tests/profile/data/README.md): every
// test reading it is here. DeepSeek's README: "a pair of individual forward and backward chunks
// in DualPipe. Each chunk contains 4 MoE layers ... EP64, TP1 with 4K sequence length".
#include <gtest/gtest.h>

#include "fixtures.h"
#include "projector/profile/benchmark.h"
#include "projector/profile/profile.h"

namespace projector::profile {
namespace {

using testing::fixture_job;
using testing::fixture_profile;

TEST(DeepSeekTrace, PhasesLayersAndAttribution) {
  const MeasuredProfile p = fixture_profile(testing::kDeepSeek);
  EXPECT_EQ(p.device, "NVIDIA H800");
  EXPECT_GE(p.attributed_fraction, 0.95);
  EXPECT_EQ(p.phase_source, "phase annotations (F)/(B)/(W)");
  EXPECT_TRUE(p.has_backward);
  EXPECT_FALSE(p.has_optimizer);
  EXPECT_EQ(p.forward_layers.repeats, 4);
  EXPECT_EQ(p.backward_layers.repeats, 4);
  const auto& grouped = p.classes[static_cast<std::size_t>(KernelClass::kGroupedGemm)];
  // Routed experts: fc1 and fc2 per layer forward, their input gradients backward.
  EXPECT_DOUBLE_EQ(grouped.kernels, 4 * 2 * 2);
  // DeepEP dispatch / combine are all-to-all and run concurrently with compute: their kernel
  // time is far above the wall time the step leaves to them.
  const auto& a2a = p.classes[static_cast<std::size_t>(KernelClass::kAllToAll)];
  EXPECT_GT(a2a.kernel_ms, 10 * a2a.wall_ms);
  // One step whose GPU work outlasts the CPU-side annotation (no later step to sync on).
  EXPECT_GT(p.step_ms, p.reference_step_ms);
}

TEST(DeepSeekTrace, ComparedWithFourMoeLayersAtEp64) {
  MeasuredProfile p = fixture_profile(testing::kDeepSeek);
  compare_with_job(p, fixture_job(testing::kDeepSeekConfig, "h800"));
  const ModelComparison& m = p.model;
  EXPECT_EQ(m.microbatches_in_step, 1);
  EXPECT_FALSE(m.has_embedding);  // a middle pipeline stage: neither end of the model
  EXPECT_FALSE(m.has_output);
  EXPECT_EQ(m.bench.ep, 64);
  EXPECT_EQ(m.bench.nodes, 8);
  ASSERT_EQ(m.collectives.size(), 1u);
  EXPECT_EQ(m.collectives[0].kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(m.collectives[0].group.size, 64);
  EXPECT_EQ(m.collectives[0].group.nodes, 8);
  for (int c = 0; c < kNumCostClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (m.ratio[i] > 0.0) {
      EXPECT_NEAR(m.ratio[i] * m.model_ms[i], m.measured_ms[i], 1e-9);
    }
  }
}

}  // namespace
}  // namespace projector::profile
