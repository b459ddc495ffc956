// The embedding sharding planner (job/recsys_plan.h) against TorchRec's formulas worked by hand:
// the storage reservation, a table-wise shard's cost and storage, the capacity rule that forces
// big Adagrad tables off table-wise, UVM caching when HBM is short, pinned tables, and the
// fallback when nothing fits.
#include "projector/job/recsys_plan.h"

#include <gtest/gtest.h>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;
const std::string kFixtures = std::string(PROJECTOR_TEST_DATA_DIR) + "/torchrec/";

JobSpec load(const std::string& path, std::vector<std::string> set = {},
             const std::string& hw = "a100_40gb") {
  LoadRequest r;
  r.config_path = path;
  r.data_dir = kRepoData;
  r.env = fixed_environment({});
  r.hardware = hw;
  r.set_overrides = std::move(set);
  return load_job(r);
}

// HeuristicalStorageReservation(0.05): 32 GiB x 0.95 - 6 x 4 B x dense params - 20 x 8 B x the
// ids of one local batch (26 tables, pooling 1).
TEST(RecsysPlanner, StorageReservation) {
  const JobSpec job = load(kFixtures + "readme_dot_adagrad_lbs2048.yaml");
  const double dense = static_cast<double>(recsys_params(job.model.recommendation).dense());
  const double expected = 32.0 * kGiB * 0.95 - 6.0 * 4.0 * dense - 20.0 * 8.0 * 26.0 * 2048.0;
  EXPECT_NEAR(planner_rank_budget_bytes(job), expected, 1.0);
  EXPECT_NEAR(job.parallel.embedding_plan.rank_budget_bytes, expected, 1.0);
}

// A table-wise shard, TorchRec's _get_tw_sharding_perf with world 8, batch 2048, dim 128, fp32:
// fwd compute (ids 8 B + rows + outputs) / 897 GiB/s, fwd comms outputs / 600 GiB/s, bwd compute
// twice the forward. Storage: the rows with one fp32 Adagrad sum per element, ids and outputs.
TEST(RecsysPlanner, TableWiseShardByHand) {
  const JobSpec job = load(kFixtures + "readme_dot_adagrad_lbs2048.yaml");
  const EmbeddingTableSpec& t = job.model.recommendation.tables[1];  // 39060 rows
  const PlannerShardEstimate e = planner_shard_estimate(
      job, t, EmbeddingSharding::kTableWise, EmbeddingPlacement::kHbm, {0, t.num_embeddings, 128});
  const double inputs = 2048.0 * 8;  // pooling 1, world 8
  const double read = inputs * 8.0, rows = inputs * 128 * 4.0, out = inputs * 128 * 4.0;
  EXPECT_NEAR(e.fwd_compute_s, (read + rows + out) / (897.0 * kGiB), 1e-12);
  EXPECT_NEAR(e.fwd_comms_s, out / (600.0 * kGiB), 1e-12);
  EXPECT_NEAR(e.bwd_compute_s, 2.0 * e.fwd_compute_s, 1e-12);
  EXPECT_NEAR(e.hbm_bytes, 39060.0 * 128 * 4 * 2 + read + inputs * 128 * 4, 1.0);
}

// 40 M rows x 128 x fp32 with a per-element Adagrad sum is 41 GB: more than a rank's budget, so
// the big tables are split; with SGD (20.5 GB) they fit one rank. Every rank stays in budget.
TEST(RecsysPlanner, CapacityDecidesTheBigTables) {
  for (const char* f : {"readme_dot_adagrad_lbs2048", "readme_dot_sgd_lbs256"}) {
    SCOPED_TRACE(f);
    const JobSpec job = load(kFixtures + f + ".yaml");
    const EmbeddingPlan& plan = job.parallel.embedding_plan;
    ASSERT_TRUE(plan.planned);
    const bool adagrad = job.runtime.recsys.embedding_optimizer == RecsysOptimizer::kAdagrad;
    std::vector<double> rank_bytes(8, 0.0);
    for (std::size_t t = 0; t < plan.tables.size(); ++t) {
      const TablePlan& tp = plan.tables[t];
      const EmbeddingTableSpec& spec = job.model.recommendation.tables[t];
      EXPECT_EQ(tp.placement, EmbeddingPlacement::kHbm);
      if (spec.num_embeddings == 40000000 && adagrad) {
        EXPECT_NE(tp.sharding, EmbeddingSharding::kTableWise) << spec.name;
        EXPECT_NE(tp.sharding, EmbeddingSharding::kDataParallel) << spec.name;
      }
      for (const EmbeddingShard& s : tp.shards) {
        const PlannerShardEstimate e =
            planner_shard_estimate(job, spec, tp.sharding, tp.placement, s);
        rank_bytes[static_cast<std::size_t>(s.rank)] += e.hbm_bytes;
      }
    }
    for (double b : rank_bytes) EXPECT_LE(b, plan.rank_budget_bytes);
  }
}

// With a small HBM cap the largest tables move to host memory behind an HBM row cache.
TEST(RecsysPlanner, UvmCachingWhenHbmIsShort) {
  const JobSpec job =
      load(kFixtures + "readme_dot_adagrad_lbs2048.yaml", {"planner_hbm_cap_gib=12"});
  const EmbeddingPlan& plan = job.parallel.embedding_plan;
  ASSERT_TRUE(plan.planned);
  int uvm = 0;
  for (const TablePlan& tp : plan.tables) uvm += tp.placement != EmbeddingPlacement::kHbm;
  EXPECT_GT(uvm, 0);
}

// A stated sharding is kept; a plan that cannot fit is still returned, flagged.
TEST(RecsysPlanner, PinnedAndUnplaceable) {
  const JobSpec rw =
      load(kFixtures + "readme_dot_sgd_lbs256.yaml", {"embedding_sharding=row_wise"});
  for (const TablePlan& tp : rw.parallel.embedding_plan.tables) {
    EXPECT_EQ(tp.sharding, EmbeddingSharding::kRowWise);
    ASSERT_EQ(tp.shards.size(), 8u);
  }
  EXPECT_EQ(rw.parallel.embedding_plan.tables[0].shards[0].rows, 5000000);  // 40 M / 8
  const JobSpec dp =
      load(kFixtures + "readme_dot_sgd_lbs256.yaml", {"embedding_sharding=data_parallel"});
  EXPECT_FALSE(dp.parallel.embedding_plan.planned);  // 104.5 GB on every rank
  EXPECT_NE(describe_plan(dp).find("data_parallel (hbm, stated) x 26"), std::string::npos)
      << describe_plan(dp);
}

}  // namespace
}  // namespace projector
