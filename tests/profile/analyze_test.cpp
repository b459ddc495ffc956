// The analysis on real traces (tests/profile/data/README.md). Expected values come from what the
// traced programs are: the model architectures, the parameter count of the trained network.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "projector/profile/profile.h"

namespace projector::profile {
namespace {

using testing::fixture_profile;

const ClassTime& cls(const MeasuredProfile& p, KernelClass c) {
  return p.classes[static_cast<std::size_t>(c)];
}

int gemm_count(const MeasuredProfile& p, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (const GemmStat& g : p.gemms) {
    if (g.m == m && g.n == n && g.k == k) return g.count;
  }
  return 0;
}

// Qwen1.5-0.5B: 24 layers; per layer q, k, v, o (1024 x 1024), gate and up (1024 -> 2816) and down
// (2816 -> 1024), over 16 sequences x 559 tokens = 8944 rows; one attention core per layer.
void expect_qwen_structure(const MeasuredProfile& p) {
  EXPECT_GE(p.attributed_fraction, 0.95);
  EXPECT_NEAR(p.step_ms, p.reference_step_ms, 0.02 * p.reference_step_ms);
  EXPECT_FALSE(p.has_backward);
  EXPECT_FALSE(p.has_optimizer);
  EXPECT_TRUE(p.forward_layers.found);
  EXPECT_EQ(p.forward_layers.repeats, 24);
  EXPECT_DOUBLE_EQ(cls(p, KernelClass::kAttentionFwd).kernels, 24.0);
  EXPECT_EQ(gemm_count(p, 16 * 559, 1024, 1024), 24 * 4);
  EXPECT_EQ(gemm_count(p, 16 * 559, 2816, 1024), 24 * 2);
  EXPECT_EQ(gemm_count(p, 16 * 559, 1024, 2816), 24);
  EXPECT_TRUE(p.memory.present);
  EXPECT_GT(p.memory.reserved_bytes, p.memory.allocated_bytes);
  // The per-layer kernel time times the layers is most of the step's kernel time (the rest is
  // the embedding, the final norm and the rotary tables).
  EXPECT_NEAR(p.forward_layers.layer_ms * 24, p.kernel_ms, 0.05 * p.kernel_ms);
}

TEST(AnalyzeTrace, QwenForwardOnH100) {
  const MeasuredProfile p = fixture_profile(testing::kQwenH100);
  EXPECT_EQ(p.device, "NVIDIA H100 80GB HBM3");
  expect_qwen_structure(p);
}

TEST(AnalyzeTrace, QwenForwardOnMi300x) {
  const MeasuredProfile p = fixture_profile(testing::kQwenMi300x);
  EXPECT_EQ(p.device, "AMD Instinct MI300X VF");
  expect_qwen_structure(p);
}

// Steady-state steps: the GPU's start-to-start period matches the ProfilerStep durations.
TEST(AnalyzeTrace, DdpTrainingStepsPhasesAndGradientAllReduce) {
  const MeasuredProfile p = fixture_profile(testing::kHtaNccl);
  EXPECT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps_used, 2);
  EXPECT_NEAR(p.step_ms, p.reference_step_ms, 0.02 * p.reference_step_ms);
  EXPECT_GE(p.attributed_fraction, 0.95);
  EXPECT_TRUE(p.has_backward);
  EXPECT_TRUE(p.has_optimizer);
  // DDP reduces gradients while the backward runs, never in the forward.
  const ClassTime& ar = cls(p, KernelClass::kAllReduce);
  EXPECT_GT(ar.phase_ms[static_cast<std::size_t>(Phase::kBackward)], 0.0);
  EXPECT_EQ(ar.phase_ms[static_cast<std::size_t>(Phase::kForward)], 0.0);
  // The all-reduced gradient bytes of one step are ResNet-50's 25,557,032 fp32 parameters.
  double grad_bytes = 0.0;
  for (const CollectiveStat& c : p.collectives) {
    if (c.cls != KernelClass::kAllReduce) continue;
    EXPECT_EQ(c.group_size, 2);
    grad_bytes += c.message_bytes * c.calls;
  }
  EXPECT_DOUBLE_EQ(grad_bytes, 25557032.0 * 4);
  // Wall time is partitioned: classes plus host idle make up the step.
  double wall = p.host_idle_ms;
  for (const ClassTime& c : p.classes) wall += c.wall_ms;
  EXPECT_NEAR(wall, p.step_ms, 1e-6 * p.step_ms);
}

TEST(AnalyzeTrace, RocmToyTrainingStep) {
  const MeasuredProfile p = fixture_profile(testing::kHtaMi250);
  EXPECT_DOUBLE_EQ(p.attributed_fraction, 1.0);
  EXPECT_TRUE(p.has_backward);
  EXPECT_TRUE(p.has_optimizer);
  // One linear layer's forward GEMM and its weight-gradient GEMM (hipBLASLt Cijk_ kernels).
  EXPECT_DOUBLE_EQ(cls(p, KernelClass::kGemm).kernels, 2.0);
  EXPECT_EQ(gemm_count(p, 5, 128, 128), 1);
  EXPECT_FALSE(p.forward_layers.found);  // no attention, no repeating block: not a transformer
}

// Issue 30: a kernel whose ts + dur rounds back to ts in double arithmetic (100 ns at an
// epoch-scale timestamp, or any short kernel past 9e18 us) once made the wall-time attribution
// erase end() and crash. Times are taken relative to the first kernel, so the 100 ns survive.
std::string kernels_at(const std::vector<std::pair<std::string, std::string>>& ts_dur) {
  std::string events;
  for (const auto& [ts, dur] : ts_dur) {
    if (!events.empty()) events += ",\n";
    events += R"({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0,)"
              R"( "tid": 7, "ts": )" +
              ts + R"(, "dur": )" + dur + R"(, "args": {"device": 0, "stream": 7}})";
  }
  return "{\"traceEvents\": [\n" + events + "\n]}";
}

TEST(AnalyzeTrace, EpochScaleTimestampsKeepShortKernels) {
  const MeasuredProfile p = analyze_trace(parse_trace_text(
      kernels_at({{"1700000000000000", "0.1"}, {"1700000000000001", "0.1"}}), "epoch.json"));
  const ClassTime& g = cls(p, KernelClass::kGemm);
  EXPECT_NEAR(g.kernel_ms, 0.0002, 1e-12);
  // Both 0.1 us kernels and the 0.9 us launch gap between them: the kernels are not lost to
  // rounding (a double's step at 1.7e15 us is 0.25 us).
  EXPECT_NEAR(g.wall_ms, 0.0011, 1e-9);
}

TEST(AnalyzeTrace, KernelsWhoseEndRoundsToTheirStartDoNotCrash) {
  // 9.3e18 us apart from the first kernel: the double step there is 2048 us.
  const MeasuredProfile p = analyze_trace(parse_trace_text(
      kernels_at({{"0", "10"}, {"9300000000000000000", "1000"}, {"9.4e18", "0.5"}}), "far.json"));
  const ClassTime& g = cls(p, KernelClass::kGemm);
  EXPECT_GT(g.kernel_ms, 0.0);
  EXPECT_TRUE(std::isfinite(g.wall_ms));
  const MeasuredProfile alone = analyze_trace(
      parse_trace_text(kernels_at({{"9300000000000000000", "1000"}, {"1e19", "1"}}), "far.json"));
  EXPECT_TRUE(std::isfinite(cls(alone, KernelClass::kGemm).wall_ms));
}

}  // namespace
}  // namespace projector::profile
