// Per-rank memory of recommendation jobs: the shards the plan places add up to the model's tables
// (accounting), the fused optimizer's state follows the optimizer, host memory takes what UVM
// keeps there, and the verdicts of the README runs (they ran on 40 GB A100s) and of an
// unplaceable plan.
#include <gtest/gtest.h>

#include "projector/job/recsys_ranks.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/recsys_accounting.h"
#include "projector/report/memory_report.h"
#include "support/recsys_jobs.h"

namespace projector {
namespace {

double all_ranks(const std::vector<RecsysRankLoad>& loads, double RecsysRankLoad::*f) {
  double s = 0.0;
  for (const RecsysRankLoad& r : loads) s += r.*f;
  return s;
}

TEST(RecsysMemory, ShardsAddUpToTheTables) {
  for (const char* f : {"readme_dot_sgd_lbs256", "readme_dcnv2_adagrad_lbs2048"}) {
    SCOPED_TRACE(f);
    const JobSpec job = testing::load_recsys(f);
    const double tables = 4.0 * recsys_params(job.model.recommendation).embedding;
    const std::vector<RecsysRankLoad> loads = recsys_rank_loads(job);
    EXPECT_NEAR(all_ranks(loads, &RecsysRankLoad::table_hbm_bytes), tables, 1.0);
    const bool adagrad = job.runtime.recsys.embedding_optimizer == RecsysOptimizer::kAdagrad;
    EXPECT_NEAR(all_ranks(loads, &RecsysRankLoad::state_hbm_bytes), adagrad ? tables : 0.0, 1.0);
    const MemoryReport rep = project_memory(job);
    ASSERT_TRUE(rep.has_recsys);
    EXPECT_EQ(rep.recsys.ranks.size(), 8u);
    double reported = 0.0;
    for (const RecsysRankMemory& r : rep.recsys.ranks) reported += r.table_bytes;
    EXPECT_NEAR(reported, tables, 1.0);
    EXPECT_EQ(rep.verdict, MemoryVerdict::kFits);  // these runs ran on A100 40GB
    // The heaviest rank first; its total is the peak.
    EXPECT_DOUBLE_EQ(rep.peak_point_bytes, rep.recsys.ranks.front().total_bytes);
  }
}

// Row-wise Adagrad keeps one fp32 sum per row: state = rows x 4 B (Primus' DLRM-v4 default).
TEST(RecsysMemory, RowWiseAdagradState) {
  const JobSpec job = testing::load_recsys("primus_dlrm_v4_hstu", {}, "mi300x");
  std::int64_t rows = 0;
  for (const EmbeddingTableSpec& t : job.model.recommendation.tables) rows += t.num_embeddings;
  EXPECT_NEAR(all_ranks(recsys_rank_loads(job), &RecsysRankLoad::state_hbm_bytes), rows * 4.0, 1.0);
}

// Tables in host memory behind the HBM row cache: the cache (the planner's caching ratio) and its
// bookkeeping in HBM, the rows and their state in host memory.
TEST(RecsysMemory, UvmKeepsRowsOnTheHost) {
  const JobSpec job = testing::load_recsys(
      "readme_dot_adagrad_lbs2048", {"embedding_sharding=table_wise", "planner_hbm_cap_gib=8"});
  double host = 0.0;
  for (const RecsysRankLoad& r : recsys_rank_loads(job)) host += r.table_host_bytes;
  EXPECT_GT(host, 0.0);
  const MemoryReport rep = project_memory(job);
  EXPECT_GT(rep.recsys.host_bytes_max, 0.0);
}

// Every table on every rank: 104.5 GB does not fit 40 GB; the planner would refuse it.
TEST(RecsysMemory, DataParallelTablesDoNotFit) {
  const JobSpec job =
      testing::load_recsys("readme_dot_sgd_lbs256", {"embedding_sharding=data_parallel"});
  const MemoryReport rep = project_memory(job);
  EXPECT_EQ(rep.verdict, MemoryVerdict::kOom);
  EXPECT_FALSE(rep.recsys.planned);
  ASSERT_FALSE(rep.notes.empty());
  EXPECT_NE(rep.notes.front().find("PlannerError"), std::string::npos);
}

// A planner cap below what TorchRec reserves for the dense part and the inputs leaves a negative
// budget: the report says no memory is left for tables rather than printing a negative size
// (found by the mutation fuzzer, seed 23).
TEST(RecsysMemory, NoBudgetLeftForTables) {
  const JobSpec job = testing::load_recsys("readme_dot_sgd_lbs256", {"planner_hbm_cap_gib=0.01"});
  ASSERT_LT(job.parallel.embedding_plan.rank_budget_bytes, 0.0);
  const MemoryReport rep = project_memory(job);
  EXPECT_FALSE(rep.recsys.planned);
  ASSERT_FALSE(rep.notes.empty());
  EXPECT_NE(rep.notes.front().find("no memory left for tables"), std::string::npos);
  const std::string text = memory_summary_text(job, rep);
  EXPECT_NE(text.find("Planner budget for tables: none"), std::string::npos);
  EXPECT_EQ(text.find("-0."), std::string::npos);
}

}  // namespace
}  // namespace projector
