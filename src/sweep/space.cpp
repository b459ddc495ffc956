// The sweep's search space: grid parsing, default axes, legality rules, enumeration, and turning a
// candidate into a JobSpec.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <numeric>

#include "projector/job/layout.h"
#include "projector/job/mesh.h"
#include "projector/job/recompute.h"
#include "projector/job/spec.h"
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

// A value of an axis: a positive integer up to the axis's physical bound (util/bounds.h).
int positive_int(std::string_view key, std::string_view text, std::int64_t max_value) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > max_value)) {
    bad_grid(fmt::format("{}: {} is more than {}", key, text, max_value));
  }
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 1) {
    bad_grid(fmt::format("{}: '{}' is not a positive integer", key, text));
  }
  return static_cast<int>(v);
}

ScheduleKind parse_schedule_name(std::string_view text) {
  const std::optional<ScheduleKind> s = parse_schedule_kind(text);
  // The sweep always names its schedule: "auto" is not an axis value.
  if (!s || *s == ScheduleKind::kAuto) {
    bad_grid(
        fmt::format("schedule: unknown '{}' (1f1b, interleaved, zero-bubble, zbv-formatted, "
                    "zbv-greedy-min, zbv-greedy-half, dualpipev)",
                    text));
  }
  return *s;
}

// A remat:<name> value parses to a per-tensor policy without its table: the name is resolved
// against the base job's framework (resolve_recompute) when the space is built.
RecomputeOption parse_recompute(std::string_view text) {
  const std::string t = lower(text);
  if (t.rfind("remat:", 0) == 0 && t.size() > 6) return {RecomputeKind::kTensorPolicy};
  // The layer counts with the grid's own bound and message.
  for (const auto& [prefix, kind] :
       {std::pair{std::string_view("block"), RecomputeKind::kFullBlock},
        std::pair{std::string_view("every"), RecomputeKind::kEveryN}}) {
    if (t.rfind(prefix, 0) == 0 && t.size() > prefix.size()) {
      return {kind,
              positive_int("recompute", std::string_view(t).substr(prefix.size()), kMaxLayers)};
    }
  }
  if (const std::optional<RecomputeChoice> c = parse_recompute_choice(t, {})) return *c;
  bad_grid(
      fmt::format("recompute: unknown '{}' (none, selective, full, block<N>, op, every<N>, "
                  "remat:<remat policy>, remat:base)",
                  text));
}

// The grid's recompute values with each remat:<name> looked up in the job's named policies.
std::vector<RecomputeOption> resolve_recompute(const JobSpec& base, const Grid& grid) {
  std::vector<RecomputeOption> out = grid.recompute;
  const std::span<const NamedTensorPolicy> named = base.runtime.tensor_policies;
  for (std::size_t i = 0; i < out.size() && i < grid.recompute_text.size(); ++i) {
    const std::string t = lower(grid.recompute_text[i]);
    if (out[i].kind != RecomputeKind::kTensorPolicy || t == "remat:base") continue;
    const NamedTensorPolicy* p = find_tensor_policy(named, std::string_view(t).substr(6));
    if (p == nullptr) {
      std::string names;
      for (const NamedTensorPolicy& n : named)
        names += (names.empty() ? "" : ", ") + std::string(n.name);
      bad_grid(fmt::format(
          "recompute: '{}': {}", grid.recompute_text[i],
          named.empty() ? std::string("this job's framework names no remat policies")
                        : "not one of this job's framework's remat policies (" + names + ")"));
    }
    out[i].tensors = p;
  }
  return out;
}

Sharding parse_sharding(std::string_view text) {
  const std::string t = lower(text);
  if (t == "distopt" || t == "dist-opt" || t == "distributed_optimizer") {
    return Sharding::kDistributedOptimizer;
  }
  if (t == "fsdp") return Sharding::kFsdp;
  if (t == "fsdp2") return Sharding::kFsdp2;
  bad_grid(fmt::format("sharding: unknown '{}' (distopt, fsdp, fsdp2)", text));
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
  std::int64_t mesh_slice_devices = 0;  // a mesh job: devices per slice (TP x PP x CP x EP | it)
};

Facts facts_of(const JobSpec& base, const SpaceOptions& o) {
  Facts f;
  f.nodes = o.nodes > 0 ? o.nodes : base.cluster.nodes;
  static_cast<RuleFacts&>(f) = rule_facts(
      base, RulePurpose::kSearch, static_cast<std::int64_t>(f.nodes) * base.cluster.gpus_per_node);
  if (f.world > kMaxWorldSize) {
    throw InputError(
        SourceLocation{"--nodes", 0, 0}, "nodes",
        fmt::format("{} nodes x {} GPUs = {} GPUs is more than the {} this tool models", f.nodes,
                    base.cluster.gpus_per_node, f.world, kMaxWorldSize));
  }
  // A step's tokens spread over more GPUs than there are tokens leave GPUs with nothing to do,
  // whatever the layout: say so instead of ranking layouts at ~0 tokens/s/GPU.
  const double step_tokens =
      static_cast<double>(base.runtime.global_batch_size) * base.runtime.seq_length;
  if (step_tokens < static_cast<double>(f.world)) {
    throw InputError(
        SourceLocation{"--nodes", 0, 0}, "nodes",
        fmt::format("GBS {} x seq {} = {:.0f} tokens per step over {} GPUs is less "
                    "than one token per GPU: the batch cannot use this cluster "
                    "(raise the global batch or lower the nodes)",
                    base.runtime.global_batch_size, base.runtime.seq_length, step_tokens, f.world));
  }
  f.tp_beyond_node = f.tp_beyond_node || o.allow_tp_beyond_node;
  f.uneven_layers = f.uneven_layers || o.allow_uneven_layers;
  if (!base.parallel.mesh.empty()) {
    f.mesh_slice_devices = f.world / std::max(1, base.cluster.slices);
    f.tp_beyond_node = true;  // tensor axes lie on the slice's torus, not in a host
  }
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
  l.full_recompute = checkpoints_whole_layers(c.recompute);
  l.recompute_block_layers =
      c.recompute.kind == RecomputeKind::kFullBlock ? c.recompute.num_layers : 0;
  return l;
}

Rule check(const Facts& f, const Candidate& c) {
  if (f.mesh_slice_devices > 0 &&
      f.mesh_slice_devices % (static_cast<std::int64_t>(c.tp) * c.pp * c.cp * c.ep) != 0) {
    return Rule::kWorldDense;  // the inner mesh axes must fit in one slice
  }
  return check_layout(f, choice_of(c));
}

}  // namespace

// ------------------------------------------------------------------------------------ names

Objective parse_objective(std::string_view text) {
  const std::string t = lower(text);
  if (t == "tokens_per_s_per_gpu" || t == "throughput") return Objective::kTokensPerSPerGpu;
  if (t == "iteration_time") return Objective::kIterationTime;
  if (t == "mfu") return Objective::kMfu;
  if (t == "p10" || t == "tokens_per_s_per_gpu_p10") return Objective::kTokensP10;
  if (t == "cost") return Objective::kCost;
  throw InputError(
      SourceLocation{"--objective", 0, 0}, "--objective",
      fmt::format("unknown '{}' (tokens_per_s_per_gpu, iteration_time, mfu, p10, cost)", text));
}

std::string_view to_string(Objective o) {
  switch (o) {
    case Objective::kTokensPerSPerGpu:
      return "tokens_per_s_per_gpu";
    case Objective::kIterationTime:
      return "iteration_time";
    case Objective::kMfu:
      return "mfu";
    case Objective::kTokensP10:
      return "tokens_per_s_per_gpu_p10";
    case Objective::kCost:
      return "cost";
  }
  return "?";
}

std::string_view to_string(Sharding s) {
  return s == Sharding::kFsdp ? "fsdp" : (s == Sharding::kFsdp2 ? "fsdp2" : "dist-opt");
}

std::string describe(const Candidate& c) {
  std::string s = fmt::format("TP{} PP{} VPP{} CP{} EP{} ETP{} DP{} MBS{} {} recompute={} {}", c.tp,
                              c.pp, c.vpp, c.cp, c.ep, c.etp, c.dp, c.mbs, to_string(c.schedule),
                              to_string(c.recompute), to_string(c.sharding));
  if (c.bucket_bytes > 0) s += fmt::format(" bucket={}MB", c.bucket_bytes / 1000000);
  if (c.dp_replicate > 1) s += fmt::format(" replicate={}", c.dp_replicate);
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
    auto ints = [&](std::vector<int>& out, std::int64_t max_value) {
      out.clear();
      for (const std::string_view v : values) out.push_back(positive_int(key, v, max_value));
    };
    if (key == "tp") {
      ints(g.tp, kMaxWorldSize);
    } else if (key == "pp") {
      ints(g.pp, kMaxWorldSize);
    } else if (key == "vpp") {
      ints(g.vpp, kMaxLayers);
    } else if (key == "cp") {
      ints(g.cp, kMaxWorldSize);
    } else if (key == "ep") {
      ints(g.ep, kMaxWorldSize);
    } else if (key == "etp") {
      ints(g.etp, kMaxWorldSize);
    } else if (key == "mbs") {
      ints(g.mbs, kMaxGlobalBatch);
    } else if (key == "schedule" || key == "schedules") {
      g.schedules.clear();
      for (const std::string_view v : values) g.schedules.push_back(parse_schedule_name(v));
    } else if (key == "recompute") {
      g.recompute.clear();
      g.recompute_text.clear();
      for (const std::string_view v : values) {
        g.recompute.push_back(parse_recompute(v));
        g.recompute_text.emplace_back(v);
      }
    } else if (key == "sharding") {
      g.sharding.clear();
      for (const std::string_view v : values) g.sharding.push_back(parse_sharding(v));
    } else if (key == "replicate") {
      ints(g.replicate, kMaxWorldSize);
    } else if (key == "bucket_mb") {
      g.bucket_bytes.clear();
      for (const std::string_view v : values) {
        g.bucket_bytes.push_back(static_cast<std::int64_t>(positive_int(key, v, 1 << 20)) *
                                 1000000);
      }
    } else {
      bad_grid(
          fmt::format("unknown axis '{}' (tp, pp, vpp, cp, ep, etp, mbs, schedule, "
                      "recompute, sharding, bucket_mb, replicate)",
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

namespace {

// The values of every axis, outermost first. The enumeration order is part of the output (ranking
// ties are broken by it), so the order of axes and values must not change.
struct Axes {
  std::vector<int> tp, pp, cp, ep, etp_grid, mbs;
  std::vector<std::pair<ScheduleKind, int>> variants;  // schedule x VPP
  std::vector<RecomputeOption> recompute;
  std::vector<Sharding> sharding;
  std::vector<std::int64_t> bucket;
  std::vector<int> replicate;
  bool moe = false;
  // ETP depends on TP: the grid's values, else {TP} and, for MoE with TP > 1, also 1.
  bool mesh = false;  // a mesh job: experts shard their MLP columns over the tensor axes
  std::vector<int> etp(int tp_size) const {
    if (!etp_grid.empty()) return etp_grid;
    if (mesh) return {tp_size};
    if (moe && tp_size != 1) return {tp_size, 1};
    return {tp_size};
  }
};

std::vector<std::pair<ScheduleKind, int>> schedule_variants(const Facts& f, const Grid& grid,
                                                            const SpaceOptions& options) {
  std::vector<ScheduleKind> schedules = grid.schedules;
  if (schedules.empty() && options.fsdp2_native) {
    // torchtitan's schedules; multi-stage ones with its default 2 stages per rank.
    schedules = {ScheduleKind::k1F1B, ScheduleKind::kInterleaved, ScheduleKind::kZbvFormatted,
                 ScheduleKind::kDualPipeV};
  }
  if (schedules.empty() && f.mesh_slice_devices > 0) {
    // A compiled (MaxText) pipeline: stages or circular repeats, no split backward.
    schedules = {ScheduleKind::k1F1B, ScheduleKind::kInterleaved};
  } else if (schedules.empty()) {
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
    } else if (s == ScheduleKind::kInterleaved && options.fsdp2_native) {
      variants.emplace_back(s, 2);
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
  return variants;
}

// Megatron's granularities, or for a per-tensor-policy job (MaxText) its own policy and every
// named policy of its framework a search should try (NamedTensorPolicy::searched).
std::vector<RecomputeOption> default_recompute(const JobSpec& base) {
  // DeepSeek-V4's block checkpoints whole layers only (docs/deepseek-v4.md): no selective set.
  for (const LayerSpec& l : base.model.layers) {
    if (l.has_attention() && l.attention.kind == AttentionKind::kCompressed) {
      return {{RecomputeKind::kNone, 0}, {RecomputeKind::kFull, 0}};
    }
  }
  if (base.runtime.recompute.granularity != RecomputeGranularity::kTensors) {
    return {{RecomputeKind::kNone, 0}, {RecomputeKind::kSelective, 0}, {RecomputeKind::kFull, 0}};
  }
  // The job's own policy, then the ones the MaxText adapter names for a layout search.
  std::vector<RecomputeOption> out = {{RecomputeKind::kTensorPolicy}};
  for (const NamedTensorPolicy& p : base.runtime.tensor_policies) {
    if (p.searched) out.push_back({RecomputeKind::kTensorPolicy, 0, &p});
  }
  return out;
}

Axes axes_of(const JobSpec& base, const Facts& f, const Grid& grid, const SpaceOptions& options) {
  Axes a;
  a.moe = f.experts_gcd > 0;
  a.tp =
      !grid.tp.empty() ? grid.tp : divisors(f.tp_beyond_node ? f.world : f.gpus_per_node, f.world);
  a.pp = !grid.pp.empty() ? grid.pp : divisors(f.world, f.layers);
  a.cp = grid.cp;
  if (a.cp.empty()) {
    for (const int d : divisors(f.world, f.world)) {
      if (d == 1 || f.seq % (2 * d) == 0) a.cp.push_back(d);
    }
  }
  a.ep =
      !grid.ep.empty() ? grid.ep : (a.moe ? divisors(f.world, f.experts_gcd) : std::vector<int>{1});
  a.etp_grid = grid.etp;
  a.variants = schedule_variants(f, grid, options);
  a.mbs = !grid.mbs.empty() ? grid.mbs : options.default_mbs;
  const bool native = options.fsdp2_native;
  a.mesh = !base.parallel.mesh.empty();
  a.recompute = !grid.recompute.empty() ? resolve_recompute(base, grid)
                : native                ? std::vector<RecomputeOption>{{RecomputeKind::kNone, 0},
                                                                       {RecomputeKind::kOpPolicy, 0},
                                                                       {RecomputeKind::kEveryN, 2},
                                                                       {RecomputeKind::kFull, 0}}
                                        : default_recompute(base);
  a.sharding = !grid.sharding.empty() ? grid.sharding
               : native               ? std::vector<Sharding>{Sharding::kFsdp2}
               : a.mesh ? std::vector<Sharding>{Sharding::kFsdp}  // the mesh decides it
                        : std::vector<Sharding>{Sharding::kDistributedOptimizer, Sharding::kFsdp};
  a.replicate = !grid.replicate.empty() ? grid.replicate
                : native                ? divisors(f.world, f.world)
                                        : std::vector<int>{1};
  a.bucket = !grid.bucket_bytes.empty()
                 ? grid.bucket_bytes
                 : std::vector<std::int64_t>{base.parallel.ddp_bucket_size_bytes};
  return a;
}

}  // namespace

// One pass over the Cartesian product: a mixed-radix counter over the axes, the last axis
// fastest (the same order as nesting one loop per axis).
Enumeration enumerate(const JobSpec& base, const Grid& grid, const SpaceOptions& options,
                      const std::atomic<bool>* stop) {
  const Facts f = facts_of(base, options);
  const Axes ax = axes_of(base, f, grid, options);
  enum {
    kTp,
    kPp,
    kCp,
    kEp,
    kEtp,
    kVariant,
    kMbs,
    kRecompute,
    kSharding,
    kBucket,
    kReplicate,
    kNumAxes
  };
  std::vector<int> etps = ax.tp.empty() ? std::vector<int>{} : ax.etp(ax.tp[0]);
  std::array<std::size_t, kNumAxes> size = {
      ax.tp.size(),       ax.pp.size(),       ax.cp.size(),       ax.ep.size(),
      etps.size(),        ax.variants.size(), ax.mbs.size(),      ax.recompute.size(),
      ax.sharding.size(), ax.bucket.size(),   ax.replicate.size()};
  Enumeration out;
  std::size_t combinations = 1;
  for (const std::size_t n : size) {
    if (n == 0) return out;  // an empty axis: nothing to enumerate
    // ETP's axis varies with TP: bound it by the largest it can be (2 values, or the grid's).
    combinations = n > kMaxEnumerated / combinations ? kMaxEnumerated + 1 : combinations * n;
  }
  if (combinations > kMaxEnumerated) {
    bad_grid(
        fmt::format("the axes span more than {} combinations; pin some axes with --grid or "
                    "layout flags",
                    kMaxEnumerated));
  }
  std::array<std::size_t, kNumAxes> at{};
  Candidate c;
  while (true) {
    c.tp = ax.tp[at[kTp]];
    c.pp = ax.pp[at[kPp]];
    c.cp = ax.cp[at[kCp]];
    c.ep = ax.ep[at[kEp]];
    c.etp = etps[at[kEtp]];
    std::tie(c.schedule, c.vpp) = ax.variants[at[kVariant]];
    c.mbs = ax.mbs[at[kMbs]];
    c.recompute = ax.recompute[at[kRecompute]];
    c.sharding = ax.sharding[at[kSharding]];
    c.bucket_bytes = ax.bucket[at[kBucket]];
    c.dp_replicate = ax.replicate[at[kReplicate]];
    ++out.enumerated;
    if ((out.enumerated & 4095) == 0 && stop != nullptr && stop->load(std::memory_order_relaxed)) {
      out.stopped = true;
      return out;
    }
    Rule r = check(f, c);
    if (r == Rule::kLegal && c.dp_replicate > 1) {
      // HSDP needs FSDP2 and a replicate degree that divides DP.
      const DataParallelSizes dps = data_parallel_sizes(f.world, c.tp, c.pp, c.cp, c.etp, c.ep);
      if (c.sharding != Sharding::kFsdp2 || dps.dp % c.dp_replicate != 0) r = Rule::kWorldDense;
    }
    if (r != Rule::kLegal) {
      ++out.illegal_by_rule[static_cast<std::size_t>(r)];
    } else {
      const DataParallelSizes dps = data_parallel_sizes(f.world, c.tp, c.pp, c.cp, c.etp, c.ep);
      c.dp = static_cast<int>(dps.dp);
      c.expert_dp = static_cast<int>(dps.expert_dp > 0 ? dps.expert_dp : 1);
      out.legal.push_back(c);
      if (out.legal.size() > kMaxLegalCandidates) {
        bad_grid(
            fmt::format("more than {} legal layouts to project; pin some axes with --grid "
                        "or layout flags",
                        kMaxLegalCandidates));
      }
    }
    int axis = kNumAxes - 1;  // advance the counter, innermost axis first
    while (axis >= 0 &&
           ++at[static_cast<std::size_t>(axis)] == size[static_cast<std::size_t>(axis)]) {
      at[static_cast<std::size_t>(axis)] = 0;
      --axis;
    }
    if (axis < 0) break;
    if (axis == kTp) {  // the ETP values follow TP
      etps = ax.etp(ax.tp[at[kTp]]);
      size[kEtp] = etps.size();
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------ re-layout

void apply_candidate(const Candidate& c, int nodes, JobSpec& job) {
  if (nodes > 0) job.cluster.nodes = nodes;
  ParallelSpec& p = job.parallel;
  p.distributed_optimizer = c.sharding == Sharding::kDistributedOptimizer;
  p.fsdp = c.sharding == Sharding::kFsdp    ? FsdpKind::kZero3
           : c.sharding == Sharding::kFsdp2 ? FsdpKind::kFsdp2
                                            : FsdpKind::kNone;
  p.ddp_bucket_size_bytes = c.bucket_bytes;
  p.dp_replicate = c.sharding == Sharding::kFsdp2 ? c.dp_replicate : 1;
  // Sizes, balanced stages, MBS, schedule, and what the framework ties to them by the rules the
  // job carries: sequence parallelism, the overlaps, FSDP's reshard, the accumulation rounds.
  relayout(job, choice_of(c));
  relayout_mesh(job);  // a mesh job: its axes, torus places and sharding follow the sizes
  // The recompute choice as the framework's selective set and named policies read it.
  apply_recompute(job, c.recompute);
}

JobSpec make_job(const JobSpec& base, const Candidate& c, int nodes) {
  JobSpec job = base;
  apply_candidate(c, nodes, job);
  return job;
}

}  // namespace projector::sweep
