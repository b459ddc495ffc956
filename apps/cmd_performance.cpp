// `projector performance` and `projector both`: the performance projection (and the memory
// projection with it), with the Primus projection command's options.
#include <fmt/core.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "job_options.h"
#include "projector/perf/perf.h"
#include "projector/report/job_report.h"
#include "projector/report/memory_report.h"
#include "projector/report/perf_report.h"
#include "projector/schedule/schedule.h"
#include "projector/util/error.h"

namespace projector::cli {
namespace {

struct PerfCliOptions {
  JobOptions job;
  std::string json_path;
  std::string trace_path;
  std::string export_config;
  std::string profiling_mode = "simulate";
  std::string gemm_backend = "analytical";
  std::string data_path;
  std::string backend_path;
  std::string scan_nodes;
  int benchmark_gpus = 0;
  double gpu_clock_mhz = 0.0;
};

void add_perf_options(CLI::App* cmd, PerfCliOptions& o) {
  add_job_options(cmd, o.job);
  cmd->add_option("--json", o.json_path, "write the projection as JSON to FILE ('-': stdout)");
  cmd->add_option("--trace", o.trace_path,
                  "write the simulated timeline as Chrome/Perfetto trace JSON to FILE");
  cmd->add_option("--export_config,--export-config", o.export_config,
                  "write the resolved job (JSON) to FILE");
  cmd->add_option("--profiling-mode", o.profiling_mode,
                  "simulate (analytical models; default), benchmark or both (need a measured "
                  "profile)")
      ->check(CLI::IsMember({"simulate", "benchmark", "both"}));
  cmd->add_option("--gemm-backend", o.gemm_backend,
                  "GEMM cost backend: analytical (tile/wave model; 'origami' is accepted as an "
                  "alias)")
      ->check(CLI::IsMember({"analytical", "origami"}));
  cmd->add_option("--data_path,--data-path", o.data_path,
                  "accepted for Primus compatibility (no data is read)");
  cmd->add_option("--backend_path,--backend-path", o.backend_path,
                  "accepted for Primus compatibility (no backend is imported)");
  cmd->add_option("--benchmark-gpus", o.benchmark_gpus,
                  "GPUs a benchmark run would use (benchmark mode only)");
  cmd->add_option("--gpu-clock-mhz", o.gpu_clock_mhz,
                  "sustained GPU clock for compute (env PRIMUS_GPU_CLOCK_MHZ)");
  cmd->add_option("--scan-nodes", o.scan_nodes,
                  "comma-separated node counts: print a scaling table (e.g. 1,2,4,8)");
}

JobSpec make_job(const PerfCliOptions& o) {
  if (o.profiling_mode != "simulate") {
    throw InputError({}, "--profiling-mode",
                     fmt::format("'{}' needs a measured single-node profile, which this version "
                                 "cannot record yet; use --profiling-mode simulate",
                                 o.profiling_mode));
  }
  JobSpec job = build_job(o.job);
  double clock = o.gpu_clock_mhz;
  if (clock <= 0.0) {
    if (const char* env = std::getenv("PRIMUS_GPU_CLOCK_MHZ"); env != nullptr && *env != '\0') {
      char* end = nullptr;
      clock = std::strtod(env, &end);
      if (end == env || *end != '\0' || clock <= 0.0) {
        throw InputError({"<environment>", 0, 0}, "PRIMUS_GPU_CLOCK_MHZ",
                         fmt::format("'{}' is not a clock in MHz", env));
      }
    }
  }
  if (clock > 0.0 && job.cluster.accelerator.boost_clock_mhz > 0.0 &&
      clock > job.cluster.accelerator.boost_clock_mhz) {
    throw InputError(
        {}, "--gpu-clock-mhz",
        fmt::format("{} MHz is above the {} boost clock ({} MHz)", clock,
                    job.cluster.accelerator.name, job.cluster.accelerator.boost_clock_mhz));
  }
  if (clock > 0.0) {
    job.cluster.accelerator.sustained_clock_mhz = clock;
    job.defaults.push_back({"gpu_clock_mhz", fmt::format("{}", clock),
                            "compute clock set by --gpu-clock-mhz / PRIMUS_GPU_CLOCK_MHZ"});
  }
  if (!o.data_path.empty()) job.warnings.push_back("--data_path is accepted but not used");
  if (!o.backend_path.empty()) job.warnings.push_back("--backend_path is accepted but not used");
  if (o.benchmark_gpus > 0) {
    job.warnings.push_back("--benchmark-gpus only applies to benchmark mode; ignored in simulate");
  }
  return job;
}

void write_file(const std::string& path, const std::string& text, const std::string& what) {
  if (path == "-") {
    fmt::print("{}\n", text);
    return;
  }
  std::ofstream f(path);
  if (!f) throw InputError({path, 0, 0}, what, "cannot open the file for writing");
  f << text << '\n';
}

std::vector<int> parse_node_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0) {
      throw InputError({}, "--scan-nodes", fmt::format("'{}' is not a positive node count", item));
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

void print_warnings(const JobSpec& job) {
  for (const std::string& w : job.warnings) fmt::print(stderr, "projector: warning: {}\n", w);
}

// `--pipeline-schedule-algorithm all`: every schedule that fits the layout, side by side.
void print_schedule_comparison(const PerfCliOptions& o) {
  fmt::print("\n-- Pipeline schedules compared --\n");
  fmt::print("  {:<18} {:>12} {:>10} {:>14} {:>12}  {}\n", "schedule", "iter ms", "bubble %",
             "tokens/s/GPU", "peak GiB", "note");
  PerfCliOptions base = o;
  for (const ScheduleKind kind : kAllSchedules) {
    base.job.pipeline_schedule = std::string(to_string(kind));
    PerfCliOptions attempt = base;
    if (is_v_shape(kind)) attempt.job.vpp = 2;
    if (kind == ScheduleKind::k1F1B || kind == ScheduleKind::kZeroBubble) attempt.job.vpp = 1;
    if (kind == ScheduleKind::kInterleaved && attempt.job.vpp < 2) attempt.job.vpp = 2;
    try {
      const JobSpec job = make_job(attempt);
      const PerfReport rep = project_performance(job);
      fmt::print("  {:<18} {:>12.1f} {:>10.1f} {:>14.1f} {:>12.2f}  {}\n", to_string(kind),
                 rep.iteration_s * 1e3, 100.0 * rep.bubble_fraction, rep.tokens_per_s_per_gpu,
                 rep.memory.peak_point_bytes / (1024.0 * 1024.0 * 1024.0),
                 job.parallel.vpp != o.job.vpp && o.job.vpp != 0
                     ? fmt::format("vpp {}", job.parallel.vpp)
                     : std::string());
    } catch (const InputError& e) {
      fmt::print("  {:<18} {:>12} {:>10} {:>14} {:>12}  not applicable: {}\n", to_string(kind), "-",
                 "-", "-", "-", e.message());
    }
  }
}

void print_node_scan(const PerfCliOptions& o) {
  const std::vector<int> nodes = parse_node_list(o.scan_nodes);
  fmt::print("\n-- Scaling over data parallelism (strong scaling: the global batch is fixed) --\n");
  fmt::print("  {:>6} {:>6} {:>5} {:>7} {:>12} {:>14} {:>8} {:>10}\n", "nodes", "GPUs", "DP",
             "micro/DP", "iter ms", "tokens/s/GPU", "MFU %", "speedup");
  double first_tps = 0.0;
  int first_nodes = 0;
  for (int n : nodes) {
    PerfCliOptions attempt = o;
    attempt.job.nodes = n;
    try {
      const JobSpec job = make_job(attempt);
      PerfOptions po;
      po.keep_op_table = false;
      po.with_memory = false;
      const PerfReport rep = project_performance(job, po);
      if (first_nodes == 0) {
        first_nodes = n;
        first_tps = rep.tokens_per_s;
      }
      fmt::print("  {:>6} {:>6} {:>5} {:>7} {:>12.1f} {:>14.1f} {:>8.1f} {:>9.2f}x\n", n,
                 rep.world_size, job.parallel.dp, rep.num_microbatches, rep.iteration_s * 1e3,
                 rep.tokens_per_s_per_gpu, 100.0 * rep.mfu, rep.tokens_per_s / first_tps);
      if (rep.num_microbatches == 1) {
        fmt::print(
            "         one microbatch per DP rank: more nodes cannot help at GBS {} / MBS {}\n",
            job.runtime.global_batch_size, job.runtime.micro_batch_size);
      }
    } catch (const InputError& e) {
      fmt::print("  {:>6} {}\n", n, e.message());
    }
  }
}

int run_performance(const PerfCliOptions& o, bool both) {
  const JobSpec job = make_job(o);
  print_warnings(job);
  if (!o.export_config.empty()) write_file(o.export_config, job_json(job), "--export_config");
  PerfOptions po;
  po.record_timeline = !o.trace_path.empty();
  const PerfReport rep = project_performance(job, po);
  const bool json_to_stdout = o.json_path == "-";
  if (!json_to_stdout) {
    if (both) fmt::print("{}\n", memory_summary_text(job, rep.memory));
    fmt::print("{}", perf_summary_text(job, rep));
    if (o.job.pipeline_schedule == "all") print_schedule_comparison(o);
    if (!o.scan_nodes.empty()) print_node_scan(o);
    if (!job.defaults.empty()) {
      fmt::print("\n{} default(s) applied (see `projector config` or the JSON output)\n",
                 job.defaults.size());
    }
  }
  if (!o.json_path.empty()) {
    std::string text = perf_json(job, rep);
    if (both) {
      auto j = nlohmann::ordered_json::parse(text);
      j["kind"] = "both";
      j["memory"] = nlohmann::ordered_json::parse(memory_json(job, rep.memory));
      text = j.dump(2);
    }
    write_file(o.json_path, text, "--json");
  }
  if (!o.trace_path.empty()) write_file(o.trace_path, chrome_trace_json(rep), "--trace");
  return kExitOk;
}

}  // namespace

void add_performance_commands(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<PerfCliOptions>();
  auto* perf = app.add_subcommand("performance", "iteration time, tokens/s/GPU, TFLOP/s, MFU");
  add_perf_options(perf, *opts);
  perf->callback([opts, &exit_code] { exit_code = run_performance(*opts, false); });

  auto both_opts = std::make_shared<PerfCliOptions>();
  auto* both = app.add_subcommand("both", "memory and performance projection in one pass");
  add_perf_options(both, *both_opts);
  both->callback([both_opts, &exit_code] { exit_code = run_performance(*both_opts, true); });
}

}  // namespace projector::cli
