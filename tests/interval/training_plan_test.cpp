// Time to train, GPU-hours, cost and board energy (issue 27), derived by hand.
#include "projector/interval/training_plan.h"

#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/perf/perf.h"
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

// Energy at board power while computing and the measured idle power while waiting: H100 SXM
// (700 W; idle with a CUDA context 121.7 W, EN1) busy 75 % of the time draws 121.7 + (700 -
// 121.7) x 0.75 = 555.425 W; 8 GPUs x 555.425 W x 1.25e7 s = 5.554e10 J = 15.429 MWh. Without a
// busy fraction (a run not simulated) it is board power throughout, 19.444 MWh as above.
TEST(TrainingPlan, EnergyAtBusyAndIdlePower) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), testing::JobShape{});
  ASSERT_DOUBLE_EQ(job.cluster.accelerator.idle_power_w, 121.7);
  PerfReport rep;
  rep.world_size = 8;
  rep.tokens_per_s = 80000.0;
  rep.busy_fraction = 0.75;
  const TrainingPlan p = plan_training(job, rep, {1e12, 0.0});
  EXPECT_NEAR(p.energy_mwh.value, 15.4285, 1e-3);
  EXPECT_DOUBLE_EQ(p.idle_power_w, 121.7);
  EXPECT_DOUBLE_EQ(p.busy_fraction, 0.75);
  EXPECT_NE(p.idle_power_source.find("EN1"), std::string::npos) << p.idle_power_source;
  rep.busy_fraction = 0.0;
  const TrainingPlan unsimulated = plan_training(job, rep, {1e12, 0.0});
  EXPECT_NEAR(unsimulated.energy_mwh.value, 19.444, 1e-3);
  EXPECT_EQ(unsimulated.idle_power_w, 0.0);
  EXPECT_TRUE(unsimulated.idle_power_source.empty());
  // A part without a published idle power (H200) is priced at board power throughout.
  JobSpec h200 = job;
  h200.cluster.accelerator.idle_power_w = 0.0;
  rep.busy_fraction = 0.75;
  EXPECT_NEAR(plan_training(h200, rep, {1e12, 0.0}).energy_mwh.value, 19.444, 1e-3);
}

// The busy fraction the energy uses, against the 1F1B bubble by hand: 4 equal stages and 8
// microbatches keep each rank busy m / (m + p - 1) = 8 / 11 of the pipeline (the optimizer step
// and the unhidden gradient reduction shift it a little); one stage waits only for the latter.
TEST(TrainingPlan, BusyFractionIsTheBubbleComplement) {
  const ModelSpec model = testing::make_dense({32, 4096, 14336, 32, 8, 4096});
  testing::JobShape one;
  one.gbs = 8;
  const PerfReport flat = project_performance(testing::make_job(model, one));
  // One stage: the device waits only for the gradient reduction the backward does not hide.
  EXPECT_NEAR(flat.busy_fraction,
              1.0 - (flat.exposed.dp_s + flat.param_gather_exposed_s) / flat.iteration_s, 1e-3);
  EXPECT_LT(flat.busy_fraction, 1.0);
  testing::JobShape four = one;
  four.pp = 4;
  four.gbs = 16;
  four.schedule = ScheduleKind::k1F1B;
  const PerfReport piped = project_performance(testing::make_job(model, four));
  ASSERT_EQ(piped.num_microbatches, 8);
  EXPECT_NEAR(piped.busy_fraction, 8.0 / 11.0, 0.04);
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
