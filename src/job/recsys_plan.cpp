// The embedding sharding planner (job/recsys_plan.h): a reproduction of TorchRec's
// EmbeddingShardingPlanner as dlrm_main.py builds it (TR2 in docs/references.md). Its cost and
// storage formulas are TorchRec's own (shard_estimators.py), with its constants taken from the
// framework profile; the projection itself prices the chosen plan with projector's cost models.
#include "projector/job/recsys_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kDdrCapBytes = 128.0 * kGiB;  // TR2: DDR_CAP 128 GiB per device
constexpr int kMaxGridProposals = 10000;       // TR2: GridSearchProposer MAX_PROPOSALS

struct Option {
  int table = 0;
  EmbeddingSharding sharding = EmbeddingSharding::kTableWise;
  EmbeddingPlacement placement = EmbeddingPlacement::kHbm;
  std::vector<EmbeddingShard> shards;  // ranks filled by the partitioner
  std::vector<PlannerShardEstimate> est;
  double sum_s = 0.0, max_s = 0.0, hbm_sum = 0.0, hbm_max = 0.0, ddr_sum = 0.0, ddr_max = 0.0;
};

int world_of(const JobSpec& job) {
  return static_cast<int>(job.cluster.world_size());
}
int local_of(const JobSpec& job) {
  return std::min(job.cluster.gpus_per_node, world_of(job));
}

// TR2 _find_base_dim: the smallest divisor of `dim` that is at least `lower`, else `dim`.
int cw_block(int dim, int lower) {
  for (int b = std::max(1, lower); b <= dim; ++b) {
    if (dim % b == 0) return b;
  }
  return dim;
}

std::vector<EmbeddingShard> shard_sizes(const JobSpec& job, const EmbeddingTableSpec& t,
                                        EmbeddingSharding s) {
  const int world = world_of(job);
  const int local = local_of(job);
  std::vector<EmbeddingShard> out;
  auto rows_split = [&](int n) {
    const std::int64_t block = (t.num_embeddings + n - 1) / n;
    for (int i = 0; i < n; ++i) {
      const std::int64_t lo = std::min<std::int64_t>(t.num_embeddings, block * i);
      const std::int64_t hi = std::min<std::int64_t>(t.num_embeddings, lo + block);
      out.push_back({i, hi - lo, t.embedding_dim});
    }
  };
  switch (s) {
    case EmbeddingSharding::kDataParallel:
      for (int i = 0; i < world; ++i) out.push_back({i, t.num_embeddings, t.embedding_dim});
      break;
    case EmbeddingSharding::kAuto:
    case EmbeddingSharding::kTableWise:
      out.push_back({0, t.num_embeddings, t.embedding_dim});
      break;
    case EmbeddingSharding::kColumnWise: {
      const int block = std::min(cw_block(t.embedding_dim, job.runtime.recsys.planner.min_cw_dim),
                                 t.embedding_dim);
      for (int c = 0; c < t.embedding_dim / block; ++c) out.push_back({0, t.num_embeddings, block});
      break;
    }
    case EmbeddingSharding::kRowWise:
      rows_split(world);
      break;
    case EmbeddingSharding::kTableRowWise:
      rows_split(local);
      break;
  }
  return out;
}

double optimizer_multiplier(RecsysOptimizer o, int dim) {
  return dim > 0 ? optimizer_state_bytes_per_row(o, dim) / (4.0 * dim) : 0.0;
}

double device_bw(const PlannerSettings& ps, EmbeddingSharding s, EmbeddingPlacement p) {
  if (s == EmbeddingSharding::kDataParallel) return 0.5 * ps.hbm_bw;  // DENSE kernel
  switch (p) {
    case EmbeddingPlacement::kHbm:
      return ps.hbm_bw;
    case EmbeddingPlacement::kUvm:
      return ps.hbm_to_ddr_bw / 10.0;
    case EmbeddingPlacement::kUvmCaching:
      return (ps.uvm_caching_ratio * ps.hbm_bw + (1.0 - ps.uvm_caching_ratio) * ps.hbm_to_ddr_bw) /
             10.0;
  }
  return ps.hbm_bw;
}

// TR2 BasicCommsBandwidths.get_bw.
double comms_bw(const PlannerSettings& ps, int world, int local, bool all_reduce) {
  if (all_reduce) return ps.inter_node_bw * local;
  return world <= local ? ps.intra_node_bw : ps.inter_node_bw;
}

// Storage: the shard (in HBM, or in host memory with a cache of its rows in HBM), its optimizer
// state, the UVM cache's bookkeeping, and the input / output buffers (PipelineType NONE).
void add_shard_storage(const JobSpec& job, const EmbeddingTableSpec& t, EmbeddingPlacement p,
                       const EmbeddingShard& shard, double io_bytes, PlannerShardEstimate& e) {
  const PlannerSettings& ps = job.runtime.recsys.planner;
  const double tensor = static_cast<double>(shard.rows) * shard.cols * bytes_per_element(t.dtype);
  const double opt = optimizer_multiplier(job.runtime.recsys.embedding_optimizer, t.embedding_dim);
  double hbm_tensor = tensor;
  double aux = 0.0;
  if (p == EmbeddingPlacement::kUvmCaching) {
    hbm_tensor = tensor * ps.uvm_caching_ratio;
    aux = static_cast<double>(shard.rows) * (4.0 + ps.uvm_caching_ratio * 16.0);
    e.ddr_bytes = tensor * (1.0 + opt);
  } else if (p == EmbeddingPlacement::kUvm) {
    hbm_tensor = 0.0;
    e.ddr_bytes = tensor * (1.0 + opt);
  }
  e.hbm_bytes = hbm_tensor * (1.0 + opt) + aux + io_bytes;
}

}  // namespace

PlannerShardEstimate planner_shard_estimate(const JobSpec& job, const EmbeddingTableSpec& t,
                                            EmbeddingSharding s, EmbeddingPlacement p,
                                            const EmbeddingShard& shard) {
  const PlannerSettings& ps = job.runtime.recsys.planner;
  const double w = world_of(job);
  const double l = local_of(job);
  const double b = bytes_per_element(t.dtype);
  const double in_b = 8.0;  // BIGINT_DTYPE
  const double batch = job.runtime.micro_batch_size;
  const double dim = shard.cols;
  const double bw = device_bw(ps, s, p);
  const double outputs = batch;
  PlannerShardEstimate e;
  double input_size = 0.0, output_size = 0.0;
  switch (s) {
    case EmbeddingSharding::kAuto:
    case EmbeddingSharding::kTableWise:
    case EmbeddingSharding::kColumnWise: {
      const double inputs = ps.pooling_factor * batch;
      const double read = std::ceil(inputs * w * in_b);
      const double lookup = inputs * w * std::max(dim, 32.0) * b;
      const double out = outputs * w * dim * b;
      const double penalty = dim >= 128 ? 1.0 : (dim >= 64 ? 1.15 : 1.75);
      const double cbw = comms_bw(ps, static_cast<int>(w), static_cast<int>(l), false);
      e.fwd_compute_s = (read + lookup + out) * penalty / bw;
      e.fwd_comms_s = out / cbw;
      e.bwd_compute_s = e.fwd_compute_s * ps.bwd_compute_multiplier;
      e.bwd_comms_s = out / cbw;
      input_size = read;
      output_size = outputs * w * dim * 4.0;
      break;
    }
    case EmbeddingSharding::kRowWise:
    case EmbeddingSharding::kTableRowWise: {
      const bool twrw = s == EmbeddingSharding::kTableRowWise;
      const double inputs = ps.pooling_factor * batch / (twrw ? l : w);
      const double read = std::ceil(inputs * w * in_b);
      const double lookup = inputs * w * dim * b;
      const double out = outputs * w * dim * b;
      const int group = twrw ? static_cast<int>(l) : static_cast<int>(w);
      const double cbw = comms_bw(ps, group, static_cast<int>(l), false);
      e.fwd_compute_s = (read + lookup + out) / bw;
      e.fwd_comms_s = out / cbw;
      e.bwd_comms_s = out / cbw + out * ps.batched_copy_factor / bw;
      if (twrw && w > l) {
        const double inter = outputs * (w / l) * dim * b;
        const double ibw = comms_bw(ps, static_cast<int>(w / l), 1, false);
        e.fwd_comms_s += inter / ibw;
        e.bwd_comms_s += inter / ibw;
      }
      e.bwd_compute_s = e.fwd_compute_s * ps.bwd_compute_multiplier;
      input_size = shard.rows > 0 ? read : 0.0;
      output_size = shard.rows > 0 ? outputs * w * dim * 4.0 : 0.0;
      break;
    }
    case EmbeddingSharding::kDataParallel: {
      const double inputs = ps.pooling_factor * batch;
      const double read = std::ceil(inputs * in_b);
      const double table_bytes = static_cast<double>(t.num_embeddings) * t.embedding_dim * b;
      e.fwd_compute_s = (read + inputs * dim * b + outputs * dim * b) / bw;
      const double nodes = std::min(w / l, 2.0);
      double ar = table_bytes * (2.0 * nodes - 1.0) / nodes /
                  comms_bw(ps, static_cast<int>(w), static_cast<int>(l), true);
      if (w > 2.0 * l) ar *= 2.0;
      e.bwd_compute_s = e.fwd_compute_s * ps.bwd_compute_multiplier;
      e.bwd_comms_s = ar + table_bytes * ps.dp_elementwise_factor / bw;
      input_size = read;
      output_size = outputs * dim * 4.0;
      break;
    }
  }
  add_shard_storage(job, t, p, shard, input_size + output_size, e);
  return e;
}

double planner_rank_budget_bytes(const JobSpec& job) {
  const PlannerSettings& ps = job.runtime.recsys.planner;
  const RecommendationSpec& r = job.model.recommendation;
  double kjt = 0.0;
  for (std::size_t i = 0; i < r.tables.size(); ++i) {
    kjt += ps.pooling_factor * job.runtime.micro_batch_size;
  }
  const double dense = static_cast<double>(recsys_params(r).dense()) * 4.0 * ps.dense_multiplier;
  return ps.hbm_cap_bytes * (1.0 - ps.reservation_fraction) - dense -
         std::ceil(kjt * 8.0) * ps.kjt_copies;
}

namespace {

std::vector<Option> table_options(const JobSpec& job, int ti) {
  const EmbeddingTableSpec& t = job.model.recommendation.tables[static_cast<std::size_t>(ti)];
  std::vector<EmbeddingSharding> types = {
      EmbeddingSharding::kDataParallel, EmbeddingSharding::kTableWise,
      EmbeddingSharding::kColumnWise, EmbeddingSharding::kRowWise,
      EmbeddingSharding::kTableRowWise};
  if (t.sharding != EmbeddingSharding::kAuto) types = {t.sharding};
  std::vector<Option> out;
  for (const EmbeddingSharding s : types) {
    std::vector<EmbeddingPlacement> kernels = {EmbeddingPlacement::kHbm};
    if (s != EmbeddingSharding::kDataParallel) {
      kernels.push_back(EmbeddingPlacement::kUvm);
      kernels.push_back(EmbeddingPlacement::kUvmCaching);
    }
    for (const EmbeddingPlacement p : kernels) {
      Option o;
      o.table = ti;
      o.sharding = s;
      o.placement = p;
      o.shards = shard_sizes(job, t, s);
      for (const EmbeddingShard& sh : o.shards) {
        const PlannerShardEstimate e = planner_shard_estimate(job, t, s, p, sh);
        o.est.push_back(e);
        o.sum_s += e.total_s();
        o.max_s = std::max(o.max_s, e.total_s());
        o.hbm_sum += e.hbm_bytes;
        o.hbm_max = std::max(o.hbm_max, e.hbm_bytes);
        o.ddr_sum += e.ddr_bytes;
        o.ddr_max = std::max(o.ddr_max, e.ddr_bytes);
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

bool uniform(EmbeddingSharding s) {
  return s == EmbeddingSharding::kDataParallel || s == EmbeddingSharding::kRowWise;
}

struct Device {
  double hbm = 0.0, ddr = 0.0, cost = 0.0;
};

using Proposal = std::vector<const Option*>;  // one option per table, in table order
using Ranks = std::vector<std::vector<int>>;  // per table, the rank of each shard

// TR2 GreedyPerfPartitioner (sort by storage): uniform options on every rank, then host-level
// (TWRW) options on the cheapest host with room, then per-device options shard by shard on the
// cheapest device with room. False when a shard fits nowhere.
bool partition(const JobSpec& job, const Proposal& proposal, double budget,
               std::vector<Device>& devices, Ranks& ranks, bool ignore_capacity) {
  const int world = world_of(job);
  const int local = local_of(job);
  devices.assign(static_cast<std::size_t>(world), Device{budget, kDdrCapBytes, 0.0});
  ranks.resize(proposal.size());
  auto fits = [&](const Device& d, const PlannerShardEstimate& e) {
    return ignore_capacity || (e.hbm_bytes <= d.hbm && e.ddr_bytes <= d.ddr);
  };
  auto take = [&](int r, const PlannerShardEstimate& e, int& slot) {
    Device& d = devices[static_cast<std::size_t>(r)];
    d.hbm -= e.hbm_bytes;
    d.ddr -= e.ddr_bytes;
    d.cost += e.total_s();
    slot = r;
  };
  std::vector<std::size_t> rest;
  for (std::size_t t = 0; t < proposal.size(); ++t) {
    const Option& o = *proposal[t];
    ranks[t].assign(o.shards.size(), -1);
    if (!uniform(o.sharding)) {
      rest.push_back(t);
      continue;
    }
    for (std::size_t i = 0; i < o.shards.size(); ++i) {
      if (!fits(devices[i], o.est[i])) return false;
      take(static_cast<int>(i), o.est[i], ranks[t][i]);
    }
  }
  std::stable_sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(proposal[a]->hbm_sum, proposal[a]->ddr_sum) >
           std::tie(proposal[b]->hbm_sum, proposal[b]->ddr_sum);
  });
  for (const std::size_t t : rest) {
    const Option& o = *proposal[t];
    if (o.sharding == EmbeddingSharding::kTableRowWise) {
      int best = -1;
      double best_cost = std::numeric_limits<double>::infinity();
      for (int h = 0; h < world / local; ++h) {
        double cost = 0.0;
        bool ok = true;
        for (std::size_t i = 0; i < o.shards.size(); ++i) {
          const Device& d = devices[static_cast<std::size_t>(h * local) + i];
          ok = ok && fits(d, o.est[i]);
          cost += d.cost;
        }
        if (ok && cost < best_cost) {
          best = h;
          best_cost = cost;
        }
      }
      if (best < 0) return false;
      for (std::size_t i = 0; i < o.shards.size(); ++i) {
        take(best * local + static_cast<int>(i), o.est[i], ranks[t][i]);
      }
      continue;
    }
    for (std::size_t i = 0; i < o.shards.size(); ++i) {
      int best = -1;
      for (int r = 0; r < world; ++r) {
        const Device& d = devices[static_cast<std::size_t>(r)];
        if (!fits(d, o.est[i])) continue;
        if (best < 0) {
          best = r;
          continue;
        }
        const Device& bd = devices[static_cast<std::size_t>(best)];
        if (std::make_tuple(d.cost, r % local, r) < std::make_tuple(bd.cost, best % local, best)) {
          best = r;
        }
      }
      if (best < 0) return false;
      take(best, o.est[i], ranks[t][i]);
    }
  }
  return true;
}

double rating(const std::vector<Device>& devices) {
  double m = 0.0;
  for (const Device& d : devices) m = std::max(m, d.cost);
  return m;
}

struct Search {
  explicit Search(const JobSpec& j) : job(j), budget(planner_rank_budget_bytes(j)) {}
  const JobSpec& job;
  std::vector<std::vector<Option>> options;  // per table
  double budget = 0.0;
  Proposal best;
  Ranks best_ranks;
  double best_rating = std::numeric_limits<double>::infinity();
  std::string best_proposer;
  int evaluated = 0;
  std::vector<Device> devices;  // scratch
  Ranks ranks;                  // scratch

  void evaluate(const Proposal& proposal, const char* proposer) {
    ++evaluated;
    if (!partition(job, proposal, budget, devices, ranks, false)) return;
    const double r = rating(devices);
    if (r < best_rating) {
      best_rating = r;
      best = proposal;
      best_ranks = ranks;
      best_proposer = proposer;
    }
  }

  // TR2 GreedyProposer: each table's options sorted by cost (max over shards with use_depth, sum
  // otherwise); start from the cheapest of each; then repeatedly move the table whose current
  // option takes the most storage to its next option.
  void greedy(bool use_depth) {
    std::vector<Proposal> sorted(options.size());
    for (std::size_t t = 0; t < options.size(); ++t) {
      for (const Option& o : options[t]) sorted[t].push_back(&o);
      std::stable_sort(sorted[t].begin(), sorted[t].end(), [&](const Option* a, const Option* b) {
        return use_depth ? a->max_s < b->max_s : a->sum_s < b->sum_s;
      });
    }
    std::vector<std::size_t> at(sorted.size(), 0);
    Proposal proposal(sorted.size());
    while (true) {
      for (std::size_t t = 0; t < sorted.size(); ++t) proposal[t] = sorted[t][at[t]];
      evaluate(proposal, use_depth ? "greedy (by max shard cost)" : "greedy");
      int largest = -1;
      std::tuple<double, double, double, double> largest_storage{0, 0, 0, 0};
      for (std::size_t t = 0; t < sorted.size(); ++t) {
        if (at[t] + 1 >= sorted[t].size()) continue;
        const Option& o = *sorted[t][at[t]];
        const auto st = std::make_tuple(o.hbm_max, o.hbm_sum, o.ddr_max, o.ddr_sum);
        if (st > largest_storage) {
          largest_storage = st;
          largest = static_cast<int>(t);
        }
      }
      if (largest < 0) break;
      ++at[static_cast<std::size_t>(largest)];
    }
  }

  // TR2 UniformProposer: the same sharding type for every table (its cheapest kernel), for each
  // type every table offers.
  void uniform_proposals() {
    std::map<EmbeddingSharding, Proposal> by_type;
    for (const std::vector<Option>& v : options) {
      std::map<EmbeddingSharding, const Option*> cheapest;
      for (const Option& o : v) {
        const Option*& c = cheapest[o.sharding];
        if (c == nullptr || o.max_s < c->max_s) c = &o;
      }
      for (const auto& [sharding, o] : cheapest) by_type[sharding].push_back(o);
    }
    for (const auto& [sharding, proposal] : by_type) {
      if (proposal.size() == options.size()) evaluate(proposal, "uniform");
    }
  }

  // TR2 GridSearchProposer, only when the product of option counts is at most 10^4.
  void grid() {
    double count = 1.0;
    for (const std::vector<Option>& v : options) count *= static_cast<double>(v.size());
    if (count > kMaxGridProposals) return;
    std::vector<std::size_t> idx(options.size(), 0);
    Proposal proposal(options.size());
    while (true) {
      for (std::size_t t = 0; t < options.size(); ++t) proposal[t] = &options[t][idx[t]];
      evaluate(proposal, "grid search");
      std::size_t t = 0;
      while (t < idx.size() && ++idx[t] == options[t].size()) idx[t++] = 0;
      if (t == idx.size()) break;
    }
  }
};

TablePlan to_table_plan(const Option& o, const std::vector<int>& ranks,
                        const EmbeddingTableSpec& t) {
  TablePlan tp;
  tp.sharding = o.sharding;
  tp.placement = o.placement;
  tp.shards = o.shards;
  for (std::size_t i = 0; i < tp.shards.size() && i < ranks.size(); ++i) {
    tp.shards[i].rank = ranks[i];
  }
  tp.pinned = t.sharding != EmbeddingSharding::kAuto;
  tp.planner_cost_ms = o.sum_s * 1e3;
  return tp;
}

}  // namespace

EmbeddingPlan plan_embeddings(const JobSpec& job) {
  const RecommendationSpec& r = job.model.recommendation;
  EmbeddingPlan plan;
  if (r.tables.empty()) {
    plan.planned = true;
    return plan;
  }
  Search s(job);
  for (int t = 0; t < static_cast<int>(r.tables.size()); ++t) {
    s.options.push_back(table_options(job, t));
  }
  s.grid();
  s.greedy(true);
  s.greedy(false);
  s.uniform_proposals();
  plan.rank_budget_bytes = s.budget;
  plan.proposals_evaluated = s.evaluated;
  if (!s.best.empty()) {
    for (std::size_t t = 0; t < s.best.size(); ++t) {
      plan.tables.push_back(to_table_plan(*s.best[t], s.best_ranks[t], r.tables[t]));
    }
    plan.proposer = s.best_proposer;
    plan.max_rank_cost_ms = s.best_rating * 1e3;
    plan.planned = true;
    return plan;
  }
  // Nothing fits: the least storage per rank, for the memory projection to report.
  Proposal fallback;
  for (const std::vector<Option>& v : s.options) {
    fallback.push_back(&*std::min_element(v.begin(), v.end(), [](const Option& a, const Option& b) {
      return std::tie(a.hbm_max, a.ddr_max) < std::tie(b.hbm_max, b.ddr_max);
    }));
  }
  std::vector<Device> devices;
  Ranks ranks;
  partition(job, fallback, s.budget, devices, ranks, true);
  for (std::size_t t = 0; t < fallback.size(); ++t) {
    plan.tables.push_back(to_table_plan(*fallback[t], ranks[t], r.tables[t]));
  }
  plan.proposer = "none fits: least storage per rank";
  plan.max_rank_cost_ms = rating(devices) * 1e3;
  plan.planned = false;
  return plan;
}

std::string describe_plan(const JobSpec& job) {
  const RecommendationSpec& r = job.model.recommendation;
  const EmbeddingPlan& plan = job.parallel.embedding_plan;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (std::size_t t = 0; t < plan.tables.size() && t < r.tables.size(); ++t) {
    const TablePlan& tp = plan.tables[t];
    const std::string key = fmt::format("{} ({}{})", to_string(tp.sharding),
                                        to_string(tp.placement), tp.pinned ? ", stated" : "");
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(r.tables[t].name);
  }
  std::string out;
  for (const auto& [key, names] : groups) {
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (i == 6) {
        list += fmt::format(", ... ({} more)", names.size() - 6);
        break;
      }
      list += (i ? ", " : "") + names[i];
    }
    out += fmt::format("{} x {}: {}\n", key, names.size(), list);
  }
  return out;
}

}  // namespace projector
