// Benchmark-anchored projections from the Qwen fixtures: the traced configuration reproduces the
// traced step, scaling out changes only what is restored analytically, and `both` compares the
// same ops priced both ways.
#include "projector/profile/benchmark.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "fixtures.h"
#include "projector/cost/cost_cache.h"
#include "projector/job/spec.h"
#include "projector/util/error.h"

namespace projector::profile {
namespace {

using testing::fixture_job;
using testing::kQwenConfig;

TEST(BenchmarkProjection, TracedConfigurationReproducesTheTracedStep) {
  for (const auto& [trace, hw] :
       {std::pair{testing::kQwenH100, "h100_sxm"}, std::pair{testing::kQwenMi300x, "mi300x"}}) {
    const MeasuredProfile p = testing::qwen_profile(trace, hw);
    const BenchmarkProjection b =
        project_benchmark(fixture_job(kQwenConfig, hw, 1), p, PerfOptions{}, false);
    EXPECT_NEAR(b.step_equivalent_ms, p.step_ms, 0.05 * p.step_ms) << trace;
    // And the traced step is what the trace itself says (within 2 %).
    EXPECT_NEAR(p.step_ms, p.reference_step_ms, 0.02 * p.reference_step_ms) << trace;
  }
}

TEST(BenchmarkProjection, MeasuredOpsNameTheTrace) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  const BenchmarkProjection b =
      project_benchmark(fixture_job(kQwenConfig, "h100_sxm", 1), p, PerfOptions{}, false);
  int gemms = 0, attn_bwd = 0;
  for (const PricedOp& po : b.report.chunks.at(0).ops) {
    if (po.op.kind == OpKind::kGemm) {
      ++gemms;
      EXPECT_EQ(po.provenance, Provenance::kMeasured);
      EXPECT_EQ(po.detail, "qwen1.5_0.5b_fwd_h100.json.gz");
    }
    if (po.op.kind == OpKind::kAttention && po.op.phase == WorkPhase::kB) {
      ++attn_bwd;  // the forward-only trace has no attention backward: the kernel model stands
      EXPECT_EQ(po.provenance, Provenance::kKernelModel);
    }
  }
  EXPECT_GT(gemms, 0);
  EXPECT_GT(attn_bwd, 0);
}

// 1 GPU (the bench) -> 2 nodes of 8 (DP 16): the per-microbatch chunk times, made of measured and
// modelled op costs that do not depend on DP, are identical; what changes is the iteration (16
// microbatches per rank become 1, the gradient reduction appears) and only the collective model
// prices the new DP group.
TEST(BenchmarkProjection, MoreNodesChangeOnlyTheRestoredParts) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  const JobSpec one = fixture_job(kQwenConfig, "h100_sxm", 1);
  const JobSpec sixteen = fixture_job(kQwenConfig, "h100_sxm", 8, 2);
  ASSERT_EQ(sixteen.dp(), 16);
  const BenchmarkProjection a = project_benchmark(one, p, PerfOptions{}, false);
  const BenchmarkProjection b = project_benchmark(sixteen, p, PerfOptions{}, false);
  ASSERT_EQ(a.report.chunks.size(), b.report.chunks.size());
  const ChunkTiming& ca = a.report.chunks[0];
  const ChunkTiming& cb = b.report.chunks[0];
  EXPECT_DOUBLE_EQ(ca.f_s, cb.f_s);
  EXPECT_DOUBLE_EQ(ca.b_s, cb.b_s);
  EXPECT_DOUBLE_EQ(ca.w_s, cb.w_s);
  ASSERT_EQ(ca.ops.size(), cb.ops.size());
  for (std::size_t i = 0; i < ca.ops.size(); ++i) {
    EXPECT_EQ(ca.ops[i].time_s, cb.ops[i].time_s) << ca.ops[i].op.name;
    EXPECT_EQ(ca.ops[i].provenance, cb.ops[i].provenance) << ca.ops[i].op.name;
  }
  EXPECT_EQ(a.report.num_microbatches, 16);
  EXPECT_EQ(b.report.num_microbatches, 1);
  EXPECT_LT(b.report.iteration_s, a.report.iteration_s);
  // The per-microbatch measured overhead follows the microbatch count.
  EXPECT_DOUBLE_EQ(a.overhead_ms, 16 * b.overhead_ms);
  // The DP gradient reduction: no measurement, the collective model on the target group.
  CostCache anchored(sixteen.cluster.accelerator, sixteen.cluster.network, 64, measured_scale(p));
  CostCache plain(sixteen.cluster.accelerator, sixteen.cluster.network);
  const CommGroup dp = job_group(sixteen, GroupKind::kDpCp);
  const OpCost c = anchored.collective(CollectiveKind::kReduceScatter, 1e9, dp);
  EXPECT_EQ(c.time_s, plain.collective(CollectiveKind::kReduceScatter, 1e9, dp).time_s);
  EXPECT_NE(c.provenance, Provenance::kMeasured);
  bool listed = false;
  for (const std::string& s : b.restored)
    listed = listed || s.find("DP 1 -> 16") != std::string::npos;
  EXPECT_TRUE(listed);
}

// Op class by op class, the anchored time over the simulated one is the profile's ratio: the two
// projections price the same ops, one of them through the measured provider.
TEST(BenchmarkProjection, BothTableShowsTheMeasuredRatios) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenMi300x, "mi300x");
  const BenchmarkProjection b =
      project_benchmark(fixture_job(kQwenConfig, "mi300x", 1), p, PerfOptions{}, true);
  ASSERT_TRUE(b.has_simulated);
  int checked = 0;
  for (const ClassRow& row : b.table) {
    for (int c = 0; c < kNumCostClasses; ++c) {
      if (row.name != to_string(static_cast<CostClass>(c))) continue;
      const double r = p.model.ratio[static_cast<std::size_t>(c)];
      EXPECT_NEAR(row.anchored_ms / row.simulated_ms, r > 0.0 ? r : 1.0, 1e-9) << row.name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
  EXPECT_GT(b.report.iteration_s, 0.0);
  EXPECT_GT(b.simulated.iteration_s, 0.0);
}

TEST(BenchmarkProjection, ProfileJsonRoundTrips) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  const MeasuredProfile q = parse_profile(profile_json(p), "round-trip.json");
  EXPECT_EQ(q.trace, p.trace);
  EXPECT_EQ(q.model.bench.world, 1);
  EXPECT_EQ(q.model.microbatches_in_step, p.model.microbatches_in_step);
  for (int c = 0; c < kNumCostClasses; ++c) {
    EXPECT_DOUBLE_EQ(q.model.ratio[static_cast<std::size_t>(c)],
                     p.model.ratio[static_cast<std::size_t>(c)]);
  }
  EXPECT_DOUBLE_EQ(q.model.unmapped_ms, p.model.unmapped_ms);
  EXPECT_DOUBLE_EQ(q.memory.reserved_bytes, p.memory.reserved_bytes);
  EXPECT_THROW(parse_profile(R"({"kind": "performance"})", "x.json"), InputError);
  EXPECT_THROW(parse_profile("not json", "x.json"), InputError);
}

TEST(BenchmarkProjection, RefusesAProfileOfAnotherAcceleratorOrWithoutAJob) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  EXPECT_THROW(project_benchmark(fixture_job(kQwenConfig, "mi300x", 1), p, PerfOptions{}, false),
               InputError);
  EXPECT_THROW(measured_scale(testing::fixture_profile(testing::kQwenH100)), InputError);
}

// A hand-edited ratio of 1e300 once printed 300-digit times: a profile's ratios, step times and
// counts are read within physical bounds, the key path named.
TEST(BenchmarkProjection, ProfileNumbersOutsidePhysicalBoundsAreRefused) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  const std::string text = profile_json(p);
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const std::size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  const std::string first_ratio = [&] {
    const std::size_t at = text.find("\"ratio\": ");
    return text.substr(at, text.find_first_of(",}\n", at) - at);
  }();
  for (const auto& [from, to, key] :
       {std::tuple{first_ratio, std::string("\"ratio\": 1e300"), "ratio"},
        std::tuple{first_ratio, std::string("\"ratio\": 250.0"), "ratio"},
        std::tuple{std::string("\"step_ms\": "), std::string("\"step_ms\": 1e12, \"x\": "),
                   "steps.step_ms"},
        std::tuple{std::string("\"tp\": 1"), std::string("\"tp\": 1e300"), "model.bench.tp"}}) {
    try {
      parse_profile(edited(from, to), "edited.json");
      ADD_FAILURE() << to << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(e.key().find(key), std::string::npos) << e.key() << " for " << to;
    }
  }
}

// Measured ratios are per op shape: a profile of a model with another hidden size is refused.
TEST(BenchmarkProjection, RefusesAProfileOfAnotherModel) {
  MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  const JobSpec job = fixture_job(kQwenConfig, "h100_sxm", 1);
  p.model.bench.hidden = static_cast<int>(job.model.hidden_size) * 2;
  try {
    project_benchmark(job, p, PerfOptions{}, false);
    FAIL() << "a profile of hidden size " << p.model.bench.hidden << " was used";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key(), "hidden_size");
  }
}

// Synthetic numbers (no trace): the residual decomposition by hand.
TEST(MemoryAnchor, CarriesTheMeasuredResidualsToTheTarget) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  MeasuredProfile p;
  p.trace = "synthetic";
  p.has_backward = true;
  p.memory.present = true;
  p.memory.allocated_bytes = 12 * gib;
  p.memory.reserved_bytes = 14 * gib;
  p.model.present = true;
  p.model.model_allocated_bytes = 10 * gib;
  p.model.model_fragmentation_bytes = 1 * gib;
  MemoryReport target;
  target.peak_point_bytes = 40 * gib;
  target.capacity_bytes = 80 * gib;
  const MemoryAnchor a = anchor_memory(p, target);
  EXPECT_DOUBLE_EQ(a.live_excess_bytes, 2 * gib);       // 12 - 10
  EXPECT_DOUBLE_EQ(a.allocator_excess_bytes, 1 * gib);  // (14 - 12) - 1
  EXPECT_DOUBLE_EQ(a.anchored_bytes, 43 * gib);
  EXPECT_EQ(a.verdict, MemoryVerdict::kFits);
  target.capacity_bytes = 42 * gib;
  EXPECT_EQ(anchor_memory(p, target).verdict, MemoryVerdict::kOom);
}

TEST(MemoryAnchor, RefusesAForwardOnlyTrace) {
  const MeasuredProfile p = testing::qwen_profile(testing::kQwenH100, "h100_sxm");
  ASSERT_TRUE(p.memory.present);
  try {
    anchor_memory(p, MemoryReport{});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.message().find("forward-only"), std::string::npos);
  }
}

}  // namespace
}  // namespace projector::profile
