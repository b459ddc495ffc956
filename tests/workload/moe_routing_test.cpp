// Issue 16: group-limited (node-limited) routing in the deduplicated dispatch, the MXFP8 wire
// format of the dispatch and of the combine's backward, and the compute units DeepEP takes from
// the compute it overlaps. Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/job_builders.h"
#include "support/layer_ops.h"

namespace projector {
namespace {

using testing::find_op;

// Mixtral-shaped layers (4096 tokens per microbatch, h = 4096, bf16) with DeepSeek-V3's routing:
// 256 experts, top-8, flex dispatcher (deduplicated).
JobSpec deepseek_routed(int ep, int nodes, int groups, int group_topk) {
  ModelSpec m = testing::mixtral_8x7b();
  for (LayerSpec& l : m.layers) {
    l.moe.num_experts = 256;
    l.moe.topk = 8;
    l.moe.expert_ffn_hidden_size = 2048;
    l.moe.router_num_groups = groups;
    l.moe.router_group_topk = group_topk;
  }
  JobSpec job = testing::make_job(m, {.ep = ep, .nodes = nodes, .gbs = 512});
  job.runtime.moe_dispatcher = MoeDispatcher::kFlex;
  job.runtime.moe_dispatch_kernel = MoeDispatchKernel::kDeepEp;
  job.runtime.deepep = job.runtime.moe_dedup_dispatch = true;
  return job;
}

double dispatch_copies(const JobSpec& job) {
  const Op* d = find_op(build_layer_work(job, 0), "moe.dispatch");
  EXPECT_NE(d, nullptr);
  return d == nullptr ? 0.0 : d->bytes / (4096.0 * 8 * 4096 * 2);
}

// C(n - s, k) / C(n, k): none of k distinct experts among s given ones of n.
double miss(int n, int s, int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(n - s - i) / (n - i);
  return p;
}

// EP 8 in one node: one destination per GPU, 32 experts each. Ungrouped, a given other GPU is hit
// with 1 - C(224,8)/C(256,8) = 0.6618; the bytes are 7 x that over the 8 x 7/8 standard copies.
// Primus' DeepSeek-V3 preset (8 groups, top-4 groups): one group per GPU, the token picks 4 of
// them and its 8 experts fall among their 128: P(hit) = 4/8 x (1 - C(96,8)/C(128,8)) = 0.4536.
TEST(MoeRouting, GroupLimitedRoutingReachesFewerGpus) {
  const double ungrouped = 1.0 - miss(256, 32, 8);
  EXPECT_NEAR(ungrouped, 0.66183, 1e-5);
  EXPECT_NEAR(dispatch_copies(deepseek_routed(8, 1, 0, 0)), ungrouped, 1e-12);
  const double grouped = 0.5 * (1.0 - miss(128, 32, 8));
  EXPECT_NEAR(grouped, 0.45363, 1e-5);
  EXPECT_NEAR(dispatch_copies(deepseek_routed(8, 1, 8, 4)), grouped, 1e-12);
  // Picking every group is no limit.
  EXPECT_NEAR(dispatch_copies(deepseek_routed(8, 1, 8, 8)), ungrouped, 1e-12);
}

// EP 64 over 8 nodes, 32 groups of 8 experts, top-4 groups: each node holds 4 whole groups. A
// remote node is hit when j >= 1 of its groups are among the 4 picked (hypergeometric
// C(4,j) C(28,4-j) / C(32,4) = 0.36440, 0.06307, 0.00311, 0.00003 for j = 1..4) and one of the 8
// experts, uniform over the picked 32, falls in them (1 - C(32-8j,8)/C(32,8) = 0.93008, 0.99878,
// 1, 1): 0.33892 + 0.06299 + 0.00311 + 0.00003 = 0.40506 (vs 0.66183 ungrouped). Groups as large as
// nodes (8 groups, top-4) give the node-limited 4/8 x (1 - C(96,8)/C(128,8)).
TEST(MoeRouting, GroupsSmallerThanNodes) {
  EXPECT_NEAR(dispatch_copies(deepseek_routed(64, 8, 32, 4)), 0.40506, 1e-5);
  EXPECT_NEAR(dispatch_copies(deepseek_routed(64, 8, 8, 4)), 0.5 * (1.0 - miss(128, 32, 8)), 1e-12);
  EXPECT_NEAR(dispatch_copies(deepseek_routed(64, 8, 0, 0)), 1.0 - miss(256, 32, 8), 1e-12);
}

// moe_dispatch_fwd_dtype mxfp8: the forward dispatch carries 1 byte per element plus one scale
// byte per 32 (1.03125 B instead of bf16's 2); its backward (the gradient coming back) stays
// bf16. moe_combine_bwd_dtype mxfp8: the combine forward stays bf16, its backward is quantized.
TEST(MoeRouting, Mxfp8DispatchWithBf16Combine) {
  JobSpec job = deepseek_routed(8, 1, 0, 0);
  const LayerWork plain = build_layer_work(job, 0);
  const double bf16 = find_op(plain, "moe.dispatch")->bytes;
  EXPECT_DOUBLE_EQ(find_op(plain, "moe.dispatch.bwd")->bytes, bf16);
  job.runtime.moe_dispatch_fwd_fp8 = true;
  LayerWork lw = build_layer_work(job, 0);
  EXPECT_NEAR(find_op(lw, "moe.dispatch")->bytes, bf16 * 1.03125 / 2.0, 1e-6 * bf16);
  EXPECT_DOUBLE_EQ(find_op(lw, "moe.dispatch.bwd")->bytes, bf16);
  EXPECT_DOUBLE_EQ(find_op(lw, "moe.combine")->bytes, bf16);
  EXPECT_DOUBLE_EQ(find_op(lw, "moe.combine.bwd")->bytes, bf16);
  job.runtime.moe_combine_bwd_fp8 = true;
  lw = build_layer_work(job, 0);
  EXPECT_DOUBLE_EQ(find_op(lw, "moe.combine")->bytes, bf16);
  EXPECT_NEAR(find_op(lw, "moe.combine.bwd")->bytes, bf16 * 1.03125 / 2.0, 1e-6 * bf16);
}

// DeepEP on 20 of the H100's 132 SMs: shared experts far longer than the dispatch (8 x the
// routed width) hide all of it, but run on the other 112 SMs meanwhile, so each hidden dispatch
// or combine of t seconds still costs 20/132 x t.
TEST(MoeRouting, DeepEpSmsSlowTheComputeTheyOverlap) {
  JobSpec job = deepseek_routed(16, 2, 0, 0);
  for (LayerSpec& l : job.model.layers) l.moe.shared_expert_ffn_hidden_size = 8 * 14336;
  job.runtime.moe_overlap.add(MoeOverlap::kSharedExperts);
  ASSERT_EQ(job.cluster.accelerator.compute_units, 132);
  PerfOptions po;
  po.with_memory = false;
  po.keep_op_table = true;
  auto dispatch = [&](const JobSpec& j) {
    for (const PricedOp& op : project_performance(j, po).chunks[0].ops) {
      if (op.op.name == "moe.dispatch") return op;
    }
    ADD_FAILURE() << "no moe.dispatch";
    return PricedOp{};
  };
  const PricedOp free_sms = dispatch(job);
  EXPECT_GT(free_sms.time_s, 0.0);
  EXPECT_DOUBLE_EQ(free_sms.exposed_s, 0.0);
  job.runtime.moe_comm_compute_units = 20;
  const PricedOp taken = dispatch(job);
  EXPECT_DOUBLE_EQ(taken.time_s, free_sms.time_s);
  EXPECT_NEAR(taken.exposed_s, 20.0 / 132.0 * taken.time_s, 1e-15);
}

// The same bound in a job: DeepSeek-V3's routing at EP 8 on one node of B200 moves 4096 tokens x
// 8 x (1 - C(224,8)/C(256,8)) destinations x h 4096 x 2 bytes per dispatch. DeepEP on 16 SMs needs
// those bytes over 16 x the per-SM rate (longer than the links' time); on all 148 SMs, and for
// HybridEP (whose copy engine is not SM-bound at 16, data/kernels), the links' time stands.
TEST(MoeRouting, DeepEpSmsBoundItsCopyRate) {
  ModelSpec m = deepseek_routed(8, 1, 0, 0).model;
  JobSpec job = testing::make_job(m, {.ep = 8, .nodes = 1, .gbs = 512, .accelerator = "b200"});
  job.runtime.moe_dispatcher = MoeDispatcher::kFlex;
  job.runtime.moe_dispatch_kernel = MoeDispatchKernel::kDeepEp;
  job.runtime.deepep = job.runtime.moe_dedup_dispatch = true;
  const double rate = job.cluster.accelerator.calibration.ep_kernel_unit_bytes_per_s.value;
  ASSERT_GT(rate, 0.0);
  PerfOptions po;
  po.with_memory = false;
  po.keep_op_table = true;
  auto dispatch_s = [&](const JobSpec& j) {
    for (const PricedOp& op : project_performance(j, po).chunks[0].ops) {
      if (op.op.name == "moe.dispatch") return op.time_s;
    }
    ADD_FAILURE() << "no moe.dispatch";
    return 0.0;
  };
  const double bytes = 4096.0 * 8.0 * (1.0 - miss(256, 32, 8)) * 4096.0 * 2.0;
  EXPECT_NEAR(find_op(build_layer_work(job, 0), "moe.dispatch")->bytes, bytes, 1e-6 * bytes);
  job.runtime.moe_comm_compute_units = 148;
  const double links_s = dispatch_s(job);
  EXPECT_LT(bytes / (148.0 * rate), links_s);
  job.runtime.moe_comm_compute_units = 16;
  EXPECT_GT(bytes / (16.0 * rate), links_s);
  EXPECT_NEAR(dispatch_s(job), bytes / (16.0 * rate), 1e-12);
  job.runtime.moe_dispatch_kernel = MoeDispatchKernel::kHybridEp;
  job.runtime.deepep = false;
  EXPECT_DOUBLE_EQ(dispatch_s(job), links_s);
}

}  // namespace
}  // namespace projector
