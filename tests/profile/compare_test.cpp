// The comparison with the cost models and the checks that a trace belongs to a job.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "projector/job/spec.h"
#include "projector/profile/profile.h"
#include "projector/util/error.h"

namespace projector::profile {
namespace {

using testing::fixture_job;
using testing::fixture_profile;

TEST(CompareWithJob, RatiosReproduceTheMeasuredClassTimes) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  const ModelComparison& m = p.model;
  EXPECT_EQ(m.microbatches_in_step, 1);
  EXPECT_TRUE(m.has_embedding);
  EXPECT_FALSE(m.has_output);  // no vocabulary-wide GEMM and no loss kernel in the trace
  for (int c = 0; c < kNumCostClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (m.ratio[i] > 0.0) {
      EXPECT_NEAR(m.ratio[i] * m.model_ms[i], m.measured_ms[i], 1e-9);
    }
  }
  // The measured GEMMs: the kernel model on the same shapes is within 30 % of the trace.
  for (const GemmStat& g : p.gemms) {
    if (g.m < 1024) continue;  // the rotary-table matmul (k = 1) is not a modelled GEMM
    EXPECT_NEAR(g.measured_us / g.model_us, 1.0, 0.3) << g.m << "x" << g.n << "x" << g.k;
  }
  // Every traced millisecond is accounted for: mapped classes, unmapped kernels, host idle.
  double measured = m.unmapped_ms + m.host_idle_ms;
  for (double v : m.measured_ms) measured += v;
  EXPECT_NEAR(measured, p.step_ms, 1e-6 * p.step_ms);
  ASSERT_FALSE(m.fitted.empty());
  EXPECT_EQ(m.fitted[0].key, "calibration.gemm_peak_fraction.bf16");
}

TEST(CompareWithJob, RefusesATraceOfAnotherModel) {
  // 24 layers traced; Llama 3.1 8B has 32.
  MeasuredProfile p = fixture_profile(testing::kQwenH100);
  LoadRequest r;
  r.config_path = testing::repo_examples("llama3.1_8B-BF16-pretrain.yaml");
  r.hardware = "h100_sxm";
  try {
    compare_with_job(p, load_job(r));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "num_layers");
    EXPECT_NE(e.message().find("24 transformer layers"), std::string::npos);
  }
  // Same layer count, another width: no GEMM of hidden size 2048.
  LoadRequest wide;
  wide.config_path = testing::profile_data(testing::kQwenConfig);
  wide.hardware = "h100_sxm";
  wide.cli.gpus_per_node = 1;
  wide.set_overrides = {"hidden_size=2048", "ffn_hidden_size=5632"};
  try {
    compare_with_job(p, load_job(wide));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "hidden_size");
  }
  // A non-transformer trace.
  MeasuredProfile toy = fixture_profile(testing::kHtaMi250);
  EXPECT_THROW(compare_with_job(toy, fixture_job(testing::kQwenConfig, "mi250x", 1)), InputError);
}

TEST(CompareWithJob, RefusesAnotherAccelerator) {
  MeasuredProfile p = fixture_profile(testing::kQwenH100);
  try {
    compare_with_job(p, fixture_job(testing::kQwenConfig, "mi300x", 1));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "--hardware");
    EXPECT_NE(e.message().find("h100_sxm"), std::string::npos);
  }
}

// Primus' reduction for a bench node: PP flattened first, then EP capped at what fits with the
// experts per rank kept, DP filled by what is left.
TEST(ReduceToBench, FlattensPipelineThenCapsExperts) {
  const JobSpec target = fixture_job(testing::kDeepSeekConfig, "h800", 0, 0);  // EP 64, 8 nodes
  std::vector<std::string> steps;
  const JobSpec b = reduce_to_bench(target, 8, steps);
  EXPECT_EQ(b.parallel.pp, 1);
  EXPECT_EQ(b.parallel.ep, 8);
  EXPECT_EQ(b.cluster.world_size(), 8);
  // 256 experts over EP 64 = 4 per rank; the bench keeps 4 per rank: 32 experts.
  EXPECT_EQ(b.model.layers[0].moe.num_experts, 32);
  EXPECT_EQ(b.dp(), 8);
  ASSERT_EQ(steps.size(), 2u);  // PP was 1 already: nothing to flatten
  EXPECT_EQ(steps[0], "EP 64 -> 8 (experts per rank kept)");
  EXPECT_EQ(steps[1], "64 GPUs -> 8 (DP 64 -> 8)");
  // A 16-stage pipeline on a bench node of 8: flattened; EP 8 then fits.
  LoadRequest r;
  r.config_path = testing::repo_examples("deepseek_v3-BF16-pretrain.yaml");
  r.hardware = "mi300x";
  r.cli.nodes = 32;
  std::vector<std::string> flat;
  const JobSpec f = reduce_to_bench(load_job(r), 8, flat);
  EXPECT_EQ(f.parallel.pp, 1);
  EXPECT_EQ(f.parallel.vpp, 1);
  EXPECT_EQ(f.parallel.ep, 8);
  ASSERT_FALSE(flat.empty());
  EXPECT_EQ(flat[0], "PP 16 -> 1 (flattened; the pipeline is simulated)");
  // Fits: only the GPU count changes.
  std::vector<std::string> none;
  const JobSpec q = reduce_to_bench(fixture_job(testing::kQwenConfig, "h100_sxm"), 1, none);
  EXPECT_EQ(q.cluster.world_size(), 1);
  EXPECT_EQ(q.dp(), 1);
}

}  // namespace
}  // namespace projector::profile
