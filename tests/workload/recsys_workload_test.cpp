// The workload of a recommendation step: its GEMM FLOPs equal the accounting's (a cross-module
// invariant), and each sharding type brings the collectives TorchRec runs for it.
#include <gtest/gtest.h>

#include "projector/job/recsys_ranks.h"
#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"
#include "projector/workload/workload.h"
#include "support/recsys_jobs.h"

namespace projector {
namespace {

std::vector<const Op*> ops(const Workload& wl) {
  std::vector<const Op*> out;
  for (const LayerWork& lw : wl.ranks.at(0).chunks.at(0).blocks) {
    for (const Op& op : lw.ops) out.push_back(&op);
  }
  return out;
}

const Op* find(const Workload& wl, const std::string& name) {
  for (const Op* op : ops(wl)) {
    if (op->name == name) return op;
  }
  return nullptr;
}

TEST(RecsysWorkload, GemmFlopsMatchAccounting) {
  for (const char* f : {"readme_dot_sgd_lbs256", "readme_dcnv2_adagrad_lbs2048"}) {
    SCOPED_TRACE(f);
    const JobSpec job = testing::load_recsys(f);
    const Workload wl = build_workload(job);
    double fwd = 0.0, all = 0.0;
    for (const Op* op : ops(wl)) {
      if (op->kind != OpKind::kGemm) continue;
      all += op->flops;
      if (op->phase == WorkPhase::kF) fwd += op->flops;
    }
    const double per_sample = recsys_forward_flops_per_sample(job.model.recommendation);
    EXPECT_NEAR(fwd, per_sample * job.runtime.micro_batch_size, 1e-6 * fwd);
    EXPECT_NEAR(all, 3.0 * fwd, 1e-6 * all);  // dgrad and wgrad (or both operand grads)
  }
}

// Row-wise: the pooled rows are reduce-scattered in forward and all-gathered in backward; table-
// wise: all-to-all both ways; data-parallel: no output dist, the table joins the dense all-reduce.
TEST(RecsysWorkload, ShardingBringsItsCollectives) {
  const Workload rw = build_workload(
      testing::load_recsys("readme_dot_sgd_lbs256", {"embedding_sharding=row_wise"}));
  const Op* rs = find(rw, "embedding.pooled_reduce_scatter");
  ASSERT_NE(rs, nullptr);
  EXPECT_EQ(rs->collective, CollectiveKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(rs->bytes, 2048.0 * 128 * 4 * 26);  // global batch x D x fp32 per table
  const Op* ag = find(rw, "embedding.pooled_reduce_scatter.bwd");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->collective, CollectiveKind::kAllGather);
  EXPECT_EQ(find(rw, "embedding.pooled_all_to_all"), nullptr);

  const Workload tw = build_workload(
      testing::load_recsys("readme_dot_sgd_lbs256", {"embedding_sharding=table_wise"}));
  ASSERT_NE(find(tw, "embedding.pooled_all_to_all"), nullptr);
  ASSERT_NE(find(tw, "embedding.pooled_all_to_all.bwd"), nullptr);
  EXPECT_EQ(find(tw, "embedding.pooled_reduce_scatter"), nullptr);
  EXPECT_GT(tw.ranks[0].iteration.input_dist.bytes, 0.0);

  const JobSpec dp_job =
      testing::load_recsys("unit_test_random", {"embedding_sharding=data_parallel"});
  const Workload dp = build_workload(dp_job);
  EXPECT_EQ(find(dp, "embedding.pooled_all_to_all"), nullptr);
  EXPECT_EQ(find(dp, "embedding.pooled_reduce_scatter"), nullptr);
  ASSERT_EQ(dp.ranks[0].iteration.grad_sync.size(), 1u);
  const double dense = recsys_params(dp_job.model.recommendation).dense();
  const double tables = recsys_params(dp_job.model.recommendation).embedding;
  EXPECT_DOUBLE_EQ(dp.ranks[0].iteration.grad_sync[0].bytes, 4.0 * (dense + tables));
  EXPECT_DOUBLE_EQ(dp.ranks[0].iteration.input_dist.bytes, 0.0);  // looked up locally
}

// Table-row-wise over two nodes: an intra-node reduce-scatter (8 ranks, stride 1), then a
// cross-node all-to-all (2 ranks, stride 8).
TEST(RecsysWorkload, TableRowWiseIsHierarchical) {
  const Workload wl = build_workload(testing::load_recsys(
      "readme_dot_sgd_lbs256", {"embedding_sharding=table_row_wise"}, "a100_40gb", 2));
  const Op* rs = find(wl, "embedding.twrw_reduce_scatter");
  const Op* a2a = find(wl, "embedding.twrw_all_to_all");
  ASSERT_NE(rs, nullptr);
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(rs->group_size, 8);
  EXPECT_EQ(rs->group_stride, 1);
  EXPECT_EQ(a2a->group_size, 2);
  EXPECT_EQ(a2a->group_stride, 8);
}

// A table-wise shard gathers every global sample's rows: B_global x pooling rows of D x 4 B.
TEST(RecsysWorkload, TableWiseRowsGathered) {
  const JobSpec job = testing::load_recsys("unit_test_random", {"embedding_sharding=table_wise"});
  const std::vector<RecsysRankLoad> loads = recsys_rank_loads(job);
  double rows = 0.0;
  int shards = 0;
  for (const RecsysRankLoad& r : loads) {
    rows += r.lookups;
    shards += r.shards;
  }
  const double global = static_cast<double>(job.runtime.global_batch_size);
  EXPECT_EQ(shards, 26);
  EXPECT_DOUBLE_EQ(rows, 26 * global);
  for (const RecsysRankLoad& r : loads) EXPECT_DOUBLE_EQ(r.gather_bytes, r.lookups * 8 * 4.0);
}

}  // namespace
}  // namespace projector
