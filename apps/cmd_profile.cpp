// `projector profile --trace TRACE.json[.gz] --config X [--json OUT] [--fitted OUT.yaml]`:
// reads a PyTorch profiler (Kineto) trace of a few training steps, attributes its GPU time to the
// workload's op classes and compares it with the cost models on the same job. The JSON it writes
// is the measured profile `--profiling-mode benchmark --profile` reads.
#include <fmt/core.h>

#include <cstdlib>
#include <memory>

#include "commands.h"
#include "job_options.h"
#include "projector/commands/projection.h"
#include "projector/job/spec.h"
#include "projector/profile/profile.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

struct ProfileOptions {
  JobOptions job;
  std::string trace;
  std::string json_path;
  std::string fitted_path;
  int pp_rank = 0;
  int benchmark_gpus = 0;
  double launch_gap_us = 100.0;
};

int run_profile(const ProfileOptions& o) {
  ProfileSettings s;
  s.trace = o.trace;
  s.launch_gap_us = o.launch_gap_us;
  s.pp_rank = o.pp_rank;
  s.benchmark_gpus = o.benchmark_gpus;
  s.data_dir = o.job.data_dir;
  const profile::MeasuredProfile p =
      measure_profile(s, [&o](const std::optional<std::string>& trace_hardware) {
        // No --hardware and no PRIMUS_GPU_ARCH: the accelerator the trace was recorded on.
        JobOptions jo = o.job;
        const char* env_arch = std::getenv("PRIMUS_GPU_ARCH");
        if (jo.hardware.empty() && (env_arch == nullptr || *env_arch == '\0') && trace_hardware) {
          jo.hardware = *trace_hardware;
        }
        const JobSpec target = build_job(jo);
        for (const std::string& w : target.warnings) {
          fmt::print(stderr, "projector: warning: {}\n", w);
        }
        return target;
      });
  if (o.json_path != "-") fmt::print("{}", profile::profile_text(p));
  if (!o.json_path.empty()) write_output(o.json_path, profile::profile_json(p), "--json");
  if (!o.fitted_path.empty()) write_output(o.fitted_path, profile::fitted_yaml(p), "--fitted");
  return kExitOk;
}

}  // namespace

void add_profile_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand(
      "profile", "measured profile of a PyTorch profiler trace, compared with the cost models");
  add_job_options(cmd, o->job);
  cmd->add_option("--trace", o->trace, "Kineto / Chrome trace JSON (or .json.gz)")->required();
  cmd->add_option("--json", o->json_path,
                  "write the measured profile (JSON) to FILE ('-': stdout)");
  cmd->add_option("--fitted", o->fitted_path,
                  "write the calibration values the trace implies (YAML fragment) to FILE");
  cmd->add_option("--pp-rank", o->pp_rank, "pipeline rank the trace was taken on (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--benchmark-gpus", o->benchmark_gpus,
                  "GPUs the traced bench run used; the config is reduced to fit them as the "
                  "projection does (PP flattened, then EP, then TP)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--launch-gap-us", o->launch_gap_us,
                  "idle gaps up to this long count as launch latency of the next kernel (100)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &exit_code] { exit_code = run_profile(*o); });
}

}  // namespace projector::cli
