// Comparing projections with published measurements, and the error statistics.
#include "projector/validate/validate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/interval/interval.h"
#include "projector/job/accounting.h"
#include "projector/model/family.h"
#include "projector/util/error.h"
#include "projector/util/stats.h"
#include "projector/util/text.h"
#include "validate/run_config.h"

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double pct(double predicted, double measured) {
  return 100.0 * (predicted - measured) / measured;
}

// Quantile of sorted values with linear interpolation between closest ranks (numpy's default).
// Only positive, finite pairs compare (a NaN fails both tests).
bool comparable(double predicted, double measured) {
  return predicted > 0.0 && measured > 0.0 && std::isfinite(predicted) && std::isfinite(measured);
}

void add_metric(RunResult& r, const char* metric, double predicted, double measured,
                std::string basis) {
  if (!comparable(predicted, measured)) return;
  r.metrics.push_back({metric, predicted, measured, pct(predicted, measured), std::move(basis)});
}

// The measured throughput of an entry, best evidence first, with where it came from.
struct Evidence {
  std::optional<double> tokens;  // tokens/s per GPU
  bool tokens_measured = false;  // a measurement, not the data file's derivation
  std::string tokens_basis;
  std::optional<double> step;  // step time, s
  std::string step_basis = "measured";
};

// A run measured both with vanilla and with async tensor parallelism is compared on the variant
// its configuration describes: async when the mapped job overlaps TP communication (async TP,
// tp-comm-overlap), vanilla otherwise. Only the matching variant is used; the other configuration
// is a different job.
std::optional<double> tp_variant(const RunEntry::Measured& ms, const JobSpec& job,
                                 std::string& basis) {
  const bool async = job.parallel.tp_comm_overlap && job.parallel.tp > 1;
  const std::optional<double>& v =
      async ? ms.tokens_per_sec_per_gpu_async_tp : ms.tokens_per_sec_per_gpu_vanilla_tp;
  if (v) {
    basis = async ? "measured with async TP, as configured"
                  : "measured with vanilla TP, as configured (no async TP stated)";
  }
  return v;
}

Evidence throughput_evidence(const RunEntry& e, double gpus, const JobSpec& job) {
  const RunEntry::Measured& ms = e.measured;
  Evidence ev;
  ev.tokens_measured = true;
  if (ms.tokens_per_sec_per_gpu) {
    ev.tokens = ms.tokens_per_sec_per_gpu;
    ev.tokens_basis = "measured";
  } else if (const auto v = tp_variant(ms, job, ev.tokens_basis)) {
    ev.tokens = v;
  } else if (ms.tokens_per_sec_total && gpus > 0) {
    ev.tokens = *ms.tokens_per_sec_total / gpus;
    ev.tokens_basis = "measured total / GPUs";
  } else if (e.derived.tokens_per_sec_per_gpu) {
    ev.tokens = e.derived.tokens_per_sec_per_gpu;
    ev.tokens_basis = "derived by the data file";
    ev.tokens_measured = false;
  } else {
    ev.tokens_measured = false;
  }
  ev.step = ms.step_time_s;
  if (!ev.step && e.derived.step_time_s) {
    ev.step = e.derived.step_time_s;
    ev.step_basis = "derived by the data file";
  }
  return ev;
}

// What the prediction says in each of the entry's units.
struct Predicted {
  double tokens_per_gpu = 0.0;
  double step_s = 0.0;
  double tflops_per_gpu = 0.0;
  double mfu_pct = 0.0;
  double gpus = 0.0;
  double samples_total = 0.0;  // samples (sequences, rows) per second, all GPUs
};

// The summary's throughput error, predicted / measured throughput - 1, on the most direct
// measurement the entry has.
void throughput_error(const RunEntry::Measured& ms, const Evidence& ev, const Predicted& pr,
                      bool tflops_comparable, RunResult& r) {
  auto set_tp = [&r](double ratio, std::string basis) {
    if (!(ratio > 0.0) || !std::isfinite(ratio)) return;
    r.throughput_error_pct = 100.0 * (ratio - 1.0);
    r.throughput_basis = std::move(basis);
  };
  if (!(pr.tokens_per_gpu > 0) && !(pr.step_s > 0)) return;
  const std::string tokens_basis = "tokens_per_sec_per_gpu (" + ev.tokens_basis + ")";
  if (ev.tokens_measured) {
    set_tp(pr.tokens_per_gpu / *ev.tokens, tokens_basis);
  } else if (ms.samples_per_sec_total && pr.samples_total > 0) {
    set_tp(pr.samples_total / *ms.samples_per_sec_total, "samples_per_sec_total (measured)");
  } else if (ms.step_time_s && pr.step_s > 0) {
    set_tp(*ms.step_time_s / pr.step_s, "step_time_s (measured)");
  } else if (ms.tflops_per_gpu && tflops_comparable) {
    set_tp(pr.tflops_per_gpu / *ms.tflops_per_gpu, "tflops_per_gpu (source convention)");
  } else if (ms.mfu_pct && pr.mfu_pct > 0) {
    set_tp(pr.mfu_pct / *ms.mfu_pct, "mfu_pct");
  } else if (ev.tokens) {
    set_tp(pr.tokens_per_gpu / *ev.tokens, tokens_basis);
  } else if (ev.step && pr.step_s > 0) {
    set_tp(*ev.step / pr.step_s, "step_time_s (" + ev.step_basis + ")");
  }
}

// A measured peak in GiB (GB converted), when the entry states one.
std::optional<double> measured_peak_gib(const RunEntry::Measured& ms) {
  if (ms.peak_memory_gib) return ms.peak_memory_gib;
  if (ms.peak_memory_gb) return *ms.peak_memory_gb * 1e9 / kGiB;
  return std::nullopt;
}

// What a careful reader would not average over: the reason to keep the run out of the statistics,
// or "" (issue 30: contradictions were once resolved or dropped without a word).
std::string contradiction(const RunEntry& e, const MappedRun& m) {
  std::vector<std::string> found = e.contradictions;
  if (e.training.seq_len && e.model.seq_len && *e.training.seq_len != *e.model.seq_len) {
    found.push_back(
        fmt::format("training.seq_len {} and model.seq_len {} disagree (training's used)",
                    *e.training.seq_len, *e.model.seq_len));
  }
  const double hbm_gib =
      m.job.cluster.accelerator.hbm_bytes * std::max(1, m.job.cluster.devices_per_chip) / kGiB;
  const std::optional<double> peak = measured_peak_gib(e.measured);
  // 2 %: GB / GiB and rounding slack in how sources state a peak near the capacity.
  if (peak && hbm_gib > 0.0 && *peak > 1.02 * hbm_gib) {
    found.push_back(
        fmt::format("measured peak memory {:.1f} GiB is more than the {:.1f} GiB of HBM "
                    "of {}",
                    *peak, hbm_gib, m.job.cluster.accelerator.name));
  }
  if (found.empty()) return "";
  return "contradictory measurement: " + fmt::format("{}", fmt::join(found, "; "));
}

}  // namespace

MemoryMetricReading read_memory_metric(std::string_view memory_metric) {
  const std::string m = to_lower(memory_metric);
  const auto has = [&](const char* s) { return m.find(s) != std::string::npos; };
  MemoryMetricReading r;
  if (has("primus") && has("max mem")) {
    // PR15 print_rank_last_patches.py: "rocm max mem usage" is the largest ROCm SMI VRAM use
    // over the ranks, printed as bytes / 1024**3 with the label "GB".
    r.kind = MeasuredMemory::kDevice;
    r.gb_are_gib = true;
    r.note =
        "Primus' \"max mem\" is ROCm SMI's used VRAM, the whole device, logged as bytes / 1024^3 "
        "with the label GB (PR15): read as GiB and compared with the device total";
  } else if (has("usage_ratio")) {
    // PR15 print_rank_last_patches.py: Primus' hip / rocm "usage_ratio" is the device's used
    // memory (total - free, or ROCm SMI's used VRAM) over its total.
    r.kind = MeasuredMemory::kDevice;
    r.note = "Primus' usage_ratio: the whole device's used memory over its total (PR15)";
  } else if (has("rocm-smi") || has("nvidia-smi") || has("rocm smi")) {
    r.kind = MeasuredMemory::kDevice;
    r.note = "SMI used memory: the whole device, compared with the device total";
  } else if (has("allocated") && !has("reserved")) {
    r.kind = MeasuredMemory::kAllocated;
    r.note = "max_memory_allocated: compared with the allocated peak";
  }
  return r;
}

namespace {

void compare_memory(const RunEntry::Measured& ms, const Prediction& p, double hbm_gib,
                    RunResult& r) {
  const MemoryMetricReading reading = read_memory_metric(ms.memory_metric);
  std::optional<double> mem;
  std::string mem_basis;
  if (ms.peak_memory_pct && hbm_gib > 0.0) {
    mem = *ms.peak_memory_pct / 100.0 * hbm_gib;
    mem_basis =
        fmt::format("measured {:.1f} % of the device's {:.2f} GiB", *ms.peak_memory_pct, hbm_gib);
  } else if (ms.peak_memory_gib) {
    mem = ms.peak_memory_gib;
    mem_basis = "measured GiB";
  } else if (ms.peak_memory_gb && reading.gb_are_gib) {
    mem = *ms.peak_memory_gb;
    mem_basis = "measured 'GB' that are GiB";
  } else if (ms.peak_memory_gb) {
    mem = *ms.peak_memory_gb * 1e9 / kGiB;
    mem_basis = "measured GB converted to GiB";
  }
  if (mem && !ms.memory_metric.empty()) mem_basis += "; " + ms.memory_metric;
  if (mem && !reading.note.empty()) mem_basis += "; read as: " + reading.note;
  // Like with like (docs/memory.md "Validation").
  const std::optional<double>& predicted =
      reading.kind == MeasuredMemory::kAllocated ? p.peak_allocated_gib
      : reading.kind == MeasuredMemory::kDevice  ? p.peak_device_gib
                                                 : p.peak_memory_gib;
  if (mem && predicted && comparable(*predicted, *mem)) {
    add_metric(r, "peak_memory_gib", *predicted, *mem, mem_basis);
    r.memory_error_pct = pct(*predicted, *mem);
  }
}

void compare(const RunEntry& e, const MappedRun& m, RunResult& r) {
  const Prediction& p = r.predicted;
  const JobSpec& job = m.job;
  Predicted pr;
  pr.gpus = static_cast<double>(m.num_gpus);
  pr.tokens_per_gpu = p.tokens_per_sec_per_gpu;
  const ModelFlops flops = model_flops(job, m.flop_convention.options);
  const double flops_per_token =
      m.flop_convention.hardware ? flops.hardware_flops_per_token() : flops.model_flops_per_token();
  const double peak = job.cluster.accelerator.peak_flops(job.runtime.precision.params_dtype) *
                      std::max(1, job.cluster.devices_per_chip);  // per chip, as runs count
  const double tokens_per_step = static_cast<double>(job.tokens_per_iteration());
  pr.tflops_per_gpu = p.tokens_per_sec_per_gpu * flops_per_token / 1e12;
  pr.mfu_pct =
      peak > 0 ? 100.0 * p.tokens_per_sec_per_gpu * flops.model_flops_per_token() / peak : 0.0;
  pr.step_s = p.step_time_s > 0 ? p.step_time_s
              : p.tokens_per_sec_per_gpu > 0
                  ? tokens_per_step / (p.tokens_per_sec_per_gpu * pr.gpus)
                  : 0.0;

  // A sample is one sequence of seq_len tokens (a recommendation sample is one row: seq_len 1,
  // the projection's token), so samples/s = tokens/s / seq_len; never tokens compared as samples.
  const int seq = job.runtime.seq_length;
  pr.samples_total = seq > 0 ? pr.tokens_per_gpu * pr.gpus / seq : 0.0;

  const RunEntry::Measured& ms = e.measured;
  const Evidence ev = throughput_evidence(e, pr.gpus, job);
  if (ev.tokens)
    add_metric(r, "tokens_per_sec_per_gpu", pr.tokens_per_gpu, *ev.tokens, ev.tokens_basis);
  if (ms.samples_per_sec_total) {
    add_metric(r, "samples_per_sec_total", pr.samples_total, *ms.samples_per_sec_total,
               seq > 1 ? fmt::format("measured; predicted tokens/s / seq_len {}", seq)
                       : std::string("measured"));
  }
  if (ev.step) add_metric(r, "step_time_s", p.step_time_s, *ev.step, ev.step_basis);
  if (ms.tflops_per_gpu && m.flop_convention.comparable) {
    add_metric(r, "tflops_per_gpu", pr.tflops_per_gpu, *ms.tflops_per_gpu,
               "source convention: " + m.flop_convention.description);
  }
  if (ms.mfu_pct) {
    add_metric(r, "mfu_pct", pr.mfu_pct, *ms.mfu_pct, "model FLOPs / dense 16-bit peak");
  }
  throughput_error(ms, ev, pr, m.flop_convention.comparable, r);
  if (r.throughput_error_pct && p.skewed_tokens_per_sec_per_gpu && p.tokens_per_sec_per_gpu > 0) {
    // Every basis scales with throughput: the skewed error is the balanced one rescaled.
    const double ratio = *p.skewed_tokens_per_sec_per_gpu / p.tokens_per_sec_per_gpu;
    r.skewed_throughput_error_pct = (1.0 + *r.throughput_error_pct / 100.0) * ratio * 100.0 - 100.0;
  }
  const double hbm_gib =
      job.cluster.accelerator.hbm_bytes * std::max(1, job.cluster.devices_per_chip) / kGiB;
  compare_memory(ms, p, hbm_gib, r);
}

void add_group(std::vector<RegimeStats>& out, const std::vector<RunResult>& runs,
               const std::string& group, const std::string& value,
               bool (*pred)(const RunResult&, const std::string&)) {
  std::vector<double> errs;
  for (const RunResult& r : runs) {
    if (r.throughput_error_pct && r.excluded.empty() && pred(r, value))
      errs.push_back(*r.throughput_error_pct);
  }
  if (errs.empty()) return;
  out.push_back({group, value, error_stats(errs)});
}

std::string scale_band(int gpus) {
  if (gpus <= 64) return "<=64";
  if (gpus <= 1024) return "<=1024";
  return ">1024";
}

}  // namespace

namespace {

void summarize_coverage(const std::vector<RunResult>& runs, std::vector<CoverageStats>& out) {
  auto add = [&](const std::string& group, const std::string& value, const RunResult& r) {
    auto it = std::find_if(out.begin(), out.end(), [&](const CoverageStats& c) {
      return c.group == group && c.value == value;
    });
    if (it == out.end()) it = out.insert(out.end(), CoverageStats{group, value, 0, 0});
    ++it->runs;
    if (*r.in_range) ++it->inside;
  };
  for (const RunResult& r : runs) {
    if (!r.in_range || !r.excluded.empty()) continue;
    add("all", "all", r);
    add("model", r.recommendation ? "recommendation" : (r.moe ? "moe" : "dense"), r);
    add("accelerator", r.accelerator_family, r);
    for (const std::string& level : r.regime_levels) add("regime", level, r);
  }
  // "all", model, accelerator in order of appearance; the regime levels sorted, so a level's
  // finer levels follow it.
  std::stable_sort(out.begin(), out.end(), [](const CoverageStats& a, const CoverageStats& b) {
    const bool ra = a.group == "regime", rb = b.group == "regime";
    return ra != rb ? rb : (ra && a.value < b.value);
  });
}

}  // namespace

bool coverage_consistent(int inside, int runs, double p, double tail) {
  if (runs <= 0 || p <= 0.0 || p >= 1.0) return true;
  double below = 0.0, above = 0.0;
  for (int i = 0; i <= runs; ++i) {
    // Binomial probabilities in logs: runs choose i overflows a double past about 1,000 runs.
    const double log_pi = std::lgamma(runs + 1.0) - std::lgamma(i + 1.0) -
                          std::lgamma(runs - i + 1.0) + i * std::log(p) +
                          (runs - i) * std::log1p(-p);
    const double pi = std::exp(log_pi);
    if (i <= inside) below += pi;
    if (i >= inside) above += pi;
  }
  return below >= tail && above >= tail;
}

ErrorStats error_stats(const std::vector<double>& errors_pct) {
  ErrorStats s;
  s.count = static_cast<int>(errors_pct.size());
  if (errors_pct.empty()) return s;
  std::vector<double> abs_err;
  abs_err.reserve(errors_pct.size());
  double sum_abs = 0.0;
  double sum = 0.0;
  for (double e : errors_pct) {
    abs_err.push_back(std::fabs(e));
    sum_abs += std::fabs(e);
    sum += e;
  }
  std::sort(abs_err.begin(), abs_err.end());
  s.mape_pct = sum_abs / s.count;
  s.mean_signed_pct = sum / s.count;
  s.median_abs_pct = interpolated_quantile(abs_err, 0.5);
  s.p90_abs_pct = interpolated_quantile(abs_err, 0.9);
  return s;
}

namespace {

// The user's path over the runs that have a config; the free-text path's errors on the runs where
// both paths compared, beside the config path's on the same runs.
ConfigPathSummary summarize_config_path(const std::vector<RunResult>& runs) {
  ConfigPathSummary s;
  std::vector<double> tp, mem, ft_tp, ft_mem, same_tp;
  for (const RunResult& r : runs) {
    if (!r.config_path || !r.excluded.empty()) continue;
    const RunResult::ConfigPath& c = *r.config_path;
    ++s.runs;
    if (c.status == "ok") ++s.compared;
    if (c.status == "load_failed" || c.status == "projection_failed") ++s.failed;
    if (c.status == "ok" && c.predicted.out_of_memory) s.projected_oom.push_back(r.id);
    if (c.throughput_error_pct) tp.push_back(*c.throughput_error_pct);
    if (c.memory_error_pct) mem.push_back(*c.memory_error_pct);
    if (c.throughput_error_pct && r.throughput_error_pct) {
      ft_tp.push_back(*r.throughput_error_pct);
      same_tp.push_back(*c.throughput_error_pct);
    }
    if (c.memory_error_pct && r.memory_error_pct) ft_mem.push_back(*r.memory_error_pct);
  }
  s.throughput = error_stats(tp);
  s.memory = error_stats(mem);
  s.free_text_throughput = error_stats(ft_tp);
  s.free_text_memory = error_stats(ft_mem);
  s.same_runs_throughput = error_stats(same_tp);
  return s;
}

}  // namespace

ValidationSummary summarize(const std::vector<RunResult>& runs) {
  ValidationSummary s;
  s.runs = static_cast<int>(runs.size());
  std::vector<double> tp;
  std::vector<double> mem;
  for (const RunResult& r : runs) {
    if (r.status == "unmapped") ++s.unmapped;
    if (r.status == "invalid") ++s.invalid;
    if (r.status == "projection_failed") ++s.failed;
    if (r.status == "not_modelled") ++s.not_modelled;
    if (!r.excluded.empty()) {
      if (r.status == "ok") ++s.excluded;
      continue;  // shown with its reason, kept out of every statistic
    }
    if (r.throughput_error_pct) tp.push_back(*r.throughput_error_pct);
    if (r.memory_error_pct) mem.push_back(*r.memory_error_pct);
    if (r.status == "ok") ++s.compared;
    if (r.status == "ok" && r.predicted.out_of_memory) s.projected_oom.push_back(r.id);
    if (r.throughput_error_pct && r.skewed_throughput_error_pct) {
      ++s.skew_bracketed;
      if (*r.skewed_throughput_error_pct <= 0.0 && *r.throughput_error_pct >= 0.0) {
        s.within_skew_bracket.push_back(r.id);
      }
    }
  }
  s.throughput = error_stats(tp);
  s.memory = error_stats(mem);
  summarize_coverage(runs, s.coverage);
  s.config_path = summarize_config_path(runs);
  auto& g = s.by_regime;
  for (const char* v : {"dense", "moe", "recommendation"}) {
    add_group(g, runs, "model", v, [](const RunResult& r, const std::string& x) {
      return (r.recommendation ? "recommendation" : (r.moe ? "moe" : "dense")) == x;
    });
  }
  for (const char* v : {"AMD", "NVIDIA", "TPU", "other"}) {
    add_group(g, runs, "accelerator", v,
              [](const RunResult& r, const std::string& x) { return r.accelerator_family == x; });
  }
  for (const char* v : {"<=64", "<=1024", ">1024"}) {
    add_group(g, runs, "scale", v,
              [](const RunResult& r, const std::string& x) { return scale_band(r.num_gpus) == x; });
  }
  for (const char* v : {"with", "without"}) {
    add_group(g, runs, "pp", v,
              [](const RunResult& r, const std::string& x) { return r.pp == (x == "with"); });
    add_group(g, runs, "cp", v,
              [](const RunResult& r, const std::string& x) { return r.cp == (x == "with"); });
    add_group(g, runs, "ep", v,
              [](const RunResult& r, const std::string& x) { return r.ep == (x == "with"); });
    add_group(g, runs, "fp8", v,
              [](const RunResult& r, const std::string& x) { return r.fp8 == (x == "with"); });
  }
  // Keep a stable, readable order: by group in first-seen order, then value order as added.
  std::stable_sort(g.begin(), g.end(), [](const RegimeStats& a, const RegimeStats& b) {
    auto rank = [](const std::string& grp) {
      static const char* order[] = {"model", "accelerator", "scale", "pp", "cp", "ep", "fp8"};
      for (int i = 0; i < 7; ++i) {
        if (grp == order[i]) return i;
      }
      return 7;
    };
    return rank(a.group) < rank(b.group);
  });
  return s;
}

namespace {

// The verdict as `projector memory` gives it: with the run's memory range, scored without its
// family (`family`'s residuals left out).
void decide_memory_with_range(const ResidualTable& residuals, const Regime& regime,
                              const std::string& family, Prediction& p) {
  const auto mq = residual_quantiles(residuals, regime, ResidualMetric::kMemory, family);
  if (!mq || !p.peak_bytes) return;
  const Prediction::PeakBytes& b = *p.peak_bytes;
  const double fixed = b.point - b.allocator;
  const MemoryVerdict v =
      verdict_with_range(b.point, b.upper, fixed + b.allocator / (1.0 + mq->q90_pct / 100.0),
                         fixed + b.allocator / (1.0 + mq->q10_pct / 100.0), b.capacity);
  p.out_of_memory = v == MemoryVerdict::kOom;
}

// One entry: mapped, projected, compared. Everything it throws is this entry's failure.
// The run's own row of the residual table (same id and family), if it has one.
const ResidualRun* own_residual(const ResidualTable& residuals, const RunResult& r) {
  for (const ResidualRun& x : residuals.runs) {
    if (x.id == r.id && x.family == r.family) return &x;
  }
  return nullptr;
}

// The run's calibrated range, scored without its own family's residuals. A run of
// data/validation is judged as a new run would be: its projection with the constants fitted
// without its family (its leave-one-family-out error) against quantiles without its family.
void attach_range(const ResidualTable& residuals, const MappedRun& m, RunResult& r) {
  const Regime regime = classify_regime(m.job);
  r.regime_key = regime.key;
  for (const std::string& level : regime.levels) {
    if (level != "all") r.regime_levels.push_back(level);
  }
  const auto mq = residual_quantiles(residuals, regime, ResidualMetric::kMemory, r.family);
  if (mq && r.predicted.peak_memory_gib) {
    const double g = *r.predicted.peak_memory_gib;
    r.memory_range = {g / (1.0 + mq->q90_pct / 100.0), g / (1.0 + mq->q10_pct / 100.0)};
  }
  decide_memory_with_range(residuals, regime, r.family, r.predicted);
  r.range_refusal = range_refusal(residuals, regime, ResidualMetric::kThroughput, r.family);
  const auto q = residual_quantiles(residuals, regime, ResidualMetric::kThroughput, r.family);
  if (!q || r.predicted.tokens_per_sec_per_gpu <= 0.0) return;
  r.range_level = q->level;
  r.range_runs = q->runs;
  double p = r.predicted.tokens_per_sec_per_gpu;
  std::optional<double> error = r.throughput_error_pct;
  if (const ResidualRun* own = own_residual(residuals, r); own && own->throughput_pct && error) {
    r.lofo_error_pct = own->throughput_pct;
    p *= (1.0 + *own->throughput_pct / 100.0) / (1.0 + *error / 100.0);
    error = own->throughput_pct;
  }
  r.tokens_range = {p / (1.0 + q->q90_pct / 100.0), p / (1.0 + q->q10_pct / 100.0)};
  if (error) r.in_range = *error >= q->q10_pct && *error <= q->q90_pct;
}

// A run projected out of memory although it ran: the facts that decide the verdict which the entry
// leaves unstated (a stated one would have settled it), said on the run ("recompute not stated").
void note_unstated_memory_facts(const RunEntry& e, RunResult& r) {
  if (!r.predicted.out_of_memory) return;
  const RunEntry::Training& t = e.training;
  std::vector<std::string> unstated;
  if (t.recompute.empty()) unstated.push_back("recompute");
  if (t.fsdp.empty() && t.zero_stage.empty() && !t.distributed_optimizer && !t.fsdp_shard_degree &&
      t.parallelism.empty()) {
    unstated.push_back("sharding (FSDP / distributed optimizer)");
  }
  if (!t.micro_batch_size && !t.local_batch_size && !t.per_device_batch_size &&
      !t.batch_size_per_gpu) {
    unstated.push_back("micro batch size");
  }
  if (unstated.empty()) return;
  r.assumptions.push_back(fmt::format(
      "memory verdict: projected out of memory, but the run ran; not stated: {} (the defaults "
      "assumed for them decide the verdict)",
      fmt::join(unstated, ", ")));
}

// Projects `job`; a model the projections do not cover (status not_modelled) or a job they refuse
// (projection_failed) sets the status and reason and returns false.
bool run_projection(const ProjectFn& project, const JobSpec& job, Prediction& out,
                    std::string& status, std::string& reason) {
  try {
    out = project(job);
    return true;
  } catch (const NotModelledError& ex) {
    status = "not_modelled";
    reason = ex.what();
  } catch (const InputError& ex) {
    status = "projection_failed";
    reason = ex.what();
  }
  return false;
}

// The user's path: the run's framework config loaded by its adapter, as `projector performance
// -c CONFIG` with the config's args would, projected and compared like the free-text reading. The
// source's FLOP convention (how it counted TFLOP/s) is the free-text reading's: a fact of the
// source, not of the job.
RunResult::ConfigPath project_config(const RunEntry& e, const MappedRun& m,
                                     const ProjectFn& project, const std::string& data_dir,
                                     const ResidualTable& residuals, const std::string& family) {
  RunResult::ConfigPath c;
  c.config = e.config->path;
  MappedRun mc = m;
  try {
    mc.job = load_job(validate_detail::load_request_of(*e.config, data_dir));
  } catch (const InputError& ex) {
    c.status = "load_failed";
    c.reason = ex.what();
    return c;
  }
  c.warnings = mc.job.warnings;
  const int per_chip = std::max(1, mc.job.cluster.devices_per_chip);
  mc.num_gpus = static_cast<int>(mc.job.cluster.world_size() / per_chip);
  RunResult r;
  if (!run_projection(project, mc.job, r.predicted, c.status, c.reason)) return c;
  compare(e, mc, r);
  decide_memory_with_range(residuals, classify_regime(mc.job), family, r.predicted);
  c.predicted = r.predicted;
  c.metrics = std::move(r.metrics);
  c.throughput_error_pct = r.throughput_error_pct;
  c.throughput_basis = std::move(r.throughput_basis);
  c.memory_error_pct = r.memory_error_pct;
  c.status = c.metrics.empty() ? "no_measurement" : "ok";
  if (c.metrics.empty()) c.reason = "no measured metric that the projection predicts";
  return c;
}

RunResult validate_free_text(const RunEntry& e, const ProjectFn& project,
                             MappingCatalogue& catalogue, const ResidualTable& residuals,
                             MappedRun& m);
RunResult validate_mapped(const RunEntry& e, const ProjectFn& project,
                          const ResidualTable& residuals, const MappedRun& m);

RunResult validate_entry(const RunEntry& e, const ProjectFn& project, MappingCatalogue& catalogue,
                         const ResidualTable& residuals) {
  MappedRun m;
  if (e.ok() && e.described_by_config) {
    // The config is the run's reading: no second, free-text projection of it.
    m = validate_detail::map_config_run(e, catalogue);
    return validate_mapped(e, project, residuals, m);
  }
  RunResult r = validate_free_text(e, project, catalogue, residuals, m);
  if (e.ok() && e.config) {
    try {
      r.config_path = project_config(e, m, project, catalogue.data_dir(), residuals, r.family);
    } catch (const std::exception& ex) {  // the free-text result stands whatever this throws
      r.config_path = RunResult::ConfigPath{};
      r.config_path->config = e.config->path;
      r.config_path->status = "projection_failed";
      r.config_path->reason = ex.what();
    }
  }
  return r;
}

RunResult validate_free_text(const RunEntry& e, const ProjectFn& project,
                             MappingCatalogue& catalogue, const ResidualTable& residuals,
                             MappedRun& m) {
  RunResult r;
  r.id = e.id;
  r.excluded = e.exclude_from_statistics;
  if (!e.ok()) {
    r.status = "invalid";
    r.reason = e.errors.front();
    for (std::size_t i = 1; i < e.errors.size(); ++i) r.reason += "; " + e.errors[i];
    return r;
  }
  m = map_run(e, catalogue);
  return validate_mapped(e, project, residuals, m);
}

// A mapped run (from its entry or its config) projected and compared.
RunResult validate_mapped(const RunEntry& e, const ProjectFn& project,
                          const ResidualTable& residuals, const MappedRun& m) {
  RunResult r;
  r.id = e.id;
  r.excluded = e.exclude_from_statistics;
  r.assumptions = m.assumptions;
  r.framework = m.framework;
  // The source is its title up to the first comma (a container or a machine follows it).
  const std::string& model = !e.model.family.empty() ? e.model.family
                             : !e.model.name.empty() ? e.model.name
                                                     : m.job.model.name;
  r.family = e.source_title.substr(0, e.source_title.find(',')) + " | " + model;
  r.moe = m.moe;
  r.recommendation = m.job.model.family == ModelFamily::kRecommendation;
  r.accelerator_family = m.accelerator_family;
  r.num_gpus = m.num_gpus;
  r.pp = m.job.parallel.pp > 1;
  r.cp = m.job.parallel.cp > 1;
  r.ep = m.job.parallel.ep > 1;
  r.fp8 = m.fp8;
  if (!m.not_modelled.empty()) {
    r.status = "not_modelled";
    r.reason = m.not_modelled;
    return r;
  }
  if (!m.mapped) {
    r.status = "unmapped";
    r.reason = m.reason;
    return r;
  }
  if (const std::string c = contradiction(e, m); !c.empty()) {
    r.excluded = r.excluded.empty() ? c : r.excluded + "; " + c;
    r.assumptions.push_back(c + "; kept out of the statistics");
  }
  if (!run_projection(project, m.job, r.predicted, r.status, r.reason)) return r;
  compare(e, m, r);
  if (!e.described_by_config) note_unstated_memory_facts(e, r);
  attach_range(residuals, m, r);
  r.status = r.metrics.empty() ? "no_measurement" : "ok";
  if (r.metrics.empty()) r.reason = "no measured metric that the projection predicts";
  return r;
}

}  // namespace

ValidationReport validate(const std::vector<RunEntry>& runs, const ProjectFn& project,
                          const std::string& data_dir) {
  ValidationReport report;
  report.runs.reserve(runs.size());
  MappingCatalogue catalogue(data_dir);
  const ResidualTable residuals = load_residuals(data_dir);
  for (const RunEntry& e : runs) {
    // One bad entry never stops the run: whatever it throws is reported against it.
    try {
      report.runs.push_back(validate_entry(e, project, catalogue, residuals));
    } catch (const std::exception& ex) {
      RunResult r;
      r.id = e.id;
      r.status = "projection_failed";
      r.reason = dynamic_cast<const InputError*>(&ex) != nullptr
                     ? ex.what()
                     : std::string("internal error: ") + ex.what();
      report.runs.push_back(std::move(r));
    }
  }
  report.summary = summarize(report.runs);
  return report;
}

ValidationReport validate(const std::vector<RunEntry>& runs, const ProjectFn& project) {
  return validate(runs, project, default_data_dir());
}

}  // namespace projector
