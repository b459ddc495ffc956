// Benchmark-anchored performance and memory projections from a measured profile.
#include "projector/profile/benchmark.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "projector/cost/cost_cache.h"
#include "projector/job/spec.h"
#include "projector/util/error.h"
#include "traced_ops.h"

namespace projector::profile {
namespace {

using Json = nlohmann::ordered_json;

double ms(double s) {
  return s * 1e3;
}

const ModelComparison& require_model(const MeasuredProfile& p) {
  if (!p.model.present) {
    throw InputError({p.trace, 0, 0}, "model",
                     "the measured profile has no model comparison; write it with `projector "
                     "profile --trace T --config C --json P`");
  }
  return p.model;
}

// Iteration time grows by `extra_s`; every rate derived from it scales down alike.
void add_iteration_time(PerfReport& rep, double extra_s) {
  if (extra_s <= 0.0 || rep.iteration_s <= 0.0) return;
  const double f = rep.iteration_s / (rep.iteration_s + extra_s);
  rep.iteration_s += extra_s;
  rep.tokens_per_s *= f;
  rep.tokens_per_s_per_gpu *= f;
  rep.model_tflops_per_gpu *= f;
  rep.hardware_tflops_per_gpu *= f;
  rep.mfu *= f;
}

std::string class_key(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm:
      return "gemm";
    case OpKind::kGroupedGemm:
      return "grouped_gemm";
    case OpKind::kAttention:
      return op.phase == WorkPhase::kF || op.recompute ? "attention_fwd" : "attention_bwd";
    case OpKind::kMemoryBound:
      return std::string(to_string(cost_class(op.mem_class)));
    case OpKind::kCollective:
      return fmt::format("{} {}", to_string(op.group), to_string(op.collective));
    case OpKind::kHostTransfer:
      return "host_transfer";
  }
  return "?";
}

// Per class, the time pipeline rank 0 spends per iteration (op time x layers x microbatches;
// collectives as exposed on the compute stream) plus the optimizer step.
std::map<std::string, double> class_totals(const PerfReport& rep) {
  std::map<std::string, double> out;
  for (const ChunkTiming& ct : rep.chunks) {
    if (ct.pp_rank != 0) continue;
    for (const PricedOp& po : ct.ops) {
      out[class_key(po.op)] += ms(po.exposed_s) * po.repeat * rep.num_microbatches;
    }
  }
  if (!rep.optimizer_s_per_rank.empty()) out["optimizer"] += ms(rep.optimizer_s_per_rank[0]);
  return out;
}

std::string group_text(const CommGroup& g) {
  return fmt::format("{} ranks on {} node(s)", g.size, g.nodes);
}

void restore_layout(const BenchLayout& b, const JobSpec& t, std::vector<std::string>& out) {
  const ParallelSpec& p = t.parallel;
  if (p.pp != b.pp || p.vpp != b.vpp) {
    out.push_back(fmt::format(
        "pipeline PP {} VPP {} -> PP {} VPP {}: the schedule, its bubble and the stage-to-stage "
        "activation transfers are simulated; every stage reuses the measured ratios",
        b.pp, b.vpp, p.pp, p.vpp));
  }
  if (p.ep != b.ep) {
    out.push_back(fmt::format(
        "expert parallelism {} -> {}: token all-to-all priced by the collective model on the "
        "target group; expert GEMMs re-derived with the measured grouped-GEMM ratio",
        b.ep, p.ep));
  }
  if (p.tp != b.tp || p.cp != b.cp) {
    out.push_back(fmt::format(
        "TP {} CP {} -> TP {} CP {}: GEMM and attention shapes re-derived with the measured "
        "efficiency ratios; TP/CP collectives priced by the collective model",
        b.tp, b.cp, p.tp, p.cp));
  }
  if (t.cluster.world_size() != b.world || t.dp() != b.dp) {
    out.push_back(fmt::format(
        "{} GPU(s), DP {} -> {} GPU(s) on {} node(s), DP {}: gradient reduction and parameter "
        "gathers priced by the collective model",
        b.world, b.dp, t.cluster.world_size(), t.cluster.nodes, t.dp()));
  }
  if (t.model.num_layers() != b.num_layers) {
    out.push_back(fmt::format("layers {} -> {}: the measured ratios apply to every layer",
                              b.num_layers, t.model.num_layers()));
  }
  if (t.runtime.micro_batch_size != b.mbs || t.runtime.seq_length != b.seq) {
    out.push_back(
        fmt::format("microbatch {} x {} tokens -> {} x {}: ratios carried to the new shapes", b.mbs,
                    b.seq, t.runtime.micro_batch_size, t.runtime.seq_length));
  }
}

}  // namespace

std::shared_ptr<const MeasuredScale> measured_scale(const MeasuredProfile& p) {
  const ModelComparison& m = require_model(p);
  auto s = std::make_shared<MeasuredScale>();
  s->source = std::filesystem::path(p.trace).filename().string();
  s->ratio = m.ratio;
  for (const CollectiveRatio& c : m.collectives) {
    if (c.ratio > 0.0) s->collectives.push_back({c.kind, c.group, c.ratio});
  }
  return s;
}

std::vector<std::string> restoration_steps(const MeasuredProfile& p, const JobSpec& t) {
  const ModelComparison& m = require_model(p);
  std::vector<std::string> out;
  for (const std::string& r : m.bench.reductions) out.push_back("bench ran reduced: " + r);
  restore_layout(m.bench, t, out);
  if (!p.has_backward) {
    out.push_back(
        "no backward in the trace: B and W ops of a measured class take its forward "
        "ratio; unmeasured classes (attention backward) keep the kernel models");
  }
  if (!m.has_output && t.parallel.stages.back().has_output) {
    out.push_back("no output head in the trace: logits and loss use the ratios of their classes");
  }
  if (!p.has_optimizer) out.push_back("no optimizer step in the trace: the optimizer is modelled");
  for (int c = 0; c < kNumCostClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (m.ratio[i] <= 0.0) {
      out.push_back(
          fmt::format("{}: not measured, kernel model", to_string(static_cast<CostClass>(c))));
    }
  }
  for (const CollectiveRatio& c : m.collectives) {
    if (c.ratio > 0.0) {
      out.push_back(fmt::format("{} measured on {} (ratio {:.2f}); any other group is modelled",
                                to_string(c.kind), group_text(c.group), c.ratio));
    }
  }
  return out;
}

BenchmarkProjection project_benchmark(const JobSpec& target, const MeasuredProfile& p,
                                      const PerfOptions& options, bool compare) {
  const ModelComparison& m = require_model(p);
  if (p.model.bench.accelerator != target.cluster.accelerator.name) {
    throw InputError({target.source, 0, 0}, "--hardware",
                     fmt::format("the profile was measured on {} but the job runs on {}; measured "
                                 "ratios do not carry across accelerators",
                                 p.model.bench.accelerator, target.cluster.accelerator.name));
  }
  // Ratios are per op shape family: a profile of another model (another hidden size) says
  // nothing about this one's GEMMs.
  if (p.model.bench.hidden != target.model.hidden_size) {
    throw InputError(
        {target.source, 0, 0}, "hidden_size",
        fmt::format("the profile ({}) was measured on a model of hidden size {} but "
                    "the job's is {}; profile this model (fewer layers will do)",
                    p.model.bench.config, p.model.bench.hidden, target.model.hidden_size));
  }
  BenchmarkProjection b;
  b.restored = restoration_steps(p, target);
  CostCache cache(target.cluster.accelerator, target.cluster.network, 1024, measured_scale(p));
  PerfOptions po = options;
  po.keep_op_table = true;
  b.report = project_performance(target, cache, po);
  // Measured time without a modelled op, per microbatch, for every microbatch of the target.
  const double per_mb = (m.unmapped_ms + m.host_idle_ms) / std::max(1, m.microbatches_in_step);
  b.overhead_ms = per_mb * b.report.num_microbatches;
  add_iteration_time(b.report, b.overhead_ms / 1e3);
  if (b.overhead_ms > 0.0) {
    b.restored.push_back(fmt::format(
        "measured time no modelled op stands for ({:.3f} ms per microbatch: copies, memsets, "
        "unmodelled kernels, host idle) added for {} microbatch(es): {:.3f} ms",
        per_mb, b.report.num_microbatches, b.overhead_ms));
  }
  double step = 0.0;
  detail::for_each_traced_op(p, b.report, [&](const PricedOp& po2) {
    step += ms(po2.exposed_s) * po2.repeat * m.microbatches_in_step;
  });
  if (p.has_optimizer)
    step += ms(b.report.optimizer_s_per_rank[static_cast<std::size_t>(m.bench.pp_rank)]);
  b.step_equivalent_ms = step + m.unmapped_ms + m.host_idle_ms;
  if (compare) {
    PerfOptions plain = options;
    plain.keep_op_table = true;
    b.simulated = project_performance(target, plain);
    b.has_simulated = true;
    const auto sim = class_totals(b.simulated);
    const auto anc = class_totals(b.report);
    for (const auto& [name, t] : sim) {
      const auto it = anc.find(name);
      b.table.push_back({name, t, it == anc.end() ? 0.0 : it->second});
    }
    b.table.push_back({"measured overhead", 0.0, b.overhead_ms});
  }
  return b;
}

std::string benchmark_text(const BenchmarkProjection& b, const MeasuredProfile& p) {
  std::string out = fmt::format("\n-- Benchmark-anchored on {} ({}, {:.3f} ms step) --\n", p.trace,
                                p.device, p.step_ms);
  out += fmt::format(
      "  the traced step's blocks and phases, anchored: {:.3f} ms vs {:.3f} ms traced ({:+.2f} "
      "%)\n",
      b.step_equivalent_ms, p.step_ms, 100.0 * (b.step_equivalent_ms - p.step_ms) / p.step_ms);
  out += "  restored analytically or kept modelled:\n";
  for (const std::string& r : b.restored) out += fmt::format("    - {}\n", r);
  if (b.has_simulated) {
    out += fmt::format("\n  {:<28} {:>14} {:>14} {:>8}\n", "op class (pipeline rank 0)",
                       "simulated ms", "measured ms", "ratio");
    for (const ClassRow& r : b.table) {
      out +=
          fmt::format("  {:<28} {:>14.3f} {:>14.3f} {:>8}\n", r.name, r.simulated_ms, r.anchored_ms,
                      r.simulated_ms > 0.0 ? fmt::format("{:.3f}", r.anchored_ms / r.simulated_ms)
                                           : std::string("-"));
    }
    out += fmt::format("  {:<28} {:>14.3f} {:>14.3f} {:>8.3f}\n", "iteration",
                       ms(b.simulated.iteration_s), ms(b.report.iteration_s),
                       b.report.iteration_s / b.simulated.iteration_s);
  }
  return out;
}

std::string benchmark_json(const BenchmarkProjection& b, const MeasuredProfile& p) {
  Json j;
  j["profile_trace"] = p.trace;
  j["device"] = p.device;
  j["traced_step_ms"] = p.step_ms;
  j["step_equivalent_ms"] = b.step_equivalent_ms;
  j["overhead_ms"] = b.overhead_ms;
  j["restored"] = b.restored;
  if (b.has_simulated) {
    Json rows = Json::array();
    for (const ClassRow& r : b.table) {
      rows.push_back(
          {{"class", r.name}, {"simulated_ms", r.simulated_ms}, {"measured_ms", r.anchored_ms}});
    }
    j["comparison"] = rows;
    j["iteration_ms"] = {{"simulated", ms(b.simulated.iteration_s)},
                         {"measured", ms(b.report.iteration_s)}};
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

MemoryAnchor anchor_memory(const MeasuredProfile& p, const MemoryReport& target) {
  const ModelComparison& m = require_model(p);
  if (!p.memory.present) {
    throw InputError({p.trace, 0, 0}, "memory",
                     "the trace has no caching-allocator samples; record it with "
                     "torch.profiler.profile(profile_memory=True)");
  }
  if (!p.has_backward) {
    throw InputError({p.trace, 0, 0}, "memory",
                     "the trace is forward-only: its allocator peak holds no gradients, "
                     "optimizer state or saved activations, so it cannot anchor a training "
                     "memory projection");
  }
  MemoryAnchor a;
  a.measured_allocated_bytes = p.memory.allocated_bytes;
  a.measured_reserved_bytes = p.memory.reserved_bytes;
  a.bench_model_allocated_bytes = m.model_allocated_bytes;
  a.bench_model_fragmentation_bytes = m.model_fragmentation_bytes;
  a.live_excess_bytes = a.measured_allocated_bytes - a.bench_model_allocated_bytes;
  a.allocator_excess_bytes =
      (a.measured_reserved_bytes - a.measured_allocated_bytes) - a.bench_model_fragmentation_bytes;
  a.target_model_bytes = target.peak_point_bytes;
  a.anchored_bytes = a.target_model_bytes + a.live_excess_bytes + a.allocator_excess_bytes;
  a.capacity_bytes = target.capacity_bytes;
  if (a.capacity_bytes > 0.0) {
    a.verdict = a.anchored_bytes <= a.capacity_bytes ? MemoryVerdict::kFits : MemoryVerdict::kOom;
  }
  return a;
}

std::string memory_anchor_text(const MemoryAnchor& a, const MeasuredProfile& p) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  return fmt::format(
      "\n-- Memory anchored on the measured allocator peak of {} --\n"
      "  measured at the bench: allocated {:.2f} GiB, reserved {:.2f} GiB\n"
      "  modelled at the bench: allocated {:.2f} GiB, fragmentation {:.2f} GiB\n"
      "  residuals carried to the target: live tensors {:+.2f} GiB, allocator {:+.2f} GiB\n"
      "  target: modelled peak {:.2f} GiB -> anchored {:.2f} GiB of {:.2f} GiB: {}\n",
      p.trace, a.measured_allocated_bytes / gib, a.measured_reserved_bytes / gib,
      a.bench_model_allocated_bytes / gib, a.bench_model_fragmentation_bytes / gib,
      a.live_excess_bytes / gib, a.allocator_excess_bytes / gib, a.target_model_bytes / gib,
      a.anchored_bytes / gib, a.capacity_bytes / gib, to_string(a.verdict));
}

std::string memory_anchor_json(const MemoryAnchor& a, const MeasuredProfile& p) {
  Json j = {{"profile_trace", p.trace},
            {"measured_allocated_bytes", a.measured_allocated_bytes},
            {"measured_reserved_bytes", a.measured_reserved_bytes},
            {"bench_model_allocated_bytes", a.bench_model_allocated_bytes},
            {"bench_model_fragmentation_bytes", a.bench_model_fragmentation_bytes},
            {"live_excess_bytes", a.live_excess_bytes},
            {"allocator_excess_bytes", a.allocator_excess_bytes},
            {"target_model_bytes", a.target_model_bytes},
            {"anchored_bytes", a.anchored_bytes},
            {"capacity_bytes", a.capacity_bytes},
            {"verdict", std::string(to_string(a.verdict))}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector::profile
