#include "projector/cost/memory_ops.h"

#include <gtest/gtest.h>

#include <utility>

#include "support/catalogue.h"

namespace projector {
namespace {

// mi300x.yaml: HBM 5.3 TB/s; elementwise fitted on BabelStream (data/kernels/memory.yaml: copy
// 4.15 TB/s), permute 0.057, optimizer 0.21, loss 0.65 (Primus' fractions); launch 4.5 us.
TEST(MemoryOps, ClassFractionsAndLaunch) {
  const AcceleratorSpec& a = testing::accelerator("mi300x");
  // 1 GB elementwise at the STREAM rate, + 4.5 us launch: within 2 % of BabelStream's 241.0 us.
  const OpCost e = memory_bound_time(a, 1e9, MemOpClass::kElementwise);
  EXPECT_NEAR(e.time_s, 1e9 / (a.calibration.hbm_elementwise_fraction.value * 5.3e12) + 4.5e-6,
              1e-9);
  EXPECT_NEAR(e.time_s, 241.0e-6, 0.02 * 241.0e-6);
  EXPECT_EQ(e.provenance, Provenance::kRoofline);
  // Primus' optimizer step: Llama-3-8B dist-opt DP8, 8.607e9/8 params x 30 B at 0.21 x 5.3 TB/s
  // = 29.00 ms (spec 5.13).
  const OpCost o = memory_bound_time(a, 8.607e9 / 8 * 30.0, MemOpClass::kOptimizer, 0);
  EXPECT_EQ(o.time_s, 0.0);  // zero kernels: nothing to launch, nothing priced
  const OpCost o1 = memory_bound_time(a, 8.607e9 / 8 * 30.0, MemOpClass::kOptimizer, 1);
  EXPECT_NEAR(o1.time_s - 4.5e-6, 29.00e-3, 0.01e-3);
  EXPECT_NEAR(memory_bound_time(a, 1e9, MemOpClass::kPermute).time_s,
              1e9 / (0.057 * 5.3e12) + 4.5e-6, 1e-9);
  EXPECT_NEAR(memory_bound_time(a, 1e9, MemOpClass::kLoss).time_s, 1e9 / (0.65 * 5.3e12) + 4.5e-6,
              1e-9);
}

// A class without its own fraction falls back to the elementwise one, then to 0.85.
TEST(MemoryOps, FallbacksWhenUncalibrated) {
  AcceleratorSpec h = testing::accelerator("h100_sxm");
  const double elementwise = h.calibration.hbm_elementwise_fraction.value;
  EXPECT_NEAR(elementwise, 2.90 / 3.35, 0.02);  // the fit, within 2 % of the STREAM copy
  h.calibration.hbm_loss_fraction = {};
  EXPECT_DOUBLE_EQ(hbm_fraction(h, MemOpClass::kLoss), elementwise);
  h.calibration.hbm_elementwise_fraction = {};
  EXPECT_DOUBLE_EQ(hbm_fraction(h, MemOpClass::kElementwise), 0.85);
  EXPECT_EQ(memory_bound_time(h, 0.0, MemOpClass::kElementwise).time_s, 0.0);
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

// Megatron's eager vocab_parallel_cross_entropy counted by hand over bf16 logits (a = 2 bytes):
// forward .float() 2 + 4, max 4, -= 8, exp 8, sum 4, div_ 8 = 38 bytes a logit; backward mul_ 8,
// the cast back 4 + 2 = 14. Compiled, the copy fuses with the max (2 + 4) and the subtract with
// the exp (8): 26 forward, the same 14 backward. The fused kernel reads the logits and writes the
// gradient: 4, and its backward rescales (1.5 x, as every fused memory op).
TEST(MemoryOps, CrossEntropyTrafficByHand) {
  const CrossEntropyTraffic eager = cross_entropy_traffic(1000.0, 2.0, CrossEntropyKernel::kEager);
  EXPECT_DOUBLE_EQ(eager.fwd_bytes, 38000.0);
  EXPECT_DOUBLE_EQ(eager.bwd_bytes, 14000.0);
  const CrossEntropyTraffic compiled =
      cross_entropy_traffic(1000.0, 2.0, CrossEntropyKernel::kCompiled);
  EXPECT_DOUBLE_EQ(compiled.fwd_bytes, 26000.0);
  EXPECT_DOUBLE_EQ(compiled.bwd_bytes, 14000.0);
  const CrossEntropyTraffic fused = cross_entropy_traffic(1000.0, 2.0, CrossEntropyKernel::kFused);
  EXPECT_DOUBLE_EQ(fused.fwd_bytes, 4000.0);
  EXPECT_DOUBLE_EQ(fused.bwd_bytes, 6000.0);
}

// The fitted H100 loss fraction against Liger-Kernel's benchmark of Megatron's losses at
// 8192 x 131072 bf16 logits (data/kernels/memory.yaml), priced at their byte counts over the
// fraction of 3.35 TB/s: eager forward 15.81 ms and forward + backward 21.25 ms; the native fused
// (compiled) loss 11.81 and 18.23 ms.
TEST(MemoryOps, MegatronCrossEntropyOnH100MatchesItsBenchmark) {
  const AcceleratorSpec& h100 = testing::accelerator("h100_sxm");
  const double logits = 8192.0 * 131072.0;
  auto priced = [&](CrossEntropyKernel k) {
    const CrossEntropyTraffic t = cross_entropy_traffic(logits, 2.0, k);
    const double fwd_s = memory_bound_time(h100, t.fwd_bytes, MemOpClass::kLoss).time_s;
    return std::pair{fwd_s, fwd_s + memory_bound_time(h100, t.bwd_bytes, MemOpClass::kLoss).time_s};
  };
  const auto [eager_fwd, eager_both] = priced(CrossEntropyKernel::kEager);
  EXPECT_NEAR(eager_fwd / 15.81e-3, 1.0, 0.10);
  EXPECT_NEAR(eager_both / 21.25e-3, 1.0, 0.10);
  const auto [compiled_fwd, compiled_both] = priced(CrossEntropyKernel::kCompiled);
  EXPECT_NEAR(compiled_fwd / 11.81e-3, 1.0, 0.15);
  EXPECT_NEAR(compiled_both / 18.23e-3, 1.0, 0.15);
}

}  // namespace
}  // namespace projector
