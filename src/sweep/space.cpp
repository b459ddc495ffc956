// The sweep's search space: grid parsing, default axes, legality rules, enumeration, and turning a
// candidate into a JobSpec.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>

#include "projector/job/layout.h"
#include "projector/sweep/sweep.h"
#include "projector/util/error.h"
#include "projector/util/text.h"

namespace projector::sweep {
namespace {

[[noreturn]] void bad_grid(const std::string& message) {
  throw InputError(SourceLocation{"--grid", 0, 0}, "--grid", message);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = s.find(sep, start);
    const std::string_view part =
        trim(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (!part.empty()) out.push_back(part);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::string lower(std::string_view s) {
  return to_lower(s);
}

int positive_int(std::string_view key, std::string_view text) {
  int v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 1) {
    bad_grid(fmt::format("{}: '{}' is not a positive integer", key, text));
  }
  return v;
}

ScheduleKind parse_schedule_name(std::string_view text) {
  const std::string t = lower(text);
  if (t == "zerobubble" || t == "zb" || t == "zb-h1") return ScheduleKind::kZeroBubble;
  static constexpr std::array<ScheduleKind, 7> kAll = {
      ScheduleKind::k1F1B,         ScheduleKind::kInterleaved,  ScheduleKind::kZeroBubble,
      ScheduleKind::kZbvFormatted, ScheduleKind::kZbvGreedyMin, ScheduleKind::kZbvGreedyHalf,
      ScheduleKind::kDualPipeV};
  for (const ScheduleKind k : kAll) {
    if (to_string(k) == t) return k;
  }
  bad_grid(fmt::format(
      "schedule: unknown '{}' (1f1b, interleaved, zero-bubble, zbv-formatted, zbv-greedy-min, "
      "zbv-greedy-half, dualpipev)",
      text));
}

RecomputeOption parse_recompute(std::string_view text) {
  const std::string t = lower(text);
  if (t == "none") return {RecomputeKind::kNone, 0};
  if (t == "selective") return {RecomputeKind::kSelective, 0};
  if (t == "full") return {RecomputeKind::kFull, 0};
  if (t.rfind("block", 0) == 0 && t.size() > 5) {
    return {RecomputeKind::kFullBlock, positive_int("recompute", std::string_view(t).substr(5))};
  }
  bad_grid(fmt::format("recompute: unknown '{}' (none, selective, full, block<N>)", text));
}

Sharding parse_sharding(std::string_view text) {
  const std::string t = lower(text);
  if (t == "distopt" || t == "dist-opt" || t == "distributed_optimizer") {
    return Sharding::kDistributedOptimizer;
  }
  if (t == "fsdp") return Sharding::kFsdp;
  bad_grid(fmt::format("sharding: unknown '{}' (distopt, fsdp)", text));
}

std::vector<int> divisors(std::int64_t n, std::int64_t max_value) {
  std::vector<int> out;
  for (std::int64_t d = 1; d <= std::min(n, max_value); ++d) {
    if (n % d == 0) out.push_back(static_cast<int>(d));
  }
  return out;
}

// What the rules need from the base job, computed once (the job module's rule facts).
struct Facts : RuleFacts {
  int nodes = 1;
};

Facts facts_of(const JobSpec& base, const SpaceOptions& o) {
  Facts f;
  f.nodes = o.nodes > 0 ? o.nodes : base.cluster.nodes;
  static_cast<RuleFacts&>(f) = rule_facts(
      base.model, base.runtime.seq_length, base.runtime.global_batch_size,
      base.cluster.gpus_per_node, static_cast<std::int64_t>(f.nodes) * base.cluster.gpus_per_node);
  if (f.world > kMaxWorldSize) {
    throw InputError(
        SourceLocation{"--nodes", 0, 0}, "nodes",
        fmt::format("{} nodes x {} GPUs = {} GPUs is more than the {} this tool models", f.nodes,
                    base.cluster.gpus_per_node, f.world, kMaxWorldSize));
  }
  f.tp_beyond_node = o.allow_tp_beyond_node || base.parallel.allow_tp_beyond_node;
  f.uneven_layers = o.allow_uneven_layers;
  f.search = true;
  return f;
}

LayoutChoice choice_of(const Candidate& c) {
  LayoutChoice l;
  l.tp = c.tp;
  l.pp = c.pp;
  l.vpp = c.vpp;
  l.cp = c.cp;
  l.ep = c.ep;
  l.etp = c.etp;
  l.mbs = c.mbs;
  l.schedule = c.schedule;
  l.full_recompute =
      c.recompute.kind == RecomputeKind::kFull || c.recompute.kind == RecomputeKind::kFullBlock;
  l.recompute_block_layers =
      c.recompute.kind == RecomputeKind::kFullBlock ? c.recompute.num_layers : 0;
  return l;
}

Rule check(const Facts& f, const Candidate& c) {
  return check_layout(f, choice_of(c));
}

}  // namespace

// ------------------------------------------------------------------------------------ names

Objective parse_objective(std::string_view text) {
  const std::string t = lower(text);
  if (t == "tokens_per_s_per_gpu" || t == "throughput") return Objective::kTokensPerSPerGpu;
  if (t == "iteration_time") return Objective::kIterationTime;
  if (t == "mfu") return Objective::kMfu;
  throw InputError(SourceLocation{"--objective", 0, 0}, "--objective",
                   fmt::format("unknown '{}' (tokens_per_s_per_gpu, iteration_time, mfu)", text));
}

std::string_view to_string(Objective o) {
  switch (o) {
    case Objective::kTokensPerSPerGpu:
      return "tokens_per_s_per_gpu";
    case Objective::kIterationTime:
      return "iteration_time";
    case Objective::kMfu:
      return "mfu";
  }
  return "?";
}

std::string_view to_string(Sharding s) {
  return s == Sharding::kFsdp ? "fsdp" : "dist-opt";
}

std::string to_string(RecomputeOption r) {
  switch (r.kind) {
    case RecomputeKind::kNone:
      return "none";
    case RecomputeKind::kSelective:
      return "selective";
    case RecomputeKind::kFull:
      return "full";
    case RecomputeKind::kFullBlock:
      return fmt::format("block{}", r.num_layers);
  }
  return "?";
}

std::string describe(const Candidate& c) {
  std::string s = fmt::format("TP{} PP{} VPP{} CP{} EP{} ETP{} DP{} MBS{} {} recompute={} {}", c.tp,
                              c.pp, c.vpp, c.cp, c.ep, c.etp, c.dp, c.mbs, to_string(c.schedule),
                              to_string(c.recompute), to_string(c.sharding));
  if (c.bucket_bytes > 0) s += fmt::format(" bucket={}MB", c.bucket_bytes / 1000000);
  return s;
}

// --------------------------------------------------------------------------------------- grid

Grid parse_grid(std::string_view text) {
  Grid g;
  for (const std::string_view item : split(text, ';')) {
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      bad_grid(fmt::format("'{}' is not axis=values", item));
    }
    const std::string key = lower(trim(item.substr(0, eq)));
    const std::vector<std::string_view> values = split(item.substr(eq + 1), ',');
    if (values.empty()) bad_grid(fmt::format("{}: no values", key));
    auto ints = [&](std::vector<int>& out) {
      out.clear();
      for (const std::string_view v : values) out.push_back(positive_int(key, v));
    };
    if (key == "tp") {
      ints(g.tp);
    } else if (key == "pp") {
      ints(g.pp);
    } else if (key == "vpp") {
      ints(g.vpp);
    } else if (key == "cp") {
      ints(g.cp);
    } else if (key == "ep") {
      ints(g.ep);
    } else if (key == "etp") {
      ints(g.etp);
    } else if (key == "mbs") {
      ints(g.mbs);
    } else if (key == "schedule" || key == "schedules") {
      g.schedules.clear();
      for (const std::string_view v : values) g.schedules.push_back(parse_schedule_name(v));
    } else if (key == "recompute") {
      g.recompute.clear();
      for (const std::string_view v : values) g.recompute.push_back(parse_recompute(v));
    } else if (key == "sharding") {
      g.sharding.clear();
      for (const std::string_view v : values) g.sharding.push_back(parse_sharding(v));
    } else if (key == "bucket_mb") {
      g.bucket_bytes.clear();
      for (const std::string_view v : values) {
        g.bucket_bytes.push_back(static_cast<std::int64_t>(positive_int(key, v)) * 1000000);
      }
    } else {
      bad_grid(
          fmt::format("unknown axis '{}' (tp, pp, vpp, cp, ep, etp, mbs, schedule, "
                      "recompute, sharding, bucket_mb)",
                      key));
    }
  }
  return g;
}

// ---------------------------------------------------------------------------------- legality

Rule check_legality(const JobSpec& base, const Candidate& c, const SpaceOptions& options) {
  return check(facts_of(base, options), c);
}

std::size_t Enumeration::illegal() const {
  return std::accumulate(illegal_by_rule.begin(), illegal_by_rule.end(), std::size_t{0});
}

Enumeration enumerate(const JobSpec& base, const Grid& grid, const SpaceOptions& options) {
  const Facts f = facts_of(base, options);
  const bool moe = f.experts_gcd > 0;
  const std::vector<int> tps =
      !grid.tp.empty() ? grid.tp : divisors(f.tp_beyond_node ? f.world : f.gpus_per_node, f.world);
  const std::vector<int> pps = !grid.pp.empty() ? grid.pp : divisors(f.world, f.layers);
  std::vector<int> cps = grid.cp;
  if (cps.empty()) {
    for (const int d : divisors(f.world, f.world)) {
      if (d == 1 || f.seq % (2 * d) == 0) cps.push_back(d);
    }
  }
  const std::vector<int> eps =
      !grid.ep.empty() ? grid.ep : (moe ? divisors(f.world, f.experts_gcd) : std::vector<int>{1});
  const std::vector<int>& mbss = !grid.mbs.empty() ? grid.mbs : options.default_mbs;

  // Schedule x VPP variants.
  std::vector<ScheduleKind> schedules = grid.schedules;
  if (schedules.empty()) {
    schedules = {ScheduleKind::k1F1B, ScheduleKind::kZeroBubble, ScheduleKind::kInterleaved};
    if (options.include_vshape) {
      schedules.insert(schedules.end(), {ScheduleKind::kZbvFormatted, ScheduleKind::kZbvGreedyMin,
                                         ScheduleKind::kZbvGreedyHalf, ScheduleKind::kDualPipeV});
    }
  }
  std::vector<std::pair<ScheduleKind, int>> variants;
  for (const ScheduleKind s : schedules) {
    if (!grid.vpp.empty()) {
      for (const int v : grid.vpp) variants.emplace_back(s, v);
    } else if (s == ScheduleKind::kInterleaved) {
      // Balanced: the divisors of the layer count (only they can divide it with some PP). With
      // uneven layouts also the powers of two, which need not divide it.
      for (int v = 2; v <= f.layers; ++v) {
        if (f.layers % v == 0 || (f.uneven_layers && (v & (v - 1)) == 0))
          variants.emplace_back(s, v);
      }
    } else {
      variants.emplace_back(s, is_v_shape(s) ? 2 : 1);
    }
  }
  const std::vector<RecomputeOption> recomputes =
      !grid.recompute.empty() ? grid.recompute
                              : std::vector<RecomputeOption>{{RecomputeKind::kNone, 0},
                                                             {RecomputeKind::kSelective, 0},
                                                             {RecomputeKind::kFull, 0}};
  const std::vector<Sharding> shardings =
      !grid.sharding.empty()
          ? grid.sharding
          : std::vector<Sharding>{Sharding::kDistributedOptimizer, Sharding::kFsdp};
  const std::vector<std::int64_t> buckets =
      !grid.bucket_bytes.empty() ? grid.bucket_bytes
                                 : std::vector<std::int64_t>{base.parallel.ddp_bucket_size_bytes};

  Enumeration out;
  Candidate c;
  for (const int tp : tps) {
    std::vector<int> etps = grid.etp;
    if (etps.empty()) {
      etps = {tp};
      if (moe && tp != 1) etps.push_back(1);
    }
    for (const int pp : pps) {
      for (const int cp : cps) {
        for (const int ep : eps) {
          for (const int etp : etps) {
            for (const auto& [schedule, vpp] : variants) {
              for (const int mbs : mbss) {
                for (const RecomputeOption& rc : recomputes) {
                  for (const Sharding sh : shardings) {
                    for (const std::int64_t bucket : buckets) {
                      c.tp = tp;
                      c.pp = pp;
                      c.vpp = vpp;
                      c.cp = cp;
                      c.ep = ep;
                      c.etp = etp;
                      c.mbs = mbs;
                      c.schedule = schedule;
                      c.recompute = rc;
                      c.sharding = sh;
                      c.bucket_bytes = bucket;
                      ++out.enumerated;
                      const Rule r = check(f, c);
                      if (r != Rule::kLegal) {
                        ++out.illegal_by_rule[static_cast<std::size_t>(r)];
                        continue;
                      }
                      const DataParallelSizes dps =
                          data_parallel_sizes(f.world, tp, pp, cp, etp, ep);
                      c.dp = static_cast<int>(dps.dp);
                      c.expert_dp = static_cast<int>(dps.expert_dp > 0 ? dps.expert_dp : 1);
                      out.legal.push_back(c);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------ re-layout

void apply_candidate(const Candidate& c, int nodes, JobSpec& job) {
  if (nodes > 0) job.cluster.nodes = nodes;
  apply_layout(job, choice_of(c));  // sizes, DP, expert DP, balanced stages, MBS, schedule
  ParallelSpec& p = job.parallel;
  p.sequence_parallel = c.tp > 1;
  p.distributed_optimizer = c.sharding == Sharding::kDistributedOptimizer;
  p.fsdp = c.sharding == Sharding::kFsdp ? FsdpKind::kZero3 : FsdpKind::kNone;
  p.ddp_bucket_size_bytes = c.bucket_bytes;
  RecomputeSpec& rc = job.runtime.recompute;
  rc.layer_ids.clear();
  rc.modules.clear();
  rc.method = RecomputeMethod::kUniform;
  rc.num_layers = 0;
  switch (c.recompute.kind) {
    case RecomputeKind::kNone:
      rc.granularity = RecomputeGranularity::kNone;
      break;
    case RecomputeKind::kSelective:
      rc.granularity = RecomputeGranularity::kSelective;
      rc.modules.add(RecomputeModule::kCoreAttn);
      break;
    case RecomputeKind::kFull:
      rc.granularity = RecomputeGranularity::kFull;
      rc.num_layers = 1;
      break;
    case RecomputeKind::kFullBlock:
      rc.granularity = RecomputeGranularity::kFull;
      rc.method = RecomputeMethod::kBlock;
      rc.num_layers = c.recompute.num_layers;
      break;
  }
}

JobSpec make_job(const JobSpec& base, const Candidate& c, int nodes) {
  JobSpec job = base;
  apply_candidate(c, nodes, job);
  return job;
}

}  // namespace projector::sweep
