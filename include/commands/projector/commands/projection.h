// The documents of the projecting commands (`performance`, `both`, `workload`), built once for
// every front end: the CLI (apps/) and the Python module (python/) call these and differ only in
// how they read their options and load the job.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "projector/interval/training_plan.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/perf/perf.h"
#include "projector/profile/benchmark.h"
#include "projector/profile/profile.h"
#include "projector/report/perf_report.h"

namespace projector {

// How the front end names the settings in its errors (the CLI's flags; Python's keyword
// arguments, with "=" as `assign`).
struct ProjectionKeys {
  std::string profiling_mode = "--profiling-mode";
  std::string memory_mode = "--memory-mode";
  std::string profile = "--profile";
  std::string benchmark_gpus = "--benchmark-gpus";
  std::string assign = " ";
};

// What `performance` / `both` take besides the job (the CLI's flags of the same names).
struct ProjectionSettings {
  ProjectionKeys keys;
  bool both = false;                        // `both`: the memory document inside
  std::string profiling_mode = "simulate";  // simulate, benchmark, both (need profile_path)
  std::string memory_mode = "simulate";     // simulate, benchmark (need profile_path)
  std::string profile_path;                 // a measured profile (`profile --json`)
  std::int64_t benchmark_gpus = 0;          // > 0: must match the profile's bench
  PlanInputs plan;                          // --train-tokens / --gpu-hour-cost
  std::string data_dir;                     // residuals of the ranges ("": the bundled ones)
  bool record_timeline = false;             // for a trace or an HTML timeline
  // --scan-nodes: the job re-projected at each node count; `job_at_nodes` builds it (the front
  // end's loading path with the node count replaced).
  std::vector<int> scan_nodes;
  std::function<JobSpec(int nodes)> job_at_nodes;
};

// One projection and what came with it.
struct Projection {
  PerfReport report;  // with the calibrated ranges and the plan attached
  bool measured = false;
  profile::MeasuredProfile profile;  // read when profile_path is given
  profile::BenchmarkProjection bench;
  std::vector<ScalingPoint> scaling;
};

// Throws InputError (naming the profile's key) when a mode needs a measured profile and none is
// given.
void check_projection_settings(const ProjectionSettings& s);

// Sets the sustained compute clock (MHz > 0; 0: leave the accelerator's) and records it as an
// applied default. InputError naming `key` above the boost clock or below a tenth of it.
void apply_compute_clock(JobSpec& job, double clock_mhz, const std::string& key);

// "1,2,4": the node counts of --scan-nodes (InputError naming `key`).
std::vector<int> parse_node_list(const std::string& text, const std::string& key);

// The projection `performance` / `both` make: simulated or anchored on the measured profile, the
// calibrated 80 % ranges (memory first, then throughput), the training plan and the node scan.
Projection run_projection(const JobSpec& job, const ProjectionSettings& s);

// `performance --json` / `both --json`: the versioned document, with `memory` (both), `scaling`,
// `benchmark` and `memory_benchmark` as the settings ask.
std::string projection_json(const JobSpec& job, const ProjectionSettings& s, const Projection& p);

// `workload`: the op tables of every rank class (no memory projection); perf_json() of it is
// `workload --json`.
PerfReport project_workload(const JobSpec& job);

// What `profile` takes besides the job.
struct ProfileSettings {
  std::string trace;  // Kineto / Chrome trace JSON (or .json.gz)
  double launch_gap_us = 100.0;
  int pp_rank = 0;
  int benchmark_gpus = 0;  // 0: the target's GPUs
  std::string data_dir;    // catalogue ("": the bundled one)
};

// `profile`: the trace analysed and compared with the cost models on the job `build_target`
// returns; it receives the catalogue accelerator the trace's device names (nullopt when none
// does), which the front end uses when the user named no hardware. profile::profile_json() of the
// result is `profile --json`.
profile::MeasuredProfile measure_profile(
    const ProfileSettings& s,
    const std::function<JobSpec(const std::optional<std::string>& trace_hardware)>& build_target);

}  // namespace projector
