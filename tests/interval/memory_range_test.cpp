// The calibrated range of a memory peak and the verdict it gives (issue 27): the range arithmetic
// and the verdict rule on hand-made reports and residuals, including a range straddling HBM.
#include <gtest/gtest.h>

#include "projector/interval/interval.h"
#include "projector/job/spec.h"
#include "support/job_builders.h"
#include "support/model_builders.h"

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Ten peak-memory residuals -10, -5, ..., 35 in the job's regime: q10 = -9.5, q90 = 34.5 (the
// 1.1-th and 9.9-th order statistics, interval_test.cpp).
ResidualTable memory_table(const std::string& regime) {
  ResidualTable t;
  for (int i = 0; i < 10; ++i) {
    t.runs.push_back({"m" + std::to_string(i), "f", regime, std::nullopt, -10.0 + 5.0 * i});
  }
  return t;
}

// One pipeline rank: `total_gib` in all, 4 GiB of it runtime context and communicator buffers.
MemoryReport report_of(double total_gib, double upper_gib, MemoryVerdict verdict) {
  MemoryReport rep;
  RankMemory r;
  r.total_point_bytes = total_gib * kGiB;
  r.allocator_point_bytes = (total_gib - 4.0) * kGiB;
  r.total_upper_bytes = upper_gib * kGiB;
  rep.ranks.push_back(r);
  rep.peak_point_bytes = r.total_point_bytes;
  rep.peak_upper_bytes = upper_gib * kGiB;
  rep.capacity_bytes = 80.0 * kGiB;
  rep.verdict = verdict;
  return rep;
}

TEST(VerdictWithRange, EachCaseByHand) {
  const double c = 80.0;
  EXPECT_EQ(verdict_with_range(70, 72, 60, 76, c), MemoryVerdict::kFits);
  // The range straddles HBM: the point fits, the high end does not.
  EXPECT_EQ(verdict_with_range(75, 76, 66, 85, c), MemoryVerdict::kAtRisk);
  // The upper bracket alone reaches past HBM.
  EXPECT_EQ(verdict_with_range(70, 82, 60, 76, c), MemoryVerdict::kAtRisk);
  // The point is over, but the low end fits: a published run this far below would fit.
  EXPECT_EQ(verdict_with_range(90, 95, 70, 99, c), MemoryVerdict::kAtRisk);
  EXPECT_EQ(verdict_with_range(120, 125, 90, 130, c), MemoryVerdict::kOom);
  EXPECT_EQ(verdict_with_range(120, 125, 90, 130, 0.0), MemoryVerdict::kUnknown);
}

TEST(MemoryRange, ScalesTheAllocatorPartAndDecides) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), testing::JobShape{});
  const ResidualTable t = memory_table(classify_regime(job).key);
  // 70 GiB (66 allocator): 4 + 66 / 1.345 = 53.07 and 4 + 66 / 0.905 = 76.93 GiB; all below 80.
  MemoryReport fits = report_of(70, 72, MemoryVerdict::kFits);
  attach_memory_range(t, job, fits);
  ASSERT_TRUE(fits.range);
  EXPECT_NEAR(fits.range->peak_lo_bytes / kGiB, 53.07, 0.01);
  EXPECT_NEAR(fits.range->peak_hi_bytes / kGiB, 76.93, 0.01);
  EXPECT_EQ(fits.range->runs, 10);
  EXPECT_EQ(fits.verdict, MemoryVerdict::kFits);
  // 78 GiB (74): high end 4 + 74 / 0.905 = 85.77 > 80, the range straddles HBM.
  MemoryReport straddles = report_of(78, 79, MemoryVerdict::kFits);
  attach_memory_range(t, job, straddles);
  EXPECT_NEAR(straddles.range->peak_hi_bytes / kGiB, 85.77, 0.01);
  EXPECT_EQ(straddles.verdict, MemoryVerdict::kAtRisk);
  EXPECT_EQ(straddles.range->model_verdict, MemoryVerdict::kFits);
  // 90 GiB (86): projected over, low end 4 + 86 / 1.345 = 67.94 fits.
  MemoryReport over = report_of(90, 95, MemoryVerdict::kOom);
  attach_memory_range(t, job, over);
  EXPECT_NEAR(over.range->peak_lo_bytes / kGiB, 67.94, 0.01);
  EXPECT_EQ(over.verdict, MemoryVerdict::kAtRisk);
  // 120 GiB (116): low end 4 + 116 / 1.345 = 90.25 > 80.
  MemoryReport oom = report_of(120, 125, MemoryVerdict::kOom);
  attach_memory_range(t, job, oom);
  EXPECT_NEAR(oom.range->peak_lo_bytes / kGiB, 90.25, 0.01);
  EXPECT_EQ(oom.verdict, MemoryVerdict::kOom);
}

TEST(MemoryRange, NoResidualsLeavesTheReport) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), testing::JobShape{});
  MemoryReport rep = report_of(90, 95, MemoryVerdict::kOom);
  attach_memory_range(ResidualTable{}, job, rep);
  EXPECT_FALSE(rep.range);
  EXPECT_EQ(rep.verdict, MemoryVerdict::kOom);
}

// The shipped residuals on a projected job: the range brackets a band around the projection and
// the verdict never turns stricter than the point's OOM rule (OOM needs the low end over HBM).
TEST(MemoryRange, ShippedResidualsOnARealProjection) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), testing::JobShape{});
  MemoryReport rep = project_memory(job);
  const MemoryVerdict before = rep.verdict;
  attach_memory_range(load_residuals(default_data_dir()), job, rep);
  ASSERT_TRUE(rep.range);
  EXPECT_LT(rep.range->peak_lo_bytes, rep.range->peak_hi_bytes);
  EXPECT_GE(rep.range->runs, 1);
  EXPECT_EQ(rep.range->model_verdict, before);
  if (rep.verdict == MemoryVerdict::kOom) {
    EXPECT_GT(rep.range->peak_lo_bytes, rep.capacity_bytes);
  }
}

}  // namespace
}  // namespace projector
