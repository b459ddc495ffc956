// Calibrated ranges (issue 27): the regime classifier on hand-built jobs, quantiles and the pooling
// rule on small residual sets derived by hand, the range arithmetic, and the coverage of the
// shipped residuals on data/validation (70-90 %).
#include "projector/interval/interval.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "projector/job/spec.h"
#include "projector/util/error.h"
#include "projector/validate/validate.h"
#include "support/job_builders.h"
#include "support/model_builders.h"

namespace projector {
namespace {

using testing::JobShape;

TEST(Regime, DenseAndMoeJobsOnEachVendor) {
  // Llama 3.1 8B on one node of 8 H100 (sm90: Hopper), Megatron-LM, bf16, no pipeline.
  const Regime d = classify_regime(testing::make_job(testing::llama31_8b(), JobShape{}));
  EXPECT_EQ(d.key, "nvidia/hopper/dense/megatron/nopp/bf16/gpus<=64");
  ASSERT_EQ(d.levels.size(), 8u);
  EXPECT_EQ(d.levels[1], "nvidia/hopper/dense/megatron/nopp/bf16");
  EXPECT_EQ(d.levels[4], "nvidia/hopper/dense");
  EXPECT_EQ(d.levels[5], "nvidia/hopper");
  EXPECT_EQ(d.levels[6], "nvidia");
  EXPECT_EQ(d.levels[7], "all");
  // The generation follows the architecture: B200 and B300 (sm100, sm103) are both Blackwell;
  // a TPU's generation is its own.
  JobShape b;
  b.accelerator = "b300";
  EXPECT_EQ(classify_regime(testing::make_job(testing::llama31_8b(), b)).levels[5],
            "nvidia/blackwell");
  b.accelerator = "b200";
  EXPECT_EQ(classify_regime(testing::make_job(testing::llama31_8b(), b)).levels[5],
            "nvidia/blackwell");
  // Mixtral on 16 nodes of MI300X with PP 2 and EP 8 inside a node: moe-ep.
  JobShape s;
  s.accelerator = "mi300x";
  s.nodes = 16;
  s.pp = 2;
  s.ep = 8;
  s.gbs = 256;
  const Regime m = classify_regime(testing::make_job(testing::mixtral_8x7b(), s));
  EXPECT_EQ(m.key, "amd/cdna3/moe-ep/megatron/pp/bf16/gpus<=1024");
  // The same EP 8 on nodes of 4 GPUs spans two nodes.
  s.gpn = 4;
  s.nodes = 32;
  EXPECT_EQ(classify_regime(testing::make_job(testing::mixtral_8x7b(), s)).levels[4],
            "amd/cdna3/moe-ep-internode");
}

// Ten residuals -10, -5, 0, 5, ..., 35: the 10th percentile is order statistic 0.1 x 11 = 1.1,
// 0.1 of the way from the first to the second (-10 + 0.1 x 5 = -9.5), the 90th is order statistic
// 9.9 (30 + 0.9 x 5 = 34.5); a new draw falls between them with probability (9.9 - 1.1) / 11 = 0.8.
ResidualTable table_of(const std::string& regime, int n, const std::string& family = "f") {
  ResidualTable t;
  for (int i = 0; i < n; ++i) {
    t.runs.push_back({"r" + std::to_string(i), family, regime, -10.0 + 5.0 * i, std::nullopt});
  }
  return t;
}

TEST(Residuals, QuantilesByHand) {
  Regime r{"nvidia/hopper/dense/megatron/nopp/bf16/gpus<=64", {}};
  r.levels = {r.key, "nvidia/hopper/dense", "all"};
  const auto q = residual_quantiles(table_of(r.key, 10), r, ResidualMetric::kThroughput);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->level, r.key);
  EXPECT_EQ(q->runs, 10);
  EXPECT_DOUBLE_EQ(q->q10_pct, -9.5);
  EXPECT_DOUBLE_EQ(q->q90_pct, 34.5);
  EXPECT_FALSE(residual_quantiles(table_of(r.key, 10), r, ResidualMetric::kMemory));
}

// Fewer than 8 runs at the finest level: pooled to the next level that has 8 (runs of a sibling
// regime count there); leaving out a family can push the level coarser.
TEST(Residuals, PoolingRuleAndFamilyExclusion) {
  Regime r{"nvidia/hopper/moe-ep/megatron/pp/fp8/gpus<=1024", {}};
  r.levels = {r.key, "nvidia/hopper/moe-ep", "nvidia", "all"};
  ResidualTable t = table_of(r.key, 3, "a");
  for (const ResidualRun& x :
       table_of("nvidia/hopper/moe-ep/torchtitan/nopp/bf16/gpus<=64", 5, "b").runs)
    t.runs.push_back(x);
  for (const ResidualRun& x :
       table_of("nvidia/hopper/dense/megatron/nopp/bf16/gpus<=64", 4, "c").runs)
    t.runs.push_back(x);
  auto q = residual_quantiles(t, r, ResidualMetric::kThroughput);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->level, "nvidia/hopper/moe-ep");  // 3 + 5 runs
  EXPECT_EQ(q->runs, 8);
  q = residual_quantiles(t, r, ResidualMetric::kThroughput, "a");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->level, "nvidia");  // 5 + 4 without family a
  EXPECT_EQ(q->runs, 9);
  // A level that is a prefix of another regime's text without its '/' does not match it.
  Regime other{"nvidia/hopper/moe", {"nvidia/hopper/moe", "all"}};
  q = residual_quantiles(t, other, ResidualMetric::kThroughput);
  EXPECT_EQ(q->level, "all");
}

// A hybrid with a Mamba-2 (or linear-attention) layer is its own kernel class: "recurrent-" before
// the model part; ranges never borrow residuals across kernel classes, and need one of the job's
// vendor (throughput).
TEST(Regime, RecurrentHybridsAreTheirOwnKernelClass) {
  JobSpec job = testing::make_job(testing::llama31_8b(), JobShape{});
  job.model.layers[0].kind = LayerKind::kMamba;
  const Regime r = classify_regime(job);
  EXPECT_EQ(r.key, "nvidia/hopper/recurrent-dense/megatron/nopp/bf16/gpus<=64");
  EXPECT_EQ(regime_kernel_class(r.key), "recurrent");
  EXPECT_EQ(regime_kernel_class("amd/cdna3/moe-ep/megatron/pp/bf16/gpus<=64"), "transformer");
  EXPECT_EQ(regime_kernel_class("nvidia/ampere/recsys/torchrec/nopp/bf16/gpus<=64"), "recsys");
  EXPECT_EQ(regime_kernel_class("nvidia/hopper"), "transformer");
  EXPECT_EQ(regime_kernel_class("all"), "transformer");
}

TEST(Residuals, RangesStayInTheirKernelClassAndVendor) {
  // Ten transformer residuals on NVIDIA (-10 ... 35) and two recurrent ones (+5, +9).
  ResidualTable t = table_of("nvidia/hopper/dense/megatron/nopp/bf16/gpus<=64", 10, "a");
  t.runs.push_back(
      {"h1", "h", "nvidia/hopper/recurrent-moe-ep/megatron/nopp/fp8/gpus<=64", 5.0, {}});
  t.runs.push_back(
      {"h2", "h", "nvidia/hopper/recurrent-moe-ep/megatron/nopp/fp8/gpus<=64", 9.0, {}});
  Regime nv{"nvidia/hopper/recurrent-dense/megatron/nopp/bf16/gpus<=64", {}};
  nv.levels = {nv.key, "nvidia/hopper/recurrent-dense", "nvidia", "all"};
  // Only the two recurrent residuals count, at the coarsest level: 0.1 x 3 = 0.3 and 0.9 x 3 = 2.7
  // clamp to the first and the last.
  auto q = residual_quantiles(t, nv, ResidualMetric::kThroughput);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->level, "all");
  EXPECT_EQ(q->runs, 2);
  EXPECT_DOUBLE_EQ(q->q10_pct, 5.0);
  EXPECT_DOUBLE_EQ(q->q90_pct, 9.0);
  EXPECT_EQ(range_refusal(t, nv, ResidualMetric::kThroughput), "");
  // Without family h no recurrent residual is left; on AMD none is of the vendor: refused.
  EXPECT_FALSE(residual_quantiles(t, nv, ResidualMetric::kThroughput, "h"));
  EXPECT_NE(range_refusal(t, nv, ResidualMetric::kThroughput, "h"), "");
  Regime amd{"amd/cdna3/recurrent-dense/megatron/nopp/bf16/gpus<=64", {}};
  amd.levels = {amd.key, "amd/cdna3/recurrent-dense", "amd", "all"};
  EXPECT_FALSE(residual_quantiles(t, amd, ResidualMetric::kThroughput));
  EXPECT_NE(range_refusal(t, amd, ResidualMetric::kThroughput).find("on amd"), std::string::npos);
  // An NVIDIA transformer job ignores the recurrent pair.
  Regime dense{"nvidia/hopper/dense/megatron/nopp/bf16/gpus<=64", {}};
  dense.levels = {dense.key, "nvidia/hopper/dense", "nvidia", "all"};
  q = residual_quantiles(t, dense, ResidualMetric::kThroughput);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->runs, 10);
  EXPECT_DOUBLE_EQ(q->q10_pct, -9.5);
  // An empty table refuses nothing: it has no ranges to give.
  EXPECT_EQ(range_refusal(ResidualTable{}, amd, ResidualMetric::kThroughput), "");
}

// The range of a measured rate M given a prediction P and residuals r = P / M - 1: P = 1000
// tokens/s with q10 = -9.5 % and q90 = +34.5 % gives 1000 / 1.345 = 743.5 to 1000 / 0.905 = 1105.0;
// a 2.0 s step gives 2.0 x 0.905 = 1.81 to 2.0 x 1.345 = 2.69 s.
TEST(Residuals, RangeArithmetic) {
  const JobSpec job = testing::make_job(testing::llama31_8b(), JobShape{});
  const ResidualTable t = table_of(classify_regime(job).key, 10);
  PerfReport rep;
  rep.tokens_per_s_per_gpu = 1000.0;
  rep.iteration_s = 2.0;
  rep.mfu = 0.4;
  const auto c = calibrated_range(t, job, rep);
  ASSERT_TRUE(c);
  EXPECT_NEAR(c->tokens_per_s_per_gpu_lo, 1000.0 / 1.345, 1e-9);
  EXPECT_NEAR(c->tokens_per_s_per_gpu_hi, 1000.0 / 0.905, 1e-9);
  EXPECT_NEAR(c->iteration_s_lo, 1.81, 1e-12);
  EXPECT_NEAR(c->iteration_s_hi, 2.69, 1e-12);
  EXPECT_NEAR(c->mfu_hi, 0.4 / 0.905, 1e-12);
  EXPECT_EQ(c->memory_runs, 0);
}

TEST(Residuals, MalformedFileIsAnInputError) {
  EXPECT_THROW(parse_residuals("{\"runs\": 3}", "r.json"), InputError);
  EXPECT_THROW(parse_residuals("{\"runs\": [{\"id\": 1}]}", "r.json"), InputError);
  EXPECT_THROW(parse_residuals("{\"runs\": [{\"id\": \"a\", \"regime\": \"all\", "
                               "\"throughput_residual_pct\": -150}]}",
                               "r.json"),
               InputError);
  EXPECT_TRUE(load_residuals("/nonexistent").runs.empty());
}

// Checked by hand: 8 of 8 at 80 % has probability 0.8^8 = 0.168 (consistent); 3 of 8 has
// P(X <= 3) = 0.0104 (not); 20 of 20 has 0.8^20 = 0.0115 (not).
// P(X <= 7) for 13 runs is 0.030 (consistent), P(X <= 6) = 0.0070 (not).
TEST(Coverage, BinomialConsistencyByHand) {
  EXPECT_TRUE(coverage_consistent(8, 8));
  EXPECT_TRUE(coverage_consistent(4, 8));  // P(X <= 4) = 0.056
  EXPECT_FALSE(coverage_consistent(3, 8));
  EXPECT_FALSE(coverage_consistent(20, 20));
  EXPECT_TRUE(coverage_consistent(7, 13));
  EXPECT_FALSE(coverage_consistent(6, 13));
  EXPECT_TRUE(coverage_consistent(0, 1));  // one run: either outcome is likely enough
  // Large groups stay finite: 1,600 of 2,000 is the expected count, 1,500 is 5.6 standard
  // deviations (sqrt(2000 x 0.8 x 0.2) = 17.9) below it.
  EXPECT_TRUE(coverage_consistent(1600, 2000));
  EXPECT_FALSE(coverage_consistent(1500, 2000));
}

// A run of residuals.json is judged on its leave-one-family-out projection: its lofo error is
// its residuals.json row, and the range shown is drawn around that projection, so the measured
// tokens/s (the in-sample prediction over 1 + its in-sample error) lies in the range shown exactly
// when the run is counted inside.
TEST(Coverage, RunsOfTheResidualsAreJudgedOnTheirLofoProjection) {
  const std::string data = PROJECTOR_DEFAULT_DATA_DIR;
  const ResidualTable table = load_residuals(data);
  const ValidationReport rep = validate(load_runs(data + "/validation/calibration_runs_4.yaml"),
                                        make_default_project_fn(), data);
  int judged = 0;
  for (const RunResult& r : rep.runs) {
    if (!r.tokens_range || !r.in_range || !r.throughput_error_pct) continue;
    ASSERT_TRUE(r.lofo_error_pct) << r.id;  // every compared run of the file is in the table
    const auto row = std::find_if(table.runs.begin(), table.runs.end(),
                                  [&](const ResidualRun& x) { return x.id == r.id; });
    ASSERT_NE(row, table.runs.end());
    EXPECT_DOUBLE_EQ(*r.lofo_error_pct, *row->throughput_pct);
    const double measured =
        r.predicted.tokens_per_sec_per_gpu / (1.0 + *r.throughput_error_pct / 100.0);
    const bool shown_inside = measured >= r.tokens_range->first * (1.0 - 1e-9) &&
                              measured <= r.tokens_range->second * (1.0 + 1e-9);
    EXPECT_EQ(shown_inside, *r.in_range) << r.id;
    ++judged;
  }
  EXPECT_GT(judged, 25);
}

// Coverage per regime level: a level counts the compared runs whose regime key is that level or
// lies under it (counted here from each run's key, not from its ladder), and the JSON carries the
// count with its binomial verdict.
TEST(Coverage, EveryRegimeLevelCountsTheRunsUnderIt) {
  const std::string data = PROJECTOR_DEFAULT_DATA_DIR;
  const ValidationReport rep = validate(load_runs(data + "/validation/calibration_runs_4.yaml"),
                                        make_default_project_fn(), data);
  const nlohmann::json j = nlohmann::json::parse(report_to_json(rep));
  int levels = 0;
  for (const auto& c : j["summary"]["interval_coverage"]) {
    if (c["group"] != "regime") continue;
    const std::string level = c["value"];
    int runs = 0, inside = 0;
    for (const RunResult& r : rep.runs) {
      if (!r.in_range || !r.excluded.empty()) continue;
      if (r.regime_key != level && r.regime_key.rfind(level + "/", 0) != 0) continue;
      ++runs;
      inside += *r.in_range ? 1 : 0;
    }
    EXPECT_EQ(c["runs"], runs) << level;
    EXPECT_EQ(c["inside"], inside) << level;
    EXPECT_EQ(c["consistent_with_80_pct"].get<bool>(), coverage_consistent(inside, runs)) << level;
    ++levels;
  }
  EXPECT_GE(levels, 6);  // vendor, model, back-end, pipeline, precision, scale of one key at least
}

// The shipped residuals on the shipped runs: each compared run's range is computed without its own
// family, and between 70 % and 90 % of the measurements must fall inside their 80 % range.
TEST(Coverage, ShippedResidualsCoverTheValidationRuns) {
  const std::string data = PROJECTOR_DEFAULT_DATA_DIR;
  int runs = 0, inside = 0;
  std::map<std::string, std::pair<int, int>> groups;  // group:value -> inside, runs
  // Every file of data/validation: runs without a range (a kernel class or vendor no residual
  // covers: the held-out recurrent hybrids on MI300X, the recommendation runs) are not counted.
  for (const char* f : {"calibration_runs.yaml", "calibration_runs_moe_tpu.yaml",
                        "calibration_runs_4.yaml", "primus_config_runs.yaml", "recsys_runs.yaml"}) {
    const ValidationReport r =
        validate(load_runs(data + "/validation/" + f), make_default_project_fn(), data);
    for (const CoverageStats& c : r.summary.coverage) {
      auto& g = groups[c.group + ":" + c.value];
      g.first += c.inside;
      g.second += c.runs;
      if (c.group != "all") continue;
      runs += c.runs;
      inside += c.inside;
    }
  }
  // Every group with 8 or more runs -- model, accelerator and each level of the regime ladders --
  // too: within 70-90 %, or, for a group too small for that band to be a fair test, a count a
  // calibrated 80 % range gives with at least 2.5 % probability in each tail (8 of 8 runs inside
  // has probability 0.8^8 = 17 %; the band allows only 6 or 7).
  for (const auto& [name, g] : groups) {
    if (g.second < kMinRegimeRuns) continue;
    const double p = 100.0 * g.first / g.second;
    std::printf("  %s: %d of %d (%.1f %%)\n", name.c_str(), g.first, g.second, p);
    const bool in_band = p >= 70.0 && p <= 90.0;
    EXPECT_TRUE(in_band || (g.second < 20 && coverage_consistent(g.first, g.second)))
        << name << ": " << g.first << " of " << g.second;
  }
  ASSERT_GT(runs, 80);
  const double pct = 100.0 * inside / runs;
  std::printf("interval coverage: %d of %d runs inside their 80 %% range (%.1f %%)\n", inside, runs,
              pct);
  EXPECT_GE(pct, 70.0);
  EXPECT_LE(pct, 90.0);
}

}  // namespace
}  // namespace projector
