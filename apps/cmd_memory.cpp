// `projector memory --config X [--hardware H] [--json FILE] [--csv FILE] [--html FILE]
// [--memory-mode simulate|benchmark]` and the projection options it shares with performance and
// both (job_options.h):
// per-GPU memory of every pipeline rank class, the peak, the verdict against HBM and, when it
// does not fit, what would make it fit.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.h"
#include "job_options.h"
#include "projector/hardware/catalog.h"
#include "projector/interval/interval.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/profile/benchmark.h"
#include "projector/report/csv_report.h"
#include "projector/report/html_report.h"
#include "projector/report/job_report.h"
#include "projector/report/memory_report.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

struct MemoryCommandOptions {
  JobOptions job;
  ProjectionOptions proj;
  std::string json_path;
  std::string csv_path;
  std::string html_path;
};

}  // namespace

void add_memory_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<MemoryCommandOptions>();
  auto* cmd = app.add_subcommand(
      "memory",
      "per-GPU memory of every pipeline rank, the peak and a FITS / AT RISK / OOM verdict");
  add_job_options(cmd, opts->job);
  add_projection_options(cmd, opts->proj);
  cmd->add_option("--json", opts->json_path, "also write the full report (every intermediate)");
  cmd->add_option("--csv", opts->csv_path, "write one row per pipeline rank class as CSV to FILE");
  cmd->add_option("--html", opts->html_path,
                  "write a self-contained offline HTML report (charts) to FILE");
  cmd->callback([opts, cmd, &exit_code] {
    const JobSpec job = build_projection_job(opts->job, opts->proj);
    check_output(opts->json_path, "--json");
    check_output(opts->csv_path, "--csv");
    check_output(opts->html_path, "--html");
    check_output(opts->proj.export_config, "--export-config");
    export_config(opts->job, opts->proj, job);
    MemoryReport rep = project_memory(job);
    // The calibrated 80 % range of the peak and the verdict it gives (docs/memory.md "Verdict").
    attach_memory_range(
        load_residuals(opts->job.data_dir.empty() ? default_data_dir() : opts->job.data_dir), job,
        rep);
    // A measured profile anchors memory with --memory-mode benchmark or, as Primus' `both`
    // does, with a benchmark --profiling-mode.
    if (opts->proj.memory_mode == "benchmark" || opts->proj.profiling_mode != "simulate") {
      const profile::MeasuredProfile prof = profile::read_profile(opts->proj.profile_path);
      const profile::MemoryAnchor a = profile::anchor_memory(prof, rep);
      if (opts->json_path != "-") {
        fmt::print("{}{}", memory_summary_text(job, rep, opts->job.verbose),
                   profile::memory_anchor_text(a, prof));
      } else {
        fmt::print("{}\n", profile::memory_anchor_json(a, prof));
      }
      exit_code = opts->job.strict && a.verdict == MemoryVerdict::kOom ? kExitFailure : kExitOk;
      return;
    }
    if (opts->json_path != "-") fmt::print("{}", memory_summary_text(job, rep, opts->job.verbose));
    const std::string doc = memory_json(job, rep);
    if (!opts->json_path.empty()) write_output(opts->json_path, doc, "--json");
    if (!opts->csv_path.empty()) write_output(opts->csv_path, memory_csv(doc), "--csv");
    if (!opts->html_path.empty()) {
      HtmlReportInput in;
      in.kind = "memory";
      in.title = "projector memory: " + job.model.name;
      in.command = command_line(*cmd);
      in.input_path = job.source;
      in.input_text = read_input_text(job.source);
      in.job_json = job_json(job);
      in.memory_json = doc;
      write_output(opts->html_path, html_report(in), "--html");
    }
    const bool bad = rep.verdict == MemoryVerdict::kOom || rep.verdict == MemoryVerdict::kAtRisk;
    exit_code = (opts->job.strict && bad) ? kExitFailure : kExitOk;
  });
}

}  // namespace projector::cli
