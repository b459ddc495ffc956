// The human report of `projector profile` and the fitted-efficiency fragment.
#include <fmt/format.h>

#include <algorithm>

#include "projector/profile/profile.h"

namespace projector::profile {
namespace {

std::string layers_line(const char* phase, const LayerStructure& l) {
  if (!l.found) return fmt::format("  {} layers: none found\n", phase);
  std::vector<std::pair<double, int>> top;
  for (int k = 0; k < kNumKernelClasses; ++k) {
    if (l.layer_class_ms[static_cast<std::size_t>(k)] > 0.0)
      top.emplace_back(l.layer_class_ms[static_cast<std::size_t>(k)], k);
  }
  std::sort(top.rbegin(), top.rend());
  std::string parts;
  for (std::size_t i = 0; i < top.size() && i < 5; ++i) {
    parts += fmt::format("{}{} {:.3f}", i ? ", " : "",
                         to_string(static_cast<KernelClass>(top[i].second)), top[i].first);
  }
  return fmt::format(
      "  {} layers: {} per step, {} kernels each ({:.0f} % of the phase's kernels), "
      "{:.3f} ms per layer ({})\n",
      phase, l.repeats, l.period_kernels, 100.0 * l.coverage, l.layer_ms, parts);
}

std::string model_text(const MeasuredProfile& p) {
  const ModelComparison& m = p.model;
  const BenchLayout& b = m.bench;
  std::string out = fmt::format(
      "\nAgainst the cost models (bench job {} on {}: TP{} PP{} CP{} EP{} DP{}, {} GPU(s); "
      "pipeline rank {}, {} layer(s), {} microbatch(es) per step; embedding {}, output head {})\n",
      b.config, b.accelerator, b.tp, b.pp, b.cp, b.ep, b.dp, b.world, b.pp_rank, b.layers_on_rank,
      m.microbatches_in_step, m.has_embedding ? "traced" : "not in the trace",
      m.has_output ? "traced" : "not in the trace");
  for (const std::string& r : b.reductions) out += fmt::format("  bench reduction: {}\n", r);
  out += fmt::format("  {:<16} {:>12} {:>12} {:>10}\n", "cost class", "measured ms", "model ms",
                     "ratio");
  for (int c = 0; c < kNumCostClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    if (m.measured_ms[i] <= 0.0 && m.model_ms[i] <= 0.0) continue;
    out += fmt::format("  {:<16} {:>12.3f} {:>12.3f} {:>10}\n",
                       to_string(static_cast<CostClass>(c)), m.measured_ms[i], m.model_ms[i],
                       m.ratio[i] > 0.0 ? fmt::format("{:.3f}", m.ratio[i]) : std::string("-"));
  }
  for (const CollectiveRatio& c : m.collectives) {
    out += fmt::format("  {:<16} {:>12.3f} {:>12.3f} {:>10}   (group of {} on {} node(s))\n",
                       to_string(c.kind), c.measured_ms, c.model_ms,
                       c.ratio > 0.0 ? fmt::format("{:.3f}", c.ratio) : std::string("-"),
                       c.group.size, c.group.nodes);
  }
  out += fmt::format(
      "  measured time no modelled op stands for: {:.3f} ms (copies, memsets, "
      "unrecognised or unmodelled kernels); host idle {:.3f} ms\n",
      m.unmapped_ms, m.host_idle_ms);
  out += fmt::format("  modelled step (same blocks and phases): {:.3f} ms vs traced {:.3f} ms\n",
                     m.model_step_ms, p.step_ms);
  for (const FittedValue& f : m.fitted) {
    out += fmt::format("  fitted {}: {:.3f} -> {:.3f}\n", f.key, f.current, f.fitted);
  }
  for (const std::string& w : m.warnings) out += fmt::format("  note: {}\n", w);
  return out;
}

}  // namespace

std::string profile_text(const MeasuredProfile& p) {
  std::string out = fmt::format("Measured profile of {} ({}{}, {:.1f} MiB of JSON)\n", p.trace,
                                p.device.empty() ? "unknown device" : p.device,
                                p.gzip ? ", gzip" : "", p.json_mib);
  const double err = p.reference_step_ms > 0.0
                         ? 100.0 * (p.step_ms - p.reference_step_ms) / p.reference_step_ms
                         : 0.0;
  out += fmt::format("  steps: {} with GPU work ({}); {} averaged\n", p.steps.size(), p.step_source,
                     p.steps_used);
  out += fmt::format(
      "  step time from the GPU timeline: {:.3f} ms; the trace's own: {}\n", p.step_ms,
      p.reference_step_ms > 0.0
          ? fmt::format("{:.3f} ms ({}), {:+.2f} %", p.reference_step_ms, p.reference, err)
          : p.reference);
  out += fmt::format(
      "  per step: kernels {:.3f} ms, GPU busy {:.3f} ms, host idle {:.3f} ms "
      "(gaps over {:.0f} us)\n",
      p.kernel_ms, p.busy_ms, p.host_idle_ms, p.launch_gap_us);
  out += fmt::format("  phases: {}{}{} ({})\n", "forward", p.has_backward ? ", backward" : "",
                     p.has_optimizer ? ", optimizer" : "", p.phase_source);
  out += fmt::format(
      "  attributed to known op classes: {:.2f} % of kernel time; residual {:.3f} "
      "ms per step\n",
      100.0 * p.attributed_fraction, p.residual_ms);
  out += fmt::format("\n  {:<15} {:>8} {:>11} {:>11} {:>10} {:>10} {:>10} {:>7}\n", "class",
                     "kernels", "kernel ms", "wall ms", "F ms", "B ms", "opt ms", "%");
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const ClassTime& c = p.classes[static_cast<std::size_t>(k)];
    if (c.kernels <= 0.0) continue;
    out += fmt::format(
        "  {:<15} {:>8.1f} {:>11.3f} {:>11.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>6.1f}%\n",
        to_string(static_cast<KernelClass>(k)), c.kernels, c.kernel_ms, c.wall_ms, c.phase_ms[0],
        c.phase_ms[1], c.phase_ms[2], p.kernel_ms > 0.0 ? 100.0 * c.kernel_ms / p.kernel_ms : 0.0);
  }
  for (const auto& [name, ms] : p.top_unattributed) {
    out += fmt::format("  unattributed {:.3f} ms: {}\n", ms, name.substr(0, 100));
  }
  out += "\n" + layers_line("forward", p.forward_layers);
  if (p.has_backward) out += layers_line("backward", p.backward_layers);
  if (!p.gemms.empty()) {
    out += fmt::format("\n  {:>24} {:>6} {:>5} {:>10} {:>9} {:>10} {:>9} {:>8}\n",
                       "GEMM m x n x k (batch)", "dtype", "count", "us", "TFLOP/s", "model us",
                       "TFLOP/s", "meas/mod");
    for (std::size_t i = 0; i < p.gemms.size() && i < 12; ++i) {
      const GemmStat& g = p.gemms[i];
      out +=
          fmt::format("  {:>24} {:>6} {:>5} {:>10.1f} {:>9.1f} {:>10} {:>9} {:>8}\n",
                      fmt::format("{}x{}x{}{}", g.m, g.n, g.k,
                                  g.batch > 1 ? fmt::format(" ({})", g.batch) : ""),
                      to_string(g.dtype), g.count, g.measured_us, g.flops() / g.measured_us / 1e6,
                      g.model_us > 0.0 ? fmt::format("{:.1f}", g.model_us) : "-",
                      g.model_us > 0.0 ? fmt::format("{:.1f}", g.flops() / g.model_us / 1e6) : "-",
                      g.model_us > 0.0 ? fmt::format("{:.2f}", g.measured_us / g.model_us) : "-");
    }
  }
  for (const CollectiveStat& c : p.collectives) {
    out += fmt::format("  collective {:<15} group {:>4} message {:>12} calls {:>6.1f}  {:.3f} ms\n",
                       to_string(c.cls), c.group_size > 0 ? std::to_string(c.group_size) : "?",
                       c.message_bytes > 0.0 ? fmt::format("{:.0f} B", c.message_bytes) : "?",
                       c.calls, c.kernel_ms);
  }
  if (p.memory.present) {
    out += fmt::format(
        "\n  caching allocator peak: allocated {:.3f} GiB, reserved {:.3f} GiB ({} "
        "samples)\n",
        p.memory.allocated_bytes / (1u << 30), p.memory.reserved_bytes / (1u << 30),
        p.memory.samples);
  }
  if (p.model.present) out += model_text(p);
  for (const std::string& n : p.notes) out += fmt::format("  note: {}\n", n);
  return out;
}

std::string fitted_yaml(const MeasuredProfile& p) {
  std::string out = fmt::format("# Calibration implied by {} (projector profile).\n", p.trace);
  out +=
      "# Paste under the accelerator file's calibration: block; each value carries its source.\n";
  for (const FittedValue& f : p.model.fitted) {
    out += fmt::format("{}: {{value: {:.4f}, source: \"{}\"}}  # was {:.4f}\n", f.key, f.fitted,
                       f.source, f.current);
  }
  return out;
}

}  // namespace projector::profile
