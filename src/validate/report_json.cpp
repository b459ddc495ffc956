// JSON form of a validation report (nlohmann stays inside this file).
#include <nlohmann/json.hpp>

#include "projector/validate/validate.h"

namespace projector {
namespace {

nlohmann::json stats_json(const ErrorStats& s) {
  return {{"count", s.count},
          {"mape_pct", s.mape_pct},
          {"median_abs_pct", s.median_abs_pct},
          {"p90_abs_pct", s.p90_abs_pct},
          {"mean_signed_pct", s.mean_signed_pct}};
}

nlohmann::json prediction_json(const Prediction& p) {
  nlohmann::json j = {{"tokens_per_sec_per_gpu", p.tokens_per_sec_per_gpu},
                      {"step_time_s", p.step_time_s},
                      {"model_tflops_per_gpu", p.model_tflops_per_gpu},
                      {"hardware_tflops_per_gpu", p.hardware_tflops_per_gpu},
                      {"mfu_pct", p.mfu_pct}};
  j["peak_memory_gib"] = p.peak_memory_gib ? nlohmann::json(*p.peak_memory_gib) : nullptr;
  j["out_of_memory"] = p.out_of_memory;
  j["out_of_memory_without_range"] = p.out_of_memory_point;
  if (p.skewed_tokens_per_sec_per_gpu) {
    j["routing_skew"] = {{"load_factor", p.skew_load_factor},
                         {"tokens_per_sec_per_gpu", *p.skewed_tokens_per_sec_per_gpu}};
  }
  return j;
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The user's path of one run (RunResult::ConfigPath).
nlohmann::json config_path_json(const RunResult::ConfigPath& c) {
  nlohmann::json j = {{"config", c.config}, {"status", c.status}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  j["predicted"] = c.status == "ok" || c.status == "no_measurement" ? prediction_json(c.predicted)
                                                                    : nlohmann::json::object();
  nlohmann::json measured = nlohmann::json::object();
  nlohmann::json error = nlohmann::json::object();
  for (const MetricComparison& m : c.metrics) {
    measured[m.metric] = m.measured;
    error[m.metric] = m.error_pct;
  }
  j["measured"] = std::move(measured);
  j["error_pct"] = std::move(error);
  j["throughput_error_pct"] = optional_json(c.throughput_error_pct);
  if (!c.throughput_basis.empty()) j["throughput_basis"] = c.throughput_basis;
  j["memory_error_pct"] = optional_json(c.memory_error_pct);
  j["warnings"] = c.warnings;
  return j;
}

nlohmann::json config_summary_json(const ConfigPathSummary& s) {
  return {{"runs", s.runs},
          {"compared", s.compared},
          {"failed", s.failed},
          {"throughput", stats_json(s.throughput)},
          {"memory", stats_json(s.memory)},
          {"same_runs",
           {{"config_throughput", stats_json(s.same_runs_throughput)},
            {"free_text_throughput", stats_json(s.free_text_throughput)},
            {"free_text_memory", stats_json(s.free_text_memory)}}},
          {"projected_oom", s.projected_oom}};
}

}  // namespace

std::string report_to_json(const ValidationReport& report) {
  nlohmann::json runs = nlohmann::json::array();
  for (const RunResult& r : report.runs) {
    nlohmann::json j;
    j["id"] = r.id;
    j["status"] = r.status;
    if (!r.reason.empty()) j["reason"] = r.reason;
    if (!r.excluded.empty()) j["excluded_from_statistics"] = r.excluded;
    j["framework"] = r.framework;
    j["family"] = r.family;
    if (!r.regime_key.empty()) j["regime_key"] = r.regime_key;
    j["predicted"] = r.status == "ok" || r.status == "no_measurement" ? prediction_json(r.predicted)
                                                                      : nlohmann::json::object();
    nlohmann::json measured = nlohmann::json::object();
    nlohmann::json error = nlohmann::json::object();
    nlohmann::json basis = nlohmann::json::object();
    for (const MetricComparison& c : r.metrics) {
      measured[c.metric] = c.measured;
      error[c.metric] = c.error_pct;
      basis[c.metric] = c.basis;
      // The predicted value in the compared convention (tflops_per_gpu, mfu_pct are re-expressed
      // in the source's FLOP convention).
      nlohmann::json& pred = j["predicted"];
      if (!pred.contains(c.metric)) {
        pred[c.metric] = c.predicted;
      } else if (pred[c.metric].is_number() && pred[c.metric].get<double>() != c.predicted) {
        pred["compared_" + c.metric] = c.predicted;
      }
    }
    if (r.tokens_range) {
      j["predicted"]["tokens_per_sec_per_gpu_interval"] = {r.tokens_range->first,
                                                           r.tokens_range->second};
      j["predicted"]["interval_regime"] = {{"level", r.range_level}, {"runs", r.range_runs}};
    }
    if (r.memory_range) {
      j["predicted"]["peak_memory_gib_interval"] = {r.memory_range->first, r.memory_range->second};
    }
    if (r.in_range) j["in_interval"] = *r.in_range;
    if (r.lofo_error_pct) j["lofo_throughput_error_pct"] = *r.lofo_error_pct;
    if (!r.range_refusal.empty()) j["interval_refusal"] = r.range_refusal;
    j["measured"] = measured;
    j["error_pct"] = error;
    j["measured_basis"] = basis;
    j["throughput_error_pct"] =
        r.throughput_error_pct ? nlohmann::json(*r.throughput_error_pct) : nullptr;
    if (!r.throughput_basis.empty()) j["throughput_basis"] = r.throughput_basis;
    if (r.skewed_throughput_error_pct) {
      j["skewed_throughput_error_pct"] = *r.skewed_throughput_error_pct;
    }
    j["memory_error_pct"] = r.memory_error_pct ? nlohmann::json(*r.memory_error_pct) : nullptr;
    j["assumptions"] = r.assumptions;
    j["regime"] = {{"key", r.regime_key},
                   {"moe", r.moe},
                   {"accelerator_family", r.accelerator_family},
                   {"num_gpus", r.num_gpus},
                   {"pp", r.pp},
                   {"cp", r.cp},
                   {"ep", r.ep},
                   {"fp8", r.fp8}};
    if (r.config_path) j["config_path"] = config_path_json(*r.config_path);
    runs.push_back(std::move(j));
  }
  const ValidationSummary& s = report.summary;
  nlohmann::json by_regime = nlohmann::json::array();
  for (const RegimeStats& g : s.by_regime) {
    nlohmann::json j = stats_json(g.throughput);
    j["group"] = g.group;
    j["value"] = g.value;
    by_regime.push_back(std::move(j));
  }
  nlohmann::json out;
  out["schema_version"] = kValidationSchemaVersion;
  out["runs"] = std::move(runs);
  out["summary"] = {{"runs", s.runs},
                    {"compared", s.compared},
                    {"unmapped", s.unmapped},
                    {"invalid", s.invalid},
                    {"projection_failed", s.failed},
                    {"not_modelled", s.not_modelled},
                    {"excluded", s.excluded},
                    {"throughput", stats_json(s.throughput)},
                    {"memory", stats_json(s.memory)},
                    {"projected_oom", s.projected_oom},
                    {"routing_skew",
                     {{"bracketed", s.skew_bracketed}, {"within_bracket", s.within_skew_bracket}}},
                    {"by_regime", std::move(by_regime)}};
  nlohmann::json coverage = nlohmann::json::array();
  for (const CoverageStats& c : s.coverage) {
    coverage.push_back({{"group", c.group},
                        {"value", c.value},
                        {"runs", c.runs},
                        {"inside", c.inside},
                        {"coverage_pct", c.pct()},
                        {"consistent_with_80_pct", coverage_consistent(c.inside, c.runs)}});
  }
  out["summary"]["interval_coverage"] = std::move(coverage);
  out["summary"]["config_path"] = config_summary_json(s.config_path);
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector
