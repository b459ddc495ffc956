// Time to train, GPU-hours, cost and board energy (issue 27), derived by hand.
#include "projector/interval/training_plan.h"

#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/util/error.h"
#include "support/job_builders.h"
#include "support/model_builders.h"

namespace projector {
namespace {

TEST(TokenCount, SuffixesAndRefusals) {
  EXPECT_DOUBLE_EQ(parse_token_count("15T", "k"), 15e12);
  EXPECT_DOUBLE_EQ(parse_token_count("300b", "k"), 300e9);
  EXPECT_DOUBLE_EQ(parse_token_count("2.5e12", "k"), 2.5e12);
  EXPECT_DOUBLE_EQ(parse_token_count("1,000,000", "k"), 1e6);
  EXPECT_DOUBLE_EQ(parse_token_count("7M", "k"), 7e6);
  for (const char* bad : {"", "15X", "-3", "0", "T", "1e30", "nan", "3T4", "1..2"}) {
    EXPECT_THROW(parse_token_count(bad, "--train-tokens"), InputError) << bad;
  }
  try {
    parse_token_count("15X", "--train-tokens");
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "--train-tokens");
  }
}

// The one reading of --train-tokens / --gpu-hour-cost every command and the Python module share.
TEST(TokenCount, PlanInputs) {
  const PlanInputs p = make_plan_inputs("2T", 3.5);
  EXPECT_DOUBLE_EQ(p.train_tokens, 2e12);
  EXPECT_DOUBLE_EQ(p.gpu_hour_cost_usd, 3.5);
  EXPECT_DOUBLE_EQ(make_plan_inputs("", 0.0).train_tokens, 0.0);
  EXPECT_THROW(make_plan_inputs("", 2.0), InputError);     // a price with nothing to price
  EXPECT_THROW(make_plan_inputs("1T", -1.0), InputError);  // a negative price
  EXPECT_THROW(make_plan_inputs("1T", 2e9), InputError);   // beyond (0, 1e9]
}

// 8 H100 (700 W board power in the catalogue) at 80,000 tokens/s, 80 % range 8,000 - 12,500
// tokens/s/GPU, 10^12 tokens: 1.25e7 s = 144.68 days (115.74 - 180.84), 27,777.8 GPU-hours,
// 55,555.6 USD at 2 USD, 8 x 700 W x 1.25e7 s = 7e10 J = 19.44 MWh.
TEST(TrainingPlan, ByHand) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), testing::JobShape{});
  ASSERT_EQ(job.cluster.accelerator.board_power_w, 700.0);
  PerfReport rep;
  rep.world_size = 8;
  rep.tokens_per_s = 80000.0;
  rep.tokens_per_s_per_gpu = 10000.0;
  CalibratedRange r;
  r.tokens_per_s_per_gpu_lo = 8000.0;
  r.tokens_per_s_per_gpu_hi = 12500.0;
  rep.range = r;
  const TrainingPlan p = plan_training(job, rep, {1e12, 2.0});
  EXPECT_EQ(p.gpus, 8);
  EXPECT_TRUE(p.has_range);
  EXPECT_NEAR(p.days.value, 144.676, 1e-3);
  EXPECT_NEAR(p.days.lo, 115.741, 1e-3);
  EXPECT_NEAR(p.days.hi, 180.845, 1e-3);
  EXPECT_NEAR(p.gpu_hours.value, 27777.8, 0.1);
  EXPECT_NEAR(p.cost_usd.value, 55555.6, 0.1);
  EXPECT_NEAR(p.cost_usd.hi, 2.0 * 8 * 1e12 / 64000.0 / 3600.0, 1e-6);
  EXPECT_NEAR(p.energy_mwh.value, 19.444, 1e-3);
  EXPECT_FALSE(p.power_source.empty());
}

TEST(TrainingPlan, WithoutRangeOrPower) {
  JobSpec job = testing::make_job(testing::llama31_8b(), testing::JobShape{});
  job.cluster.accelerator.board_power_w = 0.0;
  PerfReport rep;
  rep.world_size = 8;
  rep.tokens_per_s = 80000.0;
  const TrainingPlan p = plan_training(job, rep, {1e12, 0.0});
  EXPECT_FALSE(p.has_range);
  EXPECT_DOUBLE_EQ(p.days.lo, p.days.value);
  EXPECT_DOUBLE_EQ(p.days.hi, p.days.value);
  EXPECT_EQ(p.board_power_w, 0.0);
  EXPECT_EQ(p.energy_mwh.value, 0.0);
  EXPECT_EQ(p.cost_usd.value, 0.0);
}

}  // namespace
}  // namespace projector
