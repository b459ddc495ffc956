// `projector config`: print the resolved job (what every other command will project) together
// with every default the front-end applied and every warning.
#include <fmt/core.h>
#include <fmt/format.h>

#include "commands.h"
#include "job_options.h"
#include "projector/job/spec.h"
#include "projector/report/job_report.h"
#include "projector/util/error.h"

namespace projector::cli {

void add_config_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("config", "Print the resolved job, applied defaults and warnings");
  auto opts = std::make_shared<JobOptions>();
  auto json_out = std::make_shared<bool>(false);
  add_job_options(cmd, *opts);
  cmd->add_flag("--json", *json_out, "print JSON");
  cmd->callback([opts, json_out, &exit_code] {
    const JobSpec job = build_job(*opts);
    if (*json_out) {
      fmt::print("{}\n", job_json(job));
    } else {
      fmt::print("{}", job_summary_text(job));
    }
    exit_code = kExitOk;
  });
}

}  // namespace projector::cli
