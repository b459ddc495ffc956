// Issue 16 (MoE at scale): routing imbalance on the busiest expert-parallel rank, grouped GEMM
// efficiency per dtype, and the per-rank split of EP communication into exposed and hidden.
// Expected values are derived by hand (docs/moe.md sections 3-5) or from another module.
#include <gtest/gtest.h>

#include <cmath>

#include "projector/cost/gemm.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/catalogue.h"
#include "support/job_builders.h"
#include "support/layer_ops.h"

namespace projector {
namespace {

using testing::find_op;

// DeepSeek-V3-like routing on Mixtral shapes: 256 experts, top-8, EP 8 (32 experts per rank).
JobSpec fine_grained(int ep, int experts, int topk) {
  return testing::make_dropless_ep_job(ep, experts, topk);
}

// load = 1 + cv / sqrt(E / EP) x z(EP), z(8) = Phi^-1(7.625 / 8.25) = 1.43420 (Blom; computed
// independently with Python's statistics.NormalDist): cv 1 over 32 experts per rank -> 1.25353.
TEST(MoeScale, RankLoadFactorFromExpertLoadSpread) {
  JobSpec job = fine_grained(8, 256, 8);
  const MoeSpec& moe = job.model.layers[0].moe;
  EXPECT_DOUBLE_EQ(moe_rank_load_factor(job, moe), 1.0);  // balanced by default
  job.runtime.moe_routing = MoeRouting::kLearned;
  job.runtime.moe_expert_load_cv = 1.0;
  EXPECT_NEAR(moe_rank_load_factor(job, moe), 1.253533, 1e-5);
  // Capacity-padded buffers: the compute is the capacity whatever the routing.
  MoeSpec padded = moe;
  padded.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(moe_rank_load_factor(job, padded), 1.0);
  // One expert per rank, top-1, a huge spread: capped at everything one rank can receive (EP x).
  JobSpec one = fine_grained(16, 16, 1);
  one.runtime.moe_expert_load_cv = 100.0;
  EXPECT_DOUBLE_EQ(moe_rank_load_factor(one, one.model.layers[0].moe), 16.0);
}

// The busiest rank sets the pace: its grouped GEMM rows and its all-to-all bytes grow by the load
// factor; the local permute before the dispatch does not (every rank sends its own tokens).
TEST(MoeScale, ImbalanceScalesTheBusiestRanksWork) {
  JobSpec job = fine_grained(8, 256, 8);
  const LayerWork even = build_layer_work(job, 0);
  job.runtime.moe_routing = MoeRouting::kLearned;
  job.runtime.moe_expert_load_cv = 1.0;
  const double load = moe_rank_load_factor(job, job.model.layers[0].moe);
  const LayerWork hot = build_layer_work(job, 0);
  EXPECT_NEAR(find_op(hot, "moe.dispatch_a2a")->bytes / find_op(even, "moe.dispatch_a2a")->bytes,
              load, 1e-12);
  EXPECT_NEAR(static_cast<double>(find_op(hot, "moe.experts.fc1")->gemm.m) /
                  static_cast<double>(find_op(even, "moe.experts.fc1")->gemm.m),
              load, 1e-3);
  EXPECT_DOUBLE_EQ(find_op(hot, "moe.permute")->bytes, find_op(even, "moe.permute")->bytes);
  // Memory keeps the busiest rank's share of the routed activations in the point estimate.
  const LayerActivation a_even = layer_activation(fine_grained(8, 256, 8), job.model.layers[0]);
  const LayerActivation a_hot = layer_activation(job, job.model.layers[0]);
  EXPECT_GT(a_hot.moe_bytes, a_even.moe_bytes);
}

// Megatron-Core applies the routing probabilities in the experts' weighted activation (experts.py
// weighted_bias_swiglu_impl) and unpermutes without them, so the combine keeps only the permuted
// fp32 probabilities (T k x 4 B) instead of the experts' output (T k h x 2 B). Mixtral EP 8: T =
// 4096 tokens, k = 2, h = 4096.
TEST(MoeScale, MegatronKeepsProbabilitiesNotTheCombineInput) {
  JobSpec job = testing::make_job(testing::mixtral_8x7b(), {.ep = 8, .gbs = 8});
  ASSERT_TRUE(job.runtime.moe_probs_in_experts);  // the Megatron-LM profile's back-end
  const double in_experts = layer_activation(job, job.model.layers[0]).moe_bytes;
  job.runtime.moe_probs_in_experts = false;
  const double after_combine = layer_activation(job, job.model.layers[0]).moe_bytes;
  EXPECT_DOUBLE_EQ(after_combine - in_experts, 4096.0 * 2 * 4096 * 2 - 4096.0 * 2 * 4);
}

// moe_permute_fusion: the permute / unpermute are one row-gather pass each (priced like an
// embedding lookup, hbm_gather_fraction) instead of the unfused sort / index_select / scatter
// (hbm_permute_fraction); same bytes (2 x the routed copies x h x 2 B), faster class.
TEST(MoeScale, FusedPermuteIsARowGather) {
  JobSpec job = fine_grained(8, 256, 8);
  const LayerWork plain = build_layer_work(job, 0);
  job.runtime.moe_permute_fusion = true;
  const LayerWork fused = build_layer_work(job, 0);
  for (const char* name : {"moe.permute", "moe.unpermute"}) {
    EXPECT_EQ(find_op(plain, name)->mem_class, MemOpClass::kPermute) << name;
    EXPECT_EQ(find_op(fused, name)->mem_class, MemOpClass::kEmbedding) << name;
    EXPECT_DOUBLE_EQ(find_op(fused, name)->bytes, find_op(plain, name)->bytes) << name;
  }
  EXPECT_DOUBLE_EQ(find_op(fused, "moe.permute")->bytes, 2.0 * 4096 * 8 * 4096 * 2);
}

// B200: torch._grouped_mm's bf16 and the MXFP8 scaled grouped GEMM run at their own fractions of
// the dense rate (b200.yaml, fitted on the torchao rows of data/kernels/grouped_gemm.yaml). For a
// large, compute-bound shape the grouped kernel's time over the dense GEMM's of the same total
// rows is 1 / fraction.
TEST(MoeScale, GroupedGemmFractionPerDtype) {
  const AcceleratorSpec& b200 = testing::accelerator("b200");
  const std::int64_t m = 16384, n = 16384, k = 5120;
  const auto& cal = b200.calibration;
  for (const auto& [dtype, fraction] : {std::pair{Dtype::kBf16, cal.grouped_gemm_fraction.value},
                                        {Dtype::kMxfp8, cal.grouped_gemm_fraction_fp8.value}}) {
    const OpCost grouped = grouped_gemm_time(b200, 4, m, n, k, dtype, Dtype::kBf16);
    const OpCost dense = gemm_time(b200, GemmShape{4 * m, n, k, 1, dtype, Dtype::kBf16});
    EXPECT_NEAR(dense.time_s / grouped.time_s, fraction, 0.02) << to_string(dtype);
  }
}

// Per pipeline rank: total = hidden by shared experts + hidden by a paired microbatch + exposed.
// Without overlap everything is exposed; shared-expert overlap hides part of it behind the shared
// experts; combined 1F1B hides part behind the paired microbatch; the headline exposed EP figure
// is the critical rank's exposed share.
TEST(MoeScale, EpCommSplitAddsUp) {
  ModelSpec model = testing::mixtral_8x7b();
  for (LayerSpec& l : model.layers) {
    l.moe.num_experts = 16;
    l.moe.shared_expert_ffn_hidden_size = 14336;
  }
  JobSpec job = testing::make_job(model, {.ep = 16, .nodes = 2, .gbs = 64});
  job.runtime.moe_dispatcher = MoeDispatcher::kAllToAll;
  PerfOptions po;
  po.with_memory = false;
  auto check = [&](const PerfReport& rep) {
    ASSERT_EQ(rep.ep_comm.size(), static_cast<std::size_t>(job.parallel.pp));
    for (const EpCommSplit& s : rep.ep_comm) {
      EXPECT_GT(s.total_s, 0.0);
      EXPECT_NEAR(s.hidden_shared_experts_s + s.hidden_paired_microbatch_s + s.exposed_s, s.total_s,
                  1e-9 * s.total_s);
    }
  };
  const PerfReport plain = project_performance(job, po);
  check(plain);
  EXPECT_DOUBLE_EQ(plain.ep_comm[0].exposed_s, plain.ep_comm[0].total_s);
  EXPECT_NEAR(plain.exposed.ep_s, plain.ep_comm[0].exposed_s, 1e-9);

  job.runtime.moe_overlap.add(MoeOverlap::kSharedExperts);
  const PerfReport shared = project_performance(job, po);
  check(shared);
  EXPECT_GT(shared.ep_comm[0].hidden_shared_experts_s, 0.0);
  EXPECT_DOUBLE_EQ(shared.ep_comm[0].hidden_paired_microbatch_s, 0.0);

  JobSpec paired_job = job;
  paired_job.runtime.moe_overlap = MoeOverlaps{};
  paired_job.runtime.moe_overlap.add(MoeOverlap::kOtherMicrobatch);
  paired_job.runtime.moe_overlap.add(MoeOverlap::kDelayedWgrad);
  const PerfReport paired = project_performance(paired_job, po);
  job = paired_job;
  check(paired);
  EXPECT_GT(paired.ep_comm[0].hidden_paired_microbatch_s, 0.0);
  EXPECT_LT(paired.exposed.ep_s, plain.exposed.ep_s);
  EXPECT_NE(paired.ep_pair_mechanism.find("combined 1F1B"), std::string::npos);
}

}  // namespace
}  // namespace projector
