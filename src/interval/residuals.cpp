// The residual table (data/validation/residuals.json) and the ranges it gives.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "projector/interval/interval.h"
#include "projector/job/spec.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"

namespace projector {

namespace {

std::optional<double> number_or_null(const nlohmann::json& j, const char* key,
                                     const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number()) throw InputError({file, 0, 0}, key, "expected a number or null");
  const double v = j[key].get<double>();
  if (!std::isfinite(v) || v <= -100.0) throw InputError({file, 0, 0}, key, "out of range");
  return v;
}

bool in_level(const std::string& regime, const std::string& level) {
  return level == "all" || regime == level ||
         (regime.size() > level.size() && regime.compare(0, level.size(), level) == 0 &&
          regime[level.size()] == '/');
}

}  // namespace

ResidualTable parse_residuals(const std::string& json_text, const std::string& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError({file, 0, 0}, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("runs") || !j["runs"].is_array()) {
    throw InputError({file, 0, 0}, "runs", "expected an object with a 'runs' list");
  }
  ResidualTable t;
  t.file = file;
  for (const auto& r : j["runs"]) {
    if (!r.is_object() || !r.contains("id") || !r.contains("regime") || !r["id"].is_string() ||
        !r["regime"].is_string()) {
      throw InputError({file, 0, 0}, "runs", "each run needs a string id and regime");
    }
    ResidualRun run;
    run.id = r["id"].get<std::string>();
    run.regime = r["regime"].get<std::string>();
    run.family = r.value("family", "");
    run.throughput_pct = number_or_null(r, "throughput_residual_pct", file);
    run.memory_pct = number_or_null(r, "memory_residual_pct", file);
    t.runs.push_back(std::move(run));
  }
  return t;
}

ResidualTable load_residuals(const std::string& data_dir) {
  const std::string path = (std::filesystem::path(data_dir) / kResidualsFile).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  return parse_residuals(read_input_file(path), path);
}

double sorted_quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0.0;
  // Order statistic q (n + 1) (1-based, interpolated, clamped to the sample): a new draw lies
  // between the q1 (n + 1)-th and the q2 (n + 1)-th of n exchangeable values with probability
  // q2 - q1, so the range keeps its 80 % on small regimes (the (n - 1) q convention narrows it).
  const double n = static_cast<double>(v.size());
  const double pos = std::clamp(q * (n + 1.0), 1.0, n) - 1.0;
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

namespace {

// The regime's vendor: its key up to the first '/'.
std::string vendor_part(const std::string& key) {
  return key.substr(0, key.find('/'));
}

// The residuals `metric` may use for `regime`: its kernel class, without `exclude_family`.
std::vector<const ResidualRun*> usable(const ResidualTable& table, const Regime& regime,
                                       ResidualMetric metric, const std::string& exclude_family) {
  const std::string cls = regime_kernel_class(regime.key);
  std::vector<const ResidualRun*> out;
  for (const ResidualRun& r : table.runs) {
    const std::optional<double>& x =
        metric == ResidualMetric::kThroughput ? r.throughput_pct : r.memory_pct;
    if (!x || regime_kernel_class(r.regime) != cls) continue;
    if (!exclude_family.empty() && r.family == exclude_family) continue;
    out.push_back(&r);
  }
  return out;
}

}  // namespace

std::string range_refusal(const ResidualTable& table, const Regime& regime, ResidualMetric metric,
                          const std::string& exclude_family) {
  if (table.runs.empty()) return "";  // no residual file: no range, nothing to explain
  const std::string cls = regime_kernel_class(regime.key);
  const std::string vendor = vendor_part(regime.key);
  // Throughput errors come from kernel timings: another vendor's are no evidence.
  const bool by_vendor = metric == ResidualMetric::kThroughput;
  auto covered = [&](const std::string& family) {
    const std::vector<const ResidualRun*> v = usable(table, regime, metric, family);
    return std::any_of(v.begin(), v.end(), [&](const ResidualRun* r) {
      return !by_vendor || vendor_part(r->regime) == vendor;
    });
  };
  if (covered(exclude_family)) return "";
  return fmt::format("no {} run{} among the scored published runs ({}){}",
                     cls == "recurrent" ? "recurrent-hybrid" : cls,
                     by_vendor ? " on " + vendor : "", kResidualsFile,
                     !exclude_family.empty() && covered("") ? " but its own family's" : "");
}

std::optional<ResidualQuantiles> residual_quantiles(const ResidualTable& table,
                                                    const Regime& regime, ResidualMetric metric,
                                                    const std::string& exclude_family) {
  if (!range_refusal(table, regime, metric, exclude_family).empty()) return std::nullopt;
  const std::vector<const ResidualRun*> runs = usable(table, regime, metric, exclude_family);
  for (const std::string& level : regime.levels) {
    std::vector<double> v;
    for (const ResidualRun* r : runs) {
      if (!in_level(r->regime, level)) continue;
      v.push_back(metric == ResidualMetric::kThroughput ? *r->throughput_pct : *r->memory_pct);
    }
    // The coarsest level takes whatever there is.
    if (static_cast<int>(v.size()) < kMinRegimeRuns && level != "all") continue;
    if (v.empty()) return std::nullopt;
    std::sort(v.begin(), v.end());
    return ResidualQuantiles{level, static_cast<int>(v.size()), sorted_quantile(v, 0.1),
                             sorted_quantile(v, 0.9)};
  }
  return std::nullopt;
}

CalibratedRange range_from_quantiles(const ResidualQuantiles& q, const std::string& regime_key,
                                     const PerfReport& rep) {
  CalibratedRange c;
  c.regime = regime_key;
  c.level = q.level;
  c.runs = q.runs;
  const double lo = 1.0 + q.q10_pct / 100.0;  // predicted / measured at the 10th percentile
  const double hi = 1.0 + q.q90_pct / 100.0;
  c.tokens_per_s_per_gpu_lo = rep.tokens_per_s_per_gpu / hi;
  c.tokens_per_s_per_gpu_hi = rep.tokens_per_s_per_gpu / lo;
  c.iteration_s_lo = rep.iteration_s * lo;
  c.iteration_s_hi = rep.iteration_s * hi;
  c.mfu_lo = rep.mfu / hi;
  c.mfu_hi = rep.mfu / lo;
  return c;
}

void attach_memory_range(const ResidualTable& table, const JobSpec& job, MemoryReport& rep,
                         const std::string& exclude_family) {
  if (rep.ranks.empty() || rep.has_recsys) return;
  const Regime regime = classify_regime(job);
  const auto m = residual_quantiles(table, regime, ResidualMetric::kMemory, exclude_family);
  if (!m) return;
  const RankMemory& peak = rep.ranks[static_cast<std::size_t>(rep.peak_rank)];
  const double fixed = peak.total_point_bytes - peak.allocator_point_bytes;
  MemoryRange r;
  r.regime = regime.key;
  r.level = m->level;
  r.runs = m->runs;
  r.peak_lo_bytes = fixed + peak.allocator_point_bytes / (1.0 + m->q90_pct / 100.0);
  r.peak_hi_bytes = fixed + peak.allocator_point_bytes / (1.0 + m->q10_pct / 100.0);
  r.model_verdict = rep.verdict;
  rep.verdict = verdict_with_range(rep.peak_point_bytes, rep.peak_upper_bytes, r.peak_lo_bytes,
                                   r.peak_hi_bytes, rep.capacity_bytes);
  rep.range = r;
}

std::optional<CalibratedRange> calibrated_range(const ResidualTable& table, const JobSpec& job,
                                                const PerfReport& rep,
                                                const std::string& exclude_family) {
  const Regime regime = classify_regime(job);
  const auto q = residual_quantiles(table, regime, ResidualMetric::kThroughput, exclude_family);
  if (!q) return std::nullopt;
  CalibratedRange c = range_from_quantiles(*q, regime.key, rep);
  if (rep.has_memory && rep.memory.range) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    c.memory_level = rep.memory.range->level;
    c.memory_runs = rep.memory.range->runs;
    c.peak_memory_gib_lo = rep.memory.range->peak_lo_bytes / kGiB;
    c.peak_memory_gib_hi = rep.memory.range->peak_hi_bytes / kGiB;
  }
  return c;
}

}  // namespace projector
