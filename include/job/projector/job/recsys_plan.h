// The recommendation family in the job builder: what a recommendation config states beyond its
// model (RecsysDraft), how the builder resolves it against the framework profile, and the
// embedding sharding plan: stated per table, or chosen the way TorchRec's EmbeddingShardingPlanner
// chooses it (torchrec/distributed/planner: enumerate every sharding type and compute kernel per
// table, price each shard with the planner's own cost constants, reserve storage heuristically,
// propose greedily and uniformly, place shards with the greedy-by-cost partitioner, keep the plan
// whose costliest rank is cheapest). The plan is a pure function of the JobSpec, so the sweep can
// re-plan each candidate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projector/job/profile.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

// What a recommendation config states; unset values come from the framework profile.
struct RecsysDraft {
  std::optional<RecsysOptimizer> embedding_optimizer;
  std::optional<RecsysOptimizer> dense_optimizer;
  std::optional<Dtype> dense_dtype;
  std::optional<bool> pipelined_input;
  std::optional<double> planner_hbm_cap_bytes;
  std::optional<double> planner_reservation;
  bool primus_v4 = false;  // the config uses Primus' DLRM-v4 keys: the v4_* profile values apply
};

// Fills job.runtime.recsys from the draft and the profile (each profile value used is appended to
// `defaults` with the profile's name) and plans the embedding tables (job.parallel.embedding_plan).
// Throws InputError (key "model") when the profile lacks a value the family needs.
void resolve_recsys(const RecsysDraft& draft, const FrameworkProfile& profile, JobSpec& job,
                    std::vector<AppliedDefault>& defaults);

// Per-shard cost and storage the planner assigns (exposed for tests and the plan report).
struct PlannerShardEstimate {
  double fwd_compute_s = 0.0, fwd_comms_s = 0.0, bwd_compute_s = 0.0, bwd_comms_s = 0.0;
  double hbm_bytes = 0.0;
  double ddr_bytes = 0.0;
  double total_s() const { return fwd_compute_s + fwd_comms_s + bwd_compute_s + bwd_comms_s; }
};
PlannerShardEstimate planner_shard_estimate(const JobSpec& job, const EmbeddingTableSpec& table,
                                            EmbeddingSharding sharding,
                                            EmbeddingPlacement placement,
                                            const EmbeddingShard& shard);

// HBM per rank the planner lets the tables use: hbm_cap x (1 - reservation) - 6 x dense params -
// 20 x the input KJT of one batch (HeuristicalStorageReservation).
double planner_rank_budget_bytes(const JobSpec& job);

// The plan: pinned tables keep their sharding, the others are planned. When no proposal fits the
// planner's budget (TorchRec raises a PlannerError), the plan with the smallest largest-rank
// storage is returned with `planned` false, so the memory projection can report it out of memory.
EmbeddingPlan plan_embeddings(const JobSpec& job);

// One line per distinct choice, e.g. "row_wise (hbm) x 5: t_cat_0, t_cat_9, ...".
std::string describe_plan(const JobSpec& job);

}  // namespace projector
