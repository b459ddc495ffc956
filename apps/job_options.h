// The option set shared by every command that takes a job (config, memory, performance, both,
// workload, sweep): one place defines the flags, their aliases and how they become a JobSpec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace CLI {
class App;
}

namespace projector::cli {

struct JobOptions {
  std::string config;             // --config / --exp / -c
  std::string data_dir;           // --data-dir (else the bundled data)
  std::string primus_path;        // --primus-path (else PRIMUS_PATH)
  std::string backend_path;       // --backend-path (else BACKEND_PATH): an installed back-end
  std::string framework_version;  // --framework-version: the back-end's version (torchtitan)
  std::vector<std::string> set;   // --set key=value (repeatable)
  // First-class overrides; 0 (or -1 for sync_free_stage) means "not given".
  std::int64_t tp = 0, pp = 0, vpp = 0, cp = 0, ep = 0, etp = 0;
  std::int64_t nodes = 0, gpus_per_node = 0;
  std::int64_t mbs = 0, gbs = 0, seq = 0;
  int sync_free_stage = -1;
  double moe_expert_load_cv = -1.0;  // < 0: not given
  bool enable_zero_bubble = false;
  bool enable_deepep = false;
  bool allow_tp_beyond_node = false;
  bool strict = false;            // --strict: an unknown config key is an error (exit 2)
  bool verbose = false;           // --verbose: every default applied in the text reports
  std::string pipeline_schedule;  // --pipeline-schedule-algorithm
  std::string alloc_conf;         // --alloc-conf (PYTORCH_CUDA_ALLOC_CONF syntax)
  std::string hardware;           // --hardware / --gpu-arch
  std::string hardware_config;    // --hardware-config (Primus hardware_config YAML)
};

// Registers the shared flags on `cmd`; `o` must outlive the parse.
void add_job_options(CLI::App* cmd, JobOptions& o);

// The options Primus' projection parser shares across memory, performance and both (spec 2.3),
// plus the measured-profile options they all take.
struct ProjectionOptions {
  std::string data_path;       // --data_path: accepted, no data is read
  std::string export_config;   // --export_config: .yaml / .yml in Primus' keys, else JSON
  double gpu_clock_mhz = 0.0;  // --gpu-clock-mhz (> 0), else PRIMUS_GPU_CLOCK_MHZ; 0: none
  std::string profiling_mode = "simulate";  // simulate, benchmark, both
  std::string memory_mode = "simulate";     // simulate, benchmark
  std::string profile_path;                 // --profile: a measured profile
  std::int64_t benchmark_gpus = 0;
};

// Registers the projection flags on `cmd` (memory, performance and both alike).
void add_projection_options(CLI::App* cmd, ProjectionOptions& o);

// The job of `jo` with the projection options applied (the clock, notes for inert flags).
// Throws InputError for a mode that needs a profile without one, or a clock out of range.
JobSpec build_projection_job(const JobOptions& jo, const ProjectionOptions& o);

// --export_config: the resolved config as a Primus experiment YAML (FILE.yaml / .yml), else the
// resolved job as JSON.
void export_config(const JobOptions& jo, const ProjectionOptions& o, const JobSpec& job);

// The load request the options describe, reading the real process environment.
LoadRequest to_load_request(const JobOptions& o);

// Resolves, builds and validates the job (throws InputError on bad input).
JobSpec build_job(const JobOptions& o);

}  // namespace projector::cli
