// `projector validate RUNS.yaml`: project published runs and compare with their measurements.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <memory>
#include <optional>

#include "commands.h"
#include "projector/hardware/catalog.h"
#include "projector/interval/interval.h"
#include "projector/perf/perf.h"
#include "projector/report/csv_report.h"
#include "projector/report/html_report.h"
#include "projector/report/memory_report.h"
#include "projector/report/perf_report.h"
#include "projector/util/error.h"
#include "projector/validate/validate.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

struct ValidateOptions {
  std::string runs_file;
  std::string json_file;
  std::string csv_file;
  std::string html_file;
  std::string data_dir;
  double max_mape_pct = -1.0;
  double max_error_pct = -1.0;         // --max-error: largest allowed |throughput error| of any run
  double max_memory_error_pct = -1.0;  // --max-memory-error: the same for measured peak memory
  bool map_only = false;
  std::string only_run;  // --run ID: just this entry
  bool explain = false;  // --explain: print each projection's performance summary
  // --configs FILE: the configs index naming each run's framework config; empty: the runs file's
  // configs/index.yaml when there is one; "none": the free-text path only.
  std::string configs_index;
};

void print_assumptions(const std::vector<std::string>& assumptions) {
  for (const std::string& a : assumptions) fmt::print("      assumed: {}\n", a);
}

void print_stats_row(const std::string& label, const ErrorStats& s) {
  fmt::print("  {:<22} {:>4} {:>9.1f} {:>9.1f} {:>9.1f} {:>+9.1f}\n", label, s.count, s.mape_pct,
             s.median_abs_pct, s.p90_abs_pct, s.mean_signed_pct);
}

// The run projected from its framework config: each compared metric, or why it was not.
void print_config_path(const RunResult::ConfigPath& c) {
  fmt::print("      via config {}: {}{}\n", c.config, c.status,
             c.reason.empty() ? "" : " (" + c.reason + ")");
  for (const MetricComparison& m : c.metrics) {
    fmt::print("      {:<23} {:>12.4g} {:>12.4g} {:>+8.1f}\n", m.metric, m.predicted, m.measured,
               m.error_pct);
  }
  for (const std::string& w : c.warnings) fmt::print("      config warning: {}\n", w);
}

void print_config_summary(const ConfigPathSummary& s) {
  if (s.runs == 0) return;
  fmt::print("\n  user's path (each run's framework config): {} runs, {} compared, {} failed\n",
             s.runs, s.compared, s.failed);
  print_stats_row("config throughput", s.throughput);
  if (s.memory.count > 0) print_stats_row("config peak memory", s.memory);
  print_stats_row("same runs, config", s.same_runs_throughput);
  print_stats_row("same runs, free text", s.free_text_throughput);
  if (!s.projected_oom.empty()) {
    fmt::print("  ran but the config's projection is out of memory: {}\n",
               fmt::join(s.projected_oom, ", "));
  }
}

int run_map_only(const std::vector<RunEntry>& runs, const std::string& data_dir) {
  int mapped = 0;
  MappingCatalogue catalogue(data_dir);
  for (const RunEntry& e : runs) {
    try {
      const MappedRun m = map_run(e, catalogue);
      if (m.mapped) ++mapped;
      fmt::print("{:<58} {}\n", e.id, m.mapped ? "mapped" : "unmapped: " + m.reason);
      print_assumptions(m.assumptions);
    } catch (const InputError& ex) {  // one bad entry never stops the run
      fmt::print("{:<58} unmapped: {}\n", e.id, ex.what());
    }
  }
  fmt::print("\n{} of {} runs mapped\n", mapped, runs.size());
  return kExitOk;
}

// The mapped job's memory breakdown, performance summary and per-op table: how a prediction
// came about.
void explain_run(const RunEntry& e, MappingCatalogue& catalogue) {
  const MappedRun m = map_run(e, catalogue);
  if (!m.mapped) return;
  PerfReport rep;
  try {
    rep = project_performance(m.job);
  } catch (const InputError& ex) {  // reported again, per entry, by the validation below
    fmt::print("\n######## {} ########\nprojection failed: {}\n", e.id, ex.what());
    return;
  }
  fmt::print("\n######## {} ########\n", e.id);
  if (rep.has_memory) fmt::print("{}\n", memory_summary_text(m.job, rep.memory));
  fmt::print("{}", perf_summary_text(m.job, rep));
  fmt::print("{}\n", op_table_text(m.job, rep));
}

void write_reports(const ValidateOptions& o, const CLI::App& cmd, const ValidationReport& report) {
  if (o.json_file.empty() && o.csv_file.empty() && o.html_file.empty()) return;
  check_output(o.json_file, "--json");
  check_output(o.csv_file, "--csv");
  check_output(o.html_file, "--html");
  const std::string doc = report_to_json(report);
  if (!o.json_file.empty()) write_output(o.json_file, doc, "--json");
  if (!o.csv_file.empty()) write_output(o.csv_file, validation_csv(doc), "--csv");
  if (!o.html_file.empty()) {
    HtmlReportInput in;
    in.kind = "validate";
    in.title = "projector validate: " + o.runs_file;
    in.command = command_line(cmd);
    in.input_path = o.runs_file;
    in.input_text = read_input_text(o.runs_file);
    in.validate_json = doc;
    write_output(o.html_file, html_report(in), "--html");
  }
}

int run_validate(const ValidateOptions& o, const CLI::App& cmd) {
  for (const auto& [value, flag] : {std::pair{o.max_mape_pct, "--max-mape"},
                                    {o.max_error_pct, "--max-error"},
                                    {o.max_memory_error_pct, "--max-memory-error"}}) {
    if (std::isnan(value)) throw InputError({flag, 0, 0}, flag, "must be a number of percent");
  }
  const std::string data_dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  std::vector<RunEntry> runs = load_runs(o.runs_file);
  const std::string index =
      o.configs_index.empty() ? default_configs_index(o.runs_file) : o.configs_index;
  if (!index.empty() && index != "none") attach_run_configs(runs, o.runs_file, index);
  if (!o.only_run.empty()) {
    std::erase_if(runs, [&](const RunEntry& e) { return e.id != o.only_run; });
    if (runs.empty()) {
      throw InputError({o.runs_file, 0, 0}, "--run", "no entry with id '" + o.only_run + "'");
    }
  }
  if (o.map_only) return run_map_only(runs, data_dir);
  if (o.explain) {
    MappingCatalogue catalogue(data_dir);
    for (const RunEntry& e : runs) explain_run(e, catalogue);
  }

  const ProjectFn project = make_default_project_fn();
  const ValidationReport report = validate(runs, project, data_dir);

  fmt::print("{:<58} {:<17} {:<23} {:>12} {:>12} {:>8}\n", "run", "status", "metric", "predicted",
             "measured", "error%");
  for (const RunResult& r : report.runs) {
    if (r.metrics.empty()) {
      fmt::print("{:<58} {:<17} {}\n", r.id, r.status, r.reason);
    }
    for (std::size_t i = 0; i < r.metrics.size(); ++i) {
      const MetricComparison& c = r.metrics[i];
      fmt::print("{:<58} {:<17} {:<23} {:>12.4g} {:>12.4g} {:>+8.1f}  [{}]\n", i == 0 ? r.id : "",
                 i == 0 ? r.status : "", c.metric, c.predicted, c.measured, c.error_pct, c.basis);
    }
    if (r.skewed_throughput_error_pct && r.predicted.skewed_tokens_per_sec_per_gpu) {
      fmt::print(
          "      routing bracket: busiest EP rank {:.2f}x the mean routed tokens -> {:.4g} "
          "tokens/s/GPU ({:+.1f}%; not in the statistics)\n",
          r.predicted.skew_load_factor, *r.predicted.skewed_tokens_per_sec_per_gpu,
          *r.skewed_throughput_error_pct);
    }
    if (r.tokens_range) {
      const std::string lofo =
          r.lofo_error_pct ? fmt::format(" around the leave-one-family-out projection ({:+.1f}%)",
                                         *r.lofo_error_pct)
                           : "";
      fmt::print("      80 % range {:.4g} - {:.4g} tokens/s/GPU{} ({}, {} runs){}\n",
                 r.tokens_range->first, r.tokens_range->second, lofo, r.range_level, r.range_runs,
                 r.in_range ? (*r.in_range ? ": measured inside" : ": measured outside") : "");
    } else if (!r.range_refusal.empty()) {
      fmt::print("      80 % range: none ({}; regime {})\n", r.range_refusal, r.regime_key);
    }
    if (!r.excluded.empty()) {
      fmt::print("      excluded from the statistics: {}\n", r.excluded);
    }
    print_assumptions(r.assumptions);
    if (r.config_path) print_config_path(*r.config_path);
  }

  const ValidationSummary& s = report.summary;
  fmt::print("\n{} runs: {} compared, {} unmapped, {} invalid, {} projection failed", s.runs,
             s.compared, s.unmapped, s.invalid, s.failed);
  if (s.not_modelled > 0) fmt::print(", {} not modelled yet", s.not_modelled);
  if (s.excluded > 0) fmt::print(", {} excluded from the statistics", s.excluded);
  fmt::print("\n");
  fmt::print("\n  {:<22} {:>4} {:>9} {:>9} {:>9} {:>9}\n", "throughput error", "n", "MAPE%",
             "median%", "P90%", "bias%");
  print_stats_row("all", s.throughput);
  for (const RegimeStats& g : s.by_regime) print_stats_row(g.group + " " + g.value, g.throughput);
  if (s.memory.count > 0) {
    fmt::print("\n");
    print_stats_row("peak memory", s.memory);
  }
  // Every compared run ran, so it fit: a projected OOM is a memory over-estimate.
  fmt::print(
      "\n  ran but projected out of memory: {} of {}{}\n", s.projected_oom.size(), s.compared,
      s.projected_oom.empty() ? ""
                              : " (" + fmt::format("{}", fmt::join(s.projected_oom, ", ")) + ")");

  print_config_summary(s.config_path);
  int small_regimes = 0;
  for (const CoverageStats& cv : s.coverage) {
    // Regime levels too small for a coverage figure to mean much are in the JSON only.
    if (cv.group == "regime" && cv.runs < kMinRegimeRuns) {
      ++small_regimes;
      continue;
    }
    // The 70-90 % band judges a group of kMinRegimeRuns or more; smaller ones are not marked.
    const bool in_band = cv.runs < kMinRegimeRuns || (cv.pct() >= 70.0 && cv.pct() <= 90.0);
    fmt::print("  80 % range coverage ({} {}): {} of {} runs inside, {:.0f} %{}\n", cv.group,
               cv.value, cv.inside, cv.runs, cv.pct(),
               in_band ? ""
               : coverage_consistent(cv.inside, cv.runs)
                   ? " (a count an 80 % range gives: binomial, "
                     "2.5 % tails)"
                   : " (not a count an 80 % range gives)");
  }
  if (small_regimes > 0) {
    fmt::print("  ({} regime levels with fewer than {} runs: --json summary.interval_coverage)\n",
               small_regimes, kMinRegimeRuns);
  }
  if (s.skew_bracketed > 0) {
    fmt::print(
        "  dropless EP runs with a routing bracket: {}; measured between skewed and balanced: "
        "{}{}\n",
        s.skew_bracketed, s.within_skew_bracket.size(),
        s.within_skew_bracket.empty()
            ? ""
            : " (" + fmt::format("{}", fmt::join(s.within_skew_bracket, ", ")) + ")");
  }

  write_reports(o, cmd, report);
  if (o.max_mape_pct >= 0.0) {
    if (s.throughput.count == 0) {
      fmt::print(stderr, "projector: validate: no run was compared; --max-mape gate fails\n");
      return kExitFailure;
    }
    if (s.throughput.mape_pct > o.max_mape_pct) {
      fmt::print(stderr, "projector: validate: throughput MAPE {:.1f}% exceeds --max-mape {}%\n",
                 s.throughput.mape_pct, o.max_mape_pct);
      return kExitFailure;
    }
  }
  // Per-run gates: every run whose |error| exceeds the bound is named.
  int over = 0;
  auto gate = [&](const std::optional<double>& err, double bound, const RunResult& r,
                  const char* what, const char* flag) {
    if (bound < 0.0 || !err || std::abs(*err) <= bound) return;
    fmt::print(stderr, "projector: validate: {}: {} error {:+.1f}% exceeds {} {}%\n", r.id, what,
               *err, flag, bound);
    ++over;
  };
  for (const RunResult& r : report.runs) {
    if (!r.excluded.empty()) continue;  // kept out of every gate
    gate(r.throughput_error_pct, o.max_error_pct, r, "throughput", "--max-error");
    gate(r.memory_error_pct, o.max_memory_error_pct, r, "peak memory", "--max-memory-error");
  }
  return over > 0 ? kExitFailure : kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate", "Project published training runs and compare with their measured results");
  cmd->add_option("runs", opts->runs_file, "runs file (e.g. data/validation/calibration_runs.yaml)")
      ->required();
  cmd->add_option("--json", opts->json_file, "also write the report as JSON to FILE");
  cmd->add_option("--csv", opts->csv_file, "also write one row per run as CSV to FILE");
  cmd->add_option(
      "--html", opts->html_file,
      "also write a self-contained offline HTML report (predicted vs measured) to FILE");
  cmd->add_option("--max-mape", opts->max_mape_pct,
                  "exit with code 1 when the throughput MAPE exceeds PCT percent");
  cmd->add_option("--max-error", opts->max_error_pct,
                  "exit with code 1 when any run's throughput error exceeds PCT percent");
  cmd->add_option("--max-memory-error", opts->max_memory_error_pct,
                  "exit with code 1 when any run's measured peak memory is missed by more than "
                  "PCT percent");
  cmd->add_option("--data-dir", opts->data_dir, "hardware catalogue directory");
  cmd->add_flag("--map-only", opts->map_only,
                "only map each run to a job and list the assumptions (no projection)");
  cmd->add_option("--run", opts->only_run, "validate only the entry with this id");
  cmd->add_option("--configs", opts->configs_index,
                  "configs index naming each run's framework config (default: configs/index.yaml "
                  "beside the runs file; none: the free-text reading only)");
  cmd->add_flag("--explain", opts->explain,
                "print the performance summary and op table of each projected run");
  cmd->callback([opts, cmd, &exit_code] { exit_code = run_validate(*opts, *cmd); });
}

}  // namespace projector::cli
