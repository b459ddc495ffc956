// `projector performance` and `projector both`: the performance projection (and the memory
// projection with it), with the Primus projection command's options.
#include <fmt/core.h>

#include <memory>

#include "commands.h"
#include "job_options.h"
#include "projector/commands/projection.h"
#include "projector/interval/training_plan.h"
#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "projector/profile/benchmark.h"
#include "projector/report/csv_report.h"
#include "projector/report/html_report.h"
#include "projector/report/job_report.h"
#include "projector/report/memory_report.h"
#include "projector/report/perf_report.h"
#include "projector/schedule/schedule.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

struct PerfCliOptions {
  JobOptions job;
  ProjectionOptions proj;
  std::string json_path;
  std::string trace_path;
  std::string csv_path;
  std::string html_path;
  std::string gemm_backend = "analytical";
  std::string scan_nodes;
  std::string train_tokens;
  double gpu_hour_cost_usd = 0.0;
};

void add_perf_options(CLI::App* cmd, PerfCliOptions& o) {
  add_job_options(cmd, o.job);
  add_projection_options(cmd, o.proj);
  cmd->add_option("--json", o.json_path, "write the projection as JSON to FILE ('-': stdout)");
  cmd->add_option("--trace", o.trace_path,
                  "write the simulated timeline as Chrome/Perfetto trace JSON to FILE");
  cmd->add_option("--csv", o.csv_path,
                  "write one row per pipeline rank class as CSV to FILE ('-': stdout)");
  cmd->add_option("--html", o.html_path,
                  "write a self-contained offline HTML report (charts, timeline) to FILE");
  cmd->add_option("--gemm-backend", o.gemm_backend,
                  "GEMM cost backend: analytical (tile/wave model; 'origami' is accepted as an "
                  "alias)")
      ->check(CLI::IsMember({"analytical", "origami"}));
  cmd->add_option("--scan-nodes", o.scan_nodes,
                  "comma-separated node counts: print a scaling table (e.g. 1,2,4,8)");
  cmd->add_option("--train-tokens", o.train_tokens,
                  "tokens to train on (e.g. 15T, 300B; samples for a recommendation model): adds "
                  "time to train, GPU-hours and board energy, each with its 80 % range");
  cmd->add_option("--gpu-hour-cost", o.gpu_hour_cost_usd,
                  "price of one GPU-hour in USD: adds the cost of --train-tokens")
      ->check(CLI::Range(1e-9, 1e9));
}

JobSpec make_job(const PerfCliOptions& o) {
  return build_projection_job(o.job, o.proj);
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

// Recommendation jobs keep TorchRec's per-rank batch: the global batch grows with the GPUs.
void print_recsys_scan(const std::vector<ScalingPoint>& points, const JobSpec& job) {
  fmt::print("\n-- Scaling over nodes ({} samples per GPU; the global batch grows) --\n",
             job.runtime.micro_batch_size);
  fmt::print("  {:>6} {:>6} {:>12} {:>10} {:>14} {:>14} {:>10}\n", "nodes", "GPUs", "global batch",
             "step ms", "samples/s", "samples/s/GPU", "speedup");
  double first = 0.0;
  for (const ScalingPoint& p : points) {
    if (!p.error.empty()) {
      fmt::print("  {:>6} {}\n", p.nodes, p.error);
      continue;
    }
    if (first == 0.0) first = p.tokens_per_s;
    fmt::print("  {:>6} {:>6} {:>12} {:>10.2f} {:>14.0f} {:>14.0f} {:>9.2f}x\n", p.nodes,
               p.world_size, static_cast<std::int64_t>(p.world_size) * job.runtime.micro_batch_size,
               p.iteration_s * 1e3, p.tokens_per_s, p.tokens_per_s_per_gpu, p.tokens_per_s / first);
  }
}

void print_node_scan(const std::vector<ScalingPoint>& points, const JobSpec& job) {
  if (job.model.family == ModelFamily::kRecommendation) return print_recsys_scan(points, job);
  fmt::print("\n-- Scaling over data parallelism (strong scaling: the global batch is fixed) --\n");
  fmt::print("  {:>6} {:>6} {:>5} {:>7} {:>12} {:>14} {:>8} {:>10}\n", "nodes", "GPUs", "DP",
             "micro/DP", "iter ms", "tokens/s/GPU", "MFU %", "speedup");
  double first_tps = 0.0;
  for (const ScalingPoint& p : points) {
    if (!p.error.empty()) {
      fmt::print("  {:>6} {}\n", p.nodes, p.error);
      continue;
    }
    if (first_tps == 0.0) first_tps = p.tokens_per_s;
    fmt::print("  {:>6} {:>6} {:>5} {:>7} {:>12.1f} {:>14.1f} {:>8.1f} {:>9.2f}x\n", p.nodes,
               p.world_size, p.dp, p.num_microbatches, p.iteration_s * 1e3, p.tokens_per_s_per_gpu,
               100.0 * p.mfu, p.tokens_per_s / first_tps);
    if (p.num_microbatches == 1) {
      fmt::print("         one microbatch per DP rank: more nodes cannot help at GBS {} / MBS {}\n",
                 job.runtime.global_batch_size, job.runtime.micro_batch_size);
    }
  }
}

void write_html(const PerfCliOptions& o, const CLI::App& cmd, const JobSpec& job,
                const PerfReport& rep, bool both, const std::string& doc) {
  HtmlReportInput in;
  in.kind = both ? "both" : "performance";
  in.title = fmt::format("projector {}: {}", in.kind, job.model.name);
  in.command = command_line(cmd);
  in.input_path = job.source;
  in.input_text = read_input_text(job.source);
  in.job_json = job_json(job);
  in.performance_json = doc;
  in.trace_json = chrome_trace_json(rep);
  write_output(o.html_path, html_report(in), "--html");
}

int run_performance(const PerfCliOptions& o, const CLI::App& cmd, bool both) {
  const JobSpec job = make_job(o);
  check_output(o.json_path, "--json");
  check_output(o.csv_path, "--csv");
  check_output(o.html_path, "--html");
  check_output(o.trace_path, "--trace");
  check_output(o.proj.export_config, "--export-config");
  print_warnings(job);
  export_config(o.job, o.proj, job);
  ProjectionSettings s;
  s.both = both;
  s.profiling_mode = o.proj.profiling_mode;
  s.memory_mode = o.proj.memory_mode;
  s.profile_path = o.proj.profile_path;
  s.benchmark_gpus = o.proj.benchmark_gpus;
  s.plan = make_plan_inputs(o.train_tokens, o.gpu_hour_cost_usd);
  s.data_dir = o.job.data_dir;
  s.record_timeline = !o.trace_path.empty() || !o.html_path.empty();
  if (!o.scan_nodes.empty()) s.scan_nodes = parse_node_list(o.scan_nodes, "--scan-nodes");
  s.job_at_nodes = [&o](int nodes) {
    PerfCliOptions attempt = o;
    attempt.job.nodes = nodes;
    return make_job(attempt);
  };
  const Projection p = run_projection(job, s);
  const PerfReport& rep = p.report;
  const bool doc_to_stdout = o.json_path == "-" || o.csv_path == "-";
  if (!doc_to_stdout) {
    if (both) fmt::print("{}\n", memory_summary_text(job, rep.memory, o.job.verbose));
    fmt::print("{}", perf_summary_text(job, rep));
    if (p.measured) fmt::print("{}", profile::benchmark_text(p.bench, p.profile));
    if (o.proj.memory_mode == "benchmark") {
      fmt::print("{}", profile::memory_anchor_text(profile::anchor_memory(p.profile, rep.memory),
                                                   p.profile));
    }
    if (o.job.pipeline_schedule == "all") print_schedule_comparison(o);
    if (!p.scaling.empty()) print_node_scan(p.scaling, job);
    if (!job.defaults.empty()) {
      fmt::print("\n{} default(s) applied (see `projector config` or the JSON output)\n",
                 job.defaults.size());
    }
  }
  if (!o.json_path.empty() || !o.csv_path.empty() || !o.html_path.empty()) {
    const std::string doc = projection_json(job, s, p);
    if (!o.json_path.empty()) write_output(o.json_path, doc, "--json");
    if (!o.csv_path.empty()) write_output(o.csv_path, performance_csv(doc), "--csv");
    if (!o.html_path.empty()) write_html(o, cmd, job, rep, both, doc);
  }
  if (!o.trace_path.empty()) write_output(o.trace_path, chrome_trace_json(rep), "--trace");
  return kExitOk;
}

}  // namespace

void add_performance_commands(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<PerfCliOptions>();
  auto* perf = app.add_subcommand("performance", "iteration time, tokens/s/GPU, TFLOP/s, MFU");
  add_perf_options(perf, *opts);
  perf->callback([opts, perf, &exit_code] { exit_code = run_performance(*opts, *perf, false); });

  auto both_opts = std::make_shared<PerfCliOptions>();
  auto* both = app.add_subcommand("both", "memory and performance projection in one pass");
  add_perf_options(both, *both_opts);
  both->callback(
      [both_opts, both, &exit_code] { exit_code = run_performance(*both_opts, *both, true); });
}

}  // namespace projector::cli
