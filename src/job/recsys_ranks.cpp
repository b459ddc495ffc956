// Per-rank embedding load of a recommendation job (model/recsys_ranks.h).
#include "projector/job/recsys_ranks.h"

#include <algorithm>
#include <set>
#include <utility>

#include "projector/job/spec.h"

namespace projector {
namespace {

constexpr double kPooledBytes = 4.0;  // pooled embeddings leave the lookup kernel in fp32
constexpr double kLengthBytes = 4.0;  // KJT lengths are int32

struct Step {
  double b = 0.0;   // local batch
  double bg = 0.0;  // global batch
  int world = 1;
  int local = 1;
  double id_bytes = 8.0;
};

// Lookups, gathered bytes and output rows of one shard; its placement's share from host memory.
void add_shard_work(const JobSpec& job, const EmbeddingTableSpec& t, const TablePlan& tp,
                    const EmbeddingShard& sh, const Step& s, RecsysRankLoad& r) {
  const double rows_share =
      t.num_embeddings > 0 ? static_cast<double>(sh.rows) / t.num_embeddings : 0.0;
  double lookups = 0.0;
  double out_rows = 0.0;
  switch (tp.sharding) {
    case EmbeddingSharding::kDataParallel:
      lookups = s.b * t.pooling_factor;
      out_rows = s.b;
      break;
    case EmbeddingSharding::kAuto:
    case EmbeddingSharding::kTableWise:
    case EmbeddingSharding::kColumnWise:
      lookups = s.bg * t.pooling_factor;
      out_rows = s.bg;
      break;
    case EmbeddingSharding::kRowWise:
    case EmbeddingSharding::kTableRowWise:
      lookups = s.bg * t.pooling_factor * rows_share;
      out_rows = sh.rows > 0 ? s.bg : 0.0;
      break;
  }
  const double row_bytes = sh.cols * bytes_per_element(t.dtype);
  r.lookups += lookups;
  r.gather_bytes += lookups * row_bytes;
  const double hit = job.runtime.recsys.uvm_cache_hit_rate;
  if (tp.placement == EmbeddingPlacement::kUvm) r.host_gather_bytes += lookups * row_bytes;
  if (tp.placement == EmbeddingPlacement::kUvmCaching) {
    r.host_gather_bytes += (1.0 - hit) * lookups * row_bytes;
  }
  r.output_bytes += out_rows * sh.cols * kPooledBytes;
  r.state_bytes_per_row +=
      lookups * optimizer_state_bytes_per_row(job.runtime.recsys.embedding_optimizer, sh.cols);
}

void add_shard_storage(const JobSpec& job, const EmbeddingTableSpec& t, const TablePlan& tp,
                       const EmbeddingShard& sh, RecsysRankLoad& r) {
  const double tensor = static_cast<double>(sh.rows) * sh.cols * bytes_per_element(t.dtype);
  const double state =
      sh.rows * optimizer_state_bytes_per_row(job.runtime.recsys.embedding_optimizer, sh.cols);
  const double ratio = job.runtime.recsys.planner.uvm_caching_ratio;
  switch (tp.placement) {
    case EmbeddingPlacement::kHbm:
      r.table_hbm_bytes += tensor;
      r.state_hbm_bytes += state;
      if (tp.sharding == EmbeddingSharding::kDataParallel) r.dp_table_bytes += tensor;
      break;
    case EmbeddingPlacement::kUvmCaching:
      r.table_hbm_bytes += tensor * ratio;  // the row cache
      r.cache_aux_bytes += static_cast<double>(sh.rows) * (4.0 + 16.0 * ratio);
      r.table_host_bytes += tensor;
      r.state_host_bytes += state;
      break;
    case EmbeddingPlacement::kUvm:
      r.table_host_bytes += tensor;
      r.state_host_bytes += state;
      break;
  }
}

// Forward communication of one table: pooled rows to the samples' ranks, partial sums reduced.
void add_table_comm(const EmbeddingTableSpec& t, const TablePlan& tp, const Step& s,
                    std::vector<RecsysRankLoad>& ranks) {
  const double ids = s.b * t.pooling_factor * s.id_bytes;
  const double lengths = s.b * kLengthBytes;
  switch (tp.sharding) {
    case EmbeddingSharding::kDataParallel:
      return;  // looked up locally
    case EmbeddingSharding::kAuto:
    case EmbeddingSharding::kTableWise:
    case EmbeddingSharding::kColumnWise:
      for (const EmbeddingShard& sh : tp.shards) {
        RecsysRankLoad& owner = ranks[static_cast<std::size_t>(sh.rank)];
        owner.a2a_send_bytes += s.bg * sh.cols * kPooledBytes;
        owner.input_recv_bytes += s.world * (ids + lengths);
        for (RecsysRankLoad& r : ranks) {
          r.a2a_recv_bytes += s.b * sh.cols * kPooledBytes;
          r.input_send_bytes += ids + lengths;
        }
      }
      return;
    case EmbeddingSharding::kRowWise:
      for (RecsysRankLoad& r : ranks) {
        r.rs_bytes += s.bg * t.embedding_dim * kPooledBytes;
        // Ids go to the rank owning their row block; every rank gets every sample's length.
        r.input_send_bytes += ids + s.world * lengths;
        r.input_recv_bytes += ids + s.world * lengths;
      }
      return;
    case EmbeddingSharding::kTableRowWise: {
      const double nodes = static_cast<double>(s.world) / s.local;
      for (const EmbeddingShard& sh : tp.shards) {
        RecsysRankLoad& r = ranks[static_cast<std::size_t>(sh.rank)];
        r.twrw_rs_bytes += s.bg * t.embedding_dim * kPooledBytes;
        r.twrw_a2a_bytes += nodes > 1.0 ? s.bg / s.local * t.embedding_dim * kPooledBytes : 0.0;
        r.input_recv_bytes += s.bg * t.pooling_factor * s.id_bytes / s.local + s.bg * lengths / s.b;
      }
      for (RecsysRankLoad& r : ranks) r.input_send_bytes += ids + s.local * lengths;
      return;
    }
  }
}

}  // namespace

std::vector<RecsysRankLoad> recsys_rank_loads(const JobSpec& job) {
  const RecommendationSpec& m = job.model.recommendation;
  const EmbeddingPlan& plan = job.parallel.embedding_plan;
  Step s;
  s.world = static_cast<int>(std::max<std::int64_t>(1, job.cluster.world_size()));
  s.local = std::min(std::max(1, job.cluster.gpus_per_node), s.world);
  s.b = job.runtime.micro_batch_size;
  s.bg = s.b * s.world;
  s.id_bytes = job.runtime.recsys.index_bytes;
  std::vector<RecsysRankLoad> ranks(static_cast<std::size_t>(s.world));
  for (int i = 0; i < s.world; ++i) ranks[static_cast<std::size_t>(i)].rank = i;
  std::vector<std::set<std::pair<int, int>>> groups(ranks.size());
  for (std::size_t ti = 0; ti < m.tables.size() && ti < plan.tables.size(); ++ti) {
    const EmbeddingTableSpec& t = m.tables[ti];
    const TablePlan& tp = plan.tables[ti];
    for (const EmbeddingShard& sh : tp.shards) {
      if (sh.rank < 0 || sh.rank >= s.world) continue;
      RecsysRankLoad& r = ranks[static_cast<std::size_t>(sh.rank)];
      ++r.shards;
      groups[static_cast<std::size_t>(sh.rank)].insert(
          {static_cast<int>(tp.sharding), static_cast<int>(tp.placement)});
      add_shard_storage(job, t, tp, sh, r);
      add_shard_work(job, t, tp, sh, s, r);
    }
    add_table_comm(t, tp, s, ranks);
  }
  for (RecsysRankLoad& r : ranks) {
    r.tbe_groups = static_cast<int>(groups[static_cast<std::size_t>(r.rank)].size());
    r.state_bytes_per_row = r.lookups > 0.0 ? r.state_bytes_per_row / r.lookups : 0.0;
  }
  return ranks;
}

EmbeddingTraffic embedding_traffic(const JobSpec& job, const RecsysRankLoad& r) {
  const double ids = r.lookups * job.runtime.recsys.index_bytes;
  const double hbm_rows = r.gather_bytes - r.host_gather_bytes;
  const double in_hbm = r.gather_bytes > 0.0 ? hbm_rows / r.gather_bytes : 0.0;
  EmbeddingTraffic t;
  if (r.lookups <= 0.0) return t;
  t.fwd_bytes = hbm_rows + ids + r.output_bytes;
  t.bwd_bytes = r.output_bytes + 4.0 * 2.0 * ids + 2.0 * hbm_rows +
                2.0 * r.state_bytes_per_row * r.lookups * in_hbm;
  return t;
}

double recsys_input_batch_bytes(const JobSpec& job) {
  const RecommendationSpec& m = job.model.recommendation;
  double per_sample = (m.dense_features + 1.0) * 4.0;  // dense features and the label
  for (const EmbeddingTableSpec& t : m.tables) {
    per_sample += t.pooling_factor * job.runtime.recsys.index_bytes + kLengthBytes;
  }
  return per_sample * job.runtime.micro_batch_size;
}

}  // namespace projector
