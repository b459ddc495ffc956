#include "projector/cost/memory_ops.h"

#include <gtest/gtest.h>

#include "support/hardware_builders.h"

namespace projector {
namespace {

TEST(MemoryOps, ClassFractionsAndLaunch) {
  const auto a = testing::mi300x();
  // 1 GB elementwise at 0.566 x 5.3 TB/s = 333.4 us, + 2.8 us launch.
  const OpCost e = memory_bound_time(a, 1e9, MemOpClass::kElementwise);
  EXPECT_NEAR(e.time_s, 1e9 / (0.566 * 5.3e12) + 2.8e-6, 1e-9);
  EXPECT_EQ(e.provenance, Provenance::kRoofline);
  // Primus' optimizer step: Llama-3-8B dist-opt DP8, 8.607e9/8 params x 30 B at 0.21 x 5.3 TB/s
  // = 29.00 ms (spec 5.13).
  const OpCost o = memory_bound_time(a, 8.607e9 / 8 * 30.0, MemOpClass::kOptimizer, 0);
  EXPECT_EQ(o.time_s, 0.0);  // zero kernels: nothing to launch, nothing priced
  const OpCost o1 = memory_bound_time(a, 8.607e9 / 8 * 30.0, MemOpClass::kOptimizer, 1);
  EXPECT_NEAR(o1.time_s - 2.8e-6, 29.00e-3, 0.01e-3);
  EXPECT_NEAR(memory_bound_time(a, 1e9, MemOpClass::kPermute).time_s,
              1e9 / (0.057 * 5.3e12) + 2.8e-6, 1e-9);
  EXPECT_NEAR(memory_bound_time(a, 1e9, MemOpClass::kLoss).time_s, 1e9 / (0.65 * 5.3e12) + 2.8e-6,
              1e-9);
}

TEST(MemoryOps, FallbacksWhenUncalibrated) {
  auto h = testing::h100_sxm();  // only the elementwise fraction (STREAM copy 2.90/3.35) is set
  EXPECT_DOUBLE_EQ(hbm_fraction(h, MemOpClass::kLoss), 2.90 / 3.35);
  h.calibration.hbm_elementwise_fraction = {};
  EXPECT_DOUBLE_EQ(hbm_fraction(h, MemOpClass::kElementwise), 0.85);
  EXPECT_EQ(memory_bound_time(h, 0.0, MemOpClass::kElementwise).time_s, 0.0);
}

}  // namespace
}  // namespace projector
