// The job model's computed sizes and invariants (job/spec.h).
#include "projector/job/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "projector/model/bounds.h"
#include "projector/model/family.h"
#include "projector/util/error.h"

namespace projector {
namespace {

[[noreturn]] void malformed(const JobSpec& job, const std::string& message) {
  throw InputError({job.source, 0, 0}, "job", "malformed job: " + message);
}

void check_sizes(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const RuntimeSpec& rt = job.runtime;
  const ClusterSpec& cl = job.cluster;
  const std::pair<const char*, std::int64_t> sizes[] = {{"tp", p.tp},
                                                        {"pp", p.pp},
                                                        {"vpp", p.vpp},
                                                        {"cp", p.cp},
                                                        {"ep", p.ep},
                                                        {"etp", p.etp},
                                                        {"dp", job.dp()},
                                                        {"expert_dp", job.expert_dp()},
                                                        {"micro_batch_size", rt.micro_batch_size},
                                                        {"global_batch_size", rt.global_batch_size},
                                                        {"seq_length", rt.seq_length},
                                                        {"nodes", cl.nodes},
                                                        {"gpus_per_node", cl.gpus_per_node}};
  for (const auto& [name, v] : sizes) {
    if (v < 1) malformed(job, fmt::format("{} is {} (must be at least 1)", name, v));
  }
}

// a x b x c x d, or -1 past kMaxWorldSize (no overflow for any sizes).
std::int64_t group_product(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  std::optional<std::int64_t> v = bounded_product(a, b, kMaxWorldSize);
  if (v) v = bounded_product(*v, c, kMaxWorldSize);
  if (v) v = bounded_product(*v, d, kMaxWorldSize);
  return v.value_or(-1);
}

void check_groups(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const std::int64_t world = job.cluster.world_size();
  const std::int64_t dense = group_product(p.tp, p.pp, p.cp, job.dp());
  if (dense != world) {
    malformed(job, fmt::format("TP x PP x CP x DP = {} x {} x {} x {} = {} but the world is {}",
                               p.tp, p.pp, p.cp, job.dp(), dense, world));
  }
  const std::int64_t expert = group_product(p.etp, p.ep, p.pp, job.expert_dp());
  // Only a model with experts has expert groups (scanned only when the product differs).
  if (expert != world && std::any_of(job.model.layers.begin(), job.model.layers.end(),
                                     [](const LayerSpec& l) { return l.is_moe; })) {
    malformed(job, fmt::format("ETP x EP x PP x EDP = {} x {} x {} x {} = {} but the world is {}",
                               p.etp, p.ep, p.pp, job.expert_dp(), expert, world));
  }
  const RuntimeSpec& rt = job.runtime;
  const std::int64_t per_step = static_cast<std::int64_t>(rt.micro_batch_size) * job.dp();
  if (rt.global_batch_size % per_step != 0) {
    malformed(job, fmt::format("global batch {} is not a multiple of MBS x DP = {}",
                               rt.global_batch_size, per_step));
  }
  const int rounds = rt.accumulation_rounds;
  if (rounds < 1 || job.num_microbatches() % rounds != 0) {
    malformed(job, fmt::format("{} microbatches do not split into {} accumulation rounds",
                               job.num_microbatches(), rounds));
  }
  if (p.dp_replicate < 1 || (job.dp() * p.cp) % p.dp_replicate != 0) {
    malformed(job, fmt::format("HSDP replicate degree {} does not divide DP x CP = {}",
                               p.dp_replicate, job.dp() * p.cp));
  }
}

void check_stages(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const std::size_t count = static_cast<std::size_t>(p.pp) * static_cast<std::size_t>(p.vpp);
  if (p.stages.size() != count) {
    malformed(job, fmt::format("{} virtual stages but PP x VPP = {}", p.stages.size(), count));
  }
  int next = 0;
  int mtp = 0;
  for (std::size_t z = 0; z < count; ++z) {
    const VirtualStage& s = p.stages[z];
    if (s.first_layer != next || s.num_layers < 0) {
      malformed(job, fmt::format("virtual stage {} starts at layer {} (expected {})", z,
                                 s.first_layer, next));
    }
    next += s.num_layers;
    mtp += s.mtp_layers;
  }
  if (next != job.model.num_layers()) {
    malformed(job, fmt::format("the stages hold {} layers, the model has {}", next,
                               job.model.num_layers()));
  }
  if (mtp != job.model.mtp_num_layers) {
    malformed(job, fmt::format("the stages hold {} MTP layers, the model has {}", mtp,
                               job.model.mtp_num_layers));
  }
}

void check_runtime(const JobSpec& job) {
  const int vpp = job.parallel.vpp;
  const ScheduleKind s = job.runtime.schedule;
  const bool ok =
      s == ScheduleKind::kAuto ||
      (is_v_shape(s) ? vpp == 2 : (s == ScheduleKind::kInterleaved ? vpp >= 2 : vpp == 1));
  if (!ok) malformed(job, fmt::format("schedule {} with VPP {}", to_string(s), vpp));
  const RecomputeSpec& rc = job.runtime.recompute;
  if (rc.granularity == RecomputeGranularity::kSelective && rc.modules.empty()) {
    malformed(job, "selective recompute without modules");
  }
}

// The embedding plan covers every table with shards on ranks of the world; the dense part runs
// data-parallel (no TP / PP / CP).
void check_recommendation(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  if (p.tp != 1 || p.pp != 1 || p.cp != 1) {
    malformed(job, "a recommendation model runs with TP = PP = CP = 1");
  }
  const RecommendationSpec& m = job.model.recommendation;
  if (p.embedding_plan.tables.size() != m.tables.size()) {
    malformed(job, fmt::format("the embedding plan places {} tables, the model has {}",
                               p.embedding_plan.tables.size(), m.tables.size()));
  }
  for (std::size_t t = 0; t < m.tables.size(); ++t) {
    const TablePlan& tp = p.embedding_plan.tables[t];
    std::int64_t rows = 0;
    for (const EmbeddingShard& s : tp.shards) {
      if (s.rank < 0 || s.rank >= job.cluster.world_size()) {
        malformed(job, fmt::format("table {} has a shard on rank {}", m.tables[t].name, s.rank));
      }
      if (tp.sharding == EmbeddingSharding::kRowWise ||
          tp.sharding == EmbeddingSharding::kTableRowWise) {
        rows += s.rows;
      }
    }
    if (tp.shards.empty() || (rows != 0 && rows != m.tables[t].num_embeddings)) {
      malformed(job, fmt::format("table {} is not fully placed", m.tables[t].name));
    }
  }
}

}  // namespace

void check_job_invariants(const JobSpec& job) {
  require_modelled(job.model, ProjectionStage::kMemory);
  check_sizes(job);
  if (job.cluster.world_size() > kMaxWorldSize) {
    malformed(job,
              fmt::format("world size {} exceeds {}", job.cluster.world_size(), kMaxWorldSize));
  }
  check_groups(job);
  check_stages(job);
  check_runtime(job);
  // The model's ranges are the job builder's check (once per job, naming the input's key); the
  // batches and the schedule's size change with every re-layout (the sweep), so they are checked
  // here too.
  if (const auto v = check_runtime_bounds(job.runtime, job.parallel, job.num_microbatches())) {
    malformed(job, fmt::format("{}: {}", v->key, v->message));
  }
  if (job.model.family == ModelFamily::kRecommendation) check_recommendation(job);
}

namespace {
// Expected maximum of n independent standard normals, Blom's approximation
// Phi^-1((n - 0.375) / (n + 0.25)), Phi^-1 by bisection on erfc.
double expected_max_normal(int n) {
  if (n <= 1) return 0.0;
  const double p = (n - 0.375) / (n + 0.25);
  double lo = 0.0, hi = 10.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}
}  // namespace

double moe_rank_load_factor(const JobSpec& job, const MoeSpec& moe) {
  const int ep = job.parallel.ep;
  const double cv = job.runtime.moe_expert_load_cv;
  // Hash routing draws each token's experts from a uniform token-id table: balanced by
  // construction whatever a learned router's skew.
  if (ep <= 1 || cv <= 0.0 || moe.capacity_factor > 0.0 || moe.num_experts < ep || moe.topk <= 0 ||
      moe.hash_routing) {
    return 1.0;
  }
  const int local_experts = moe.num_experts / ep;
  const double factor =
      1.0 + cv / std::sqrt(static_cast<double>(local_experts)) * expected_max_normal(ep);
  const double cap = static_cast<double>(ep) * std::min(moe.topk, local_experts) / moe.topk;
  return std::min(factor, cap);
}

}  // namespace projector
