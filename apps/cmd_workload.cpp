// `projector workload`: the per-layer op table of every rank class (op, phase, shape, FLOPs, bytes,
// time, provenance), so a user can see where every microsecond comes from.
#include <fmt/core.h>

#include <memory>

#include "commands.h"
#include "job_options.h"
#include "projector/commands/projection.h"
#include "projector/job/spec.h"
#include "projector/report/perf_report.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

struct WorkloadCliOptions {
  JobOptions job;
  std::string json_path;
};

int run_workload(const WorkloadCliOptions& o) {
  const JobSpec job = build_job(o.job);
  for (const std::string& w : job.warnings) fmt::print(stderr, "projector: warning: {}\n", w);
  const PerfReport rep = project_workload(job);
  if (o.json_path.empty() || o.json_path != "-") {
    fmt::print(
        "Per-microbatch ops of every pipeline rank (times from the cost models; 'exposed' "
        "is what an op adds to the compute stream)\n");
    fmt::print("{}", op_table_text(job, rep));
  }
  if (!o.json_path.empty()) {
    write_output(o.json_path, perf_json(job, rep), "--json");
  }
  return kExitOk;
}

}  // namespace

void add_workload_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<WorkloadCliOptions>();
  auto* cmd = app.add_subcommand("workload", "per-layer op table with shapes, times, provenance");
  add_job_options(cmd, opts->job);
  cmd->add_option("--json", opts->json_path, "write the full projection as JSON to FILE ('-')");
  cmd->callback([opts, &exit_code] { exit_code = run_workload(*opts); });
}

}  // namespace projector::cli
