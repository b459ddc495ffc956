#include "job_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "projector/commands/projection.h"
#include "projector/frontend/export_config.h"
#include "projector/job/spec.h"
#include "projector/report/job_report.h"
#include "projector/util/bounds.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {

// Every count a flag takes is bounded like a config integer (util/bounds.h); the values are read
// as 64-bit integers so an out-of-range number is reported as such, not as unparsable.
const CLI::Range& count_range() {
  static const CLI::Range range(std::int64_t{1}, kMaxCount);
  return range;
}

void add_job_options(CLI::App* cmd, JobOptions& o) {
  cmd->add_option("-c,--config,--exp", o.config,
                  "Primus experiment YAML, or a torchtitan job TOML (.toml)")
      ->required();
  cmd->add_option("--data-dir", o.data_dir, "catalogue directory (default: the bundled data/)");
  cmd->add_option("--primus-path", o.primus_path,
                  "Primus checkout for model/module presets (default: PRIMUS_PATH)");
  cmd->add_option("--backend_path,--backend-path", o.backend_path,
                  "installed back-end source to read model tables from (torchtitan: its flavor "
                  "tables; default: BACKEND_PATH, else <Primus>/third_party/torchtitan, else the "
                  "transcribed tables)");
  cmd->add_option("--framework-version", o.framework_version,
                  "the back-end's version the config was written for (torchtitan: a tag such as "
                  "v0.1.0, or a main-branch date YYYY-MM-DD; default: the config's header "
                  "comment, else the installed checkout, else the current one)");
  cmd->add_option("--set", o.set,
                  "override a back-end argument (Megatron: any argument): key=value (repeatable)")
      ->take_all();
  cmd->add_option("--tp", o.tp, "tensor parallel size")->check(count_range());
  cmd->add_option("--pp", o.pp, "pipeline parallel size")->check(count_range());
  cmd->add_option("--vpp,--num-virtual-stages-per-pipeline-rank", o.vpp,
                  "virtual pipeline stages per pipeline rank")
      ->check(count_range());
  cmd->add_option("--cp", o.cp, "context parallel size")->check(count_range());
  cmd->add_option("--ep,--target-ep-size", o.ep, "expert parallel size")->check(count_range());
  cmd->add_option("--etp", o.etp, "expert tensor parallel size")->check(count_range());
  cmd->add_option("--nodes,--target-nodes,--target-num-nodes", o.nodes,
                  "nodes (default: NNODES, else the minimum the parallelism needs)")
      ->check(count_range());
  cmd->add_option("--gpus-per-node", o.gpus_per_node,
                  "GPUs per node (default: GPUS_PER_NODE, else the accelerator's)")
      ->check(count_range());
  cmd->add_option("--mbs,--micro-batch-size", o.mbs, "micro batch size")->check(count_range());
  cmd->add_option("--gbs,--global-batch-size", o.gbs, "global batch size")->check(count_range());
  cmd->add_option("--seq,--seq-length", o.seq, "sequence length")->check(count_range());
  cmd->add_flag("--enable-zero-bubble", o.enable_zero_bubble, "zero-bubble pipeline schedule");
  cmd->add_flag("--enable-deepep", o.enable_deepep,
                "DeepEP dispatch / combine (deduplicated token dispatch)");
  cmd->add_option("--moe-expert-load-cv", o.moe_expert_load_cv,
                  "measured MoE routing imbalance: coefficient of variation of the tokens per "
                  "expert (0 = balanced, the default); the busiest EP rank paces dispatch, "
                  "grouped GEMMs and combine")
      ->check(CLI::Range(0.0, 16.0));
  cmd->add_option("--sync-free-stage", o.sync_free_stage,
                  "Primus sync-free MoE stage 0-3 (2 and 3 also enable Turbo DeepEP)")
      ->check(CLI::Range(0, 3));
  cmd->add_option("--alloc-conf", o.alloc_conf,
                  "PyTorch allocator settings as in PYTORCH_CUDA_ALLOC_CONF, e.g. "
                  "expandable_segments:True (default: the environment, else the framework's "
                  "launcher, else off)");
  cmd->add_option("--pipeline-schedule-algorithm,--schedule", o.pipeline_schedule,
                  "auto, 1f1b, interleaved, zerobubble, zbv-formatted, zbv-greedy-min, "
                  "zbv-greedy-half, dualpipev");
  cmd->add_option("--hardware,--gpu-arch", o.hardware,
                  "accelerator name, alias (gfx942, h100) or YAML file (default: "
                  "PRIMUS_GPU_ARCH, else the Primus configs/<ACCELERATOR>/ folder of the config, "
                  "else mi300x)");
  cmd->add_option("--hardware-config", o.hardware_config,
                  "network YAML (Primus hardware_config format)");
  cmd->add_flag("--allow-tp-beyond-node", o.allow_tp_beyond_node, "allow TP larger than one node");
  cmd->add_flag("-v,--verbose", o.verbose,
                "list every default applied in the text report (by default: the ones that "
                "decide memory, and a count)");
  cmd->add_flag("--strict", o.strict,
                "unknown config keys are errors (exit 2) instead of warnings; memory: also exit 1 "
                "when the verdict is OOM or AT RISK");
}

LoadRequest to_load_request(const JobOptions& o) {
  LoadRequest r;
  r.config_path = o.config;
  r.env = process_environment();
  r.data_dir = o.data_dir;  // empty: the bundled catalogue (no hidden environment switch)
  r.primus_path = o.primus_path;
  r.backend_path = o.backend_path;
  r.framework_version = o.framework_version;
  r.set_overrides = o.set;
  // Flags are range-checked on parse (count_range), so the values fit an int.
  auto opt = [](std::int64_t v) {
    return v > 0 ? std::optional<int>(static_cast<int>(v)) : std::nullopt;
  };
  r.cli.tp = opt(o.tp);
  r.cli.pp = opt(o.pp);
  r.cli.vpp = opt(o.vpp);
  r.cli.cp = opt(o.cp);
  r.cli.ep = opt(o.ep);
  r.cli.etp = opt(o.etp);
  r.cli.nodes = opt(o.nodes);
  r.cli.gpus_per_node = opt(o.gpus_per_node);
  r.cli.micro_batch_size = opt(o.mbs);
  r.cli.global_batch_size = opt(o.gbs);
  r.cli.seq_length = opt(o.seq);
  if (o.sync_free_stage >= 0) r.cli.sync_free_stage = o.sync_free_stage;
  if (o.moe_expert_load_cv >= 0.0) r.cli.moe_expert_load_cv = o.moe_expert_load_cv;
  if (o.enable_zero_bubble) r.cli.enable_zero_bubble = true;
  if (o.enable_deepep) r.cli.enable_deepep = true;
  if (!o.pipeline_schedule.empty()) r.cli.pipeline_schedule = o.pipeline_schedule;
  if (!o.alloc_conf.empty()) r.cli.alloc_conf = o.alloc_conf;
  r.hardware = o.hardware;
  r.hardware_config = o.hardware_config;
  r.allow_tp_beyond_node = o.allow_tp_beyond_node;
  r.strict_keys = o.strict;
  return r;
}

JobSpec build_job(const JobOptions& o) {
  return load_job(to_load_request(o));
}

void add_projection_options(CLI::App* cmd, ProjectionOptions& o) {
  cmd->add_option("--data_path,--data-path", o.data_path,
                  "accepted for Primus compatibility (no data is read)");
  cmd->add_option("--export_config,--export-config", o.export_config,
                  "write the resolved config to FILE: .yaml / .yml as a Primus experiment in its "
                  "own keys, anything else as the resolved job (JSON)");
  cmd->add_option("--gpu-clock-mhz", o.gpu_clock_mhz,
                  "sustained GPU clock for compute in MHz (> 0; env PRIMUS_GPU_CLOCK_MHZ)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            char* end = nullptr;
            const double mhz = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !(mhz > 0.0) || mhz > 1e5) {
              return fmt::format("'{}' is not a clock in MHz (above 0, at most 100000)", text);
            }
            return "";
          },
          "MHZ > 0"));
  cmd->add_option("--profiling-mode", o.profiling_mode,
                  "simulate (analytical models; default), benchmark or both (need a measured "
                  "profile)")
      ->check(CLI::IsMember({"simulate", "benchmark", "both"}));
  cmd->add_option("--memory-mode", o.memory_mode,
                  "simulate (analytical), or benchmark (anchor memory on the profile's allocator "
                  "peak)")
      ->check(CLI::IsMember({"simulate", "benchmark"}));
  cmd->add_option("--profile", o.profile_path,
                  "measured profile (`projector profile --json`) for the benchmark modes");
  cmd->add_option("--benchmark-gpus", o.benchmark_gpus,
                  "GPUs a benchmark run would use (benchmark mode only)")
      ->check(CLI::Range(std::int64_t{0}, kMaxCount));
}

namespace {

// --gpu-clock-mhz, else PRIMUS_GPU_CLOCK_MHZ (spec 2.3); 0 when neither is given.
double requested_clock_mhz(const ProjectionOptions& o) {
  if (o.gpu_clock_mhz > 0.0) return o.gpu_clock_mhz;
  const char* env = std::getenv("PRIMUS_GPU_CLOCK_MHZ");
  if (env == nullptr || *env == '\0') return 0.0;
  char* end = nullptr;
  const double clock = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(clock > 0.0)) {
    throw InputError({"<environment>", 0, 0}, "PRIMUS_GPU_CLOCK_MHZ",
                     fmt::format("'{}' is not a clock in MHz above 0", env));
  }
  return clock;
}

}  // namespace

JobSpec build_projection_job(const JobOptions& jo, const ProjectionOptions& o) {
  ProjectionSettings settings;
  settings.profiling_mode = o.profiling_mode;
  settings.memory_mode = o.memory_mode;
  settings.profile_path = o.profile_path;
  check_projection_settings(settings);
  JobSpec job = build_job(jo);
  apply_compute_clock(job, requested_clock_mhz(o), "--gpu-clock-mhz");
  if (!o.data_path.empty()) {
    job.defaults.push_back({"data_path", o.data_path,
                            "--data_path is accepted for Primus compatibility; a projection "
                            "reads no data"});
  }
  if (o.benchmark_gpus > 0 && o.profiling_mode == "simulate") {
    job.warnings.push_back("--benchmark-gpus only applies to benchmark mode; ignored in simulate");
  }
  return job;
}

void export_config(const JobOptions& jo, const ProjectionOptions& o, const JobSpec& job) {
  if (o.export_config.empty()) return;
  const std::string& path = o.export_config;
  const bool yaml = path.ends_with(".yaml") || path.ends_with(".yml");
  if (!yaml) return write_output(path, job_json(job), "--export-config");
  write_output(path, resolved_config_yaml(resolve_config(to_load_request(jo)), job),
               "--export-config");
}

}  // namespace projector::cli
