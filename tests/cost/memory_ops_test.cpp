#include "projector/cost/memory_ops.h"

#include <gtest/gtest.h>

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
