#include "projector/commands/projection.h"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "projector/hardware/catalog.h"
#include "projector/interval/interval.h"
#include "projector/job/spec.h"
#include "projector/profile/trace.h"
#include "projector/report/memory_report.h"
#include "projector/util/bounds.h"
#include "projector/util/error.h"

namespace projector {
namespace {

constexpr std::size_t kMaxScanPoints = 64;

// One node count of the scan, or why it is impossible.
ScalingPoint scan_point(int nodes, const JobSpec& job, const ResidualTable& residuals) {
  ScalingPoint p;
  p.nodes = nodes;
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  const PerfReport rep = project_performance(job, po);
  p.world_size = rep.world_size;
  p.dp = job.dp();
  p.num_microbatches = rep.num_microbatches;
  p.iteration_s = rep.iteration_s;
  p.tokens_per_s = rep.tokens_per_s;
  p.tokens_per_s_per_gpu = rep.tokens_per_s_per_gpu;
  p.mfu = rep.mfu;
  if (const auto c = calibrated_range(residuals, job, rep)) {
    p.tokens_per_s_per_gpu_lo = c->tokens_per_s_per_gpu_lo;
    p.tokens_per_s_per_gpu_hi = c->tokens_per_s_per_gpu_hi;
  }
  return p;
}

}  // namespace

void check_projection_settings(const ProjectionSettings& s) {
  if ((s.profiling_mode != "simulate" || s.memory_mode != "simulate") && s.profile_path.empty()) {
    const ProjectionKeys& k = s.keys;
    throw InputError({}, k.profile,
                     fmt::format("{}{}{} {}{}{} needs a measured profile: write one with "
                                 "`projector profile --trace TRACE.json.gz --config X --json "
                                 "PROFILE.json`, then pass {}{}PROFILE.json",
                                 k.profiling_mode, k.assign, s.profiling_mode, k.memory_mode,
                                 k.assign, s.memory_mode, k.profile, k.assign));
  }
}

void apply_compute_clock(JobSpec& job, double clock, const std::string& key) {
  if (clock <= 0.0) return;
  const double boost = job.cluster.accelerator.boost_clock_mhz;
  if (boost > 0.0 && clock > boost) {
    throw InputError({}, key,
                     fmt::format("{} MHz is above the {} boost clock ({} MHz)", clock,
                                 job.cluster.accelerator.name, boost));
  }
  // Power management keeps a training GPU well above a tenth of its boost clock; below that the
  // value is a typo or a unit error (GHz, Hz), not a clock.
  const double floor_mhz = boost > 0.0 ? boost / 10.0 : 100.0;
  if (clock < floor_mhz) {
    throw InputError({}, key,
                     fmt::format("{:g} MHz is below {:g} MHz, a tenth of the {} boost clock: not a "
                                 "clock a training GPU runs at (the value is in MHz)",
                                 clock, floor_mhz, job.cluster.accelerator.name));
  }
  job.cluster.accelerator.sustained_clock_mhz = clock;
  job.defaults.push_back({"gpu_clock_mhz", fmt::format("{}", clock),
                          "compute clock set by --gpu-clock-mhz / PRIMUS_GPU_CLOCK_MHZ"});
}

std::vector<int> parse_node_list(const std::string& text, const std::string& key) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // Each size is a whole projection; a scaling table has a handful of rows.
    if (out.size() >= kMaxScanPoints) {
      throw InputError({}, key,
                       fmt::format("more than {} node counts; scan fewer sizes", kMaxScanPoints));
    }
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v <= 0 || v > kMaxCount) {
      throw InputError({}, key, fmt::format("'{}' is not a node count in 1..{}", item, kMaxCount));
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

Projection run_projection(const JobSpec& job, const ProjectionSettings& s) {
  check_projection_settings(s);
  Projection out;
  PerfOptions po;
  po.record_timeline = s.record_timeline;
  po.routing_skew_bracket = true;
  out.measured = s.profiling_mode != "simulate";
  if (!s.profile_path.empty()) out.profile = profile::read_profile(s.profile_path);
  if (s.benchmark_gpus > 0 && out.measured && s.benchmark_gpus != out.profile.model.bench.world) {
    throw InputError({s.profile_path, 0, 0}, s.keys.benchmark_gpus,
                     fmt::format("{} GPUs, but the profile's bench ran on {}", s.benchmark_gpus,
                                 out.profile.model.bench.world));
  }
  if (out.measured) {
    out.bench = profile::project_benchmark(job, out.profile, po, s.profiling_mode == "both");
  }
  out.report = out.measured ? out.bench.report : project_performance(job, po);
  // The calibrated 80 % ranges from the published runs of the job's regime (docs/validation.md):
  // the memory one first (it may change the verdict), then throughput, then the plan.
  const ResidualTable residuals =
      load_residuals(s.data_dir.empty() ? default_data_dir() : s.data_dir);
  PerfReport& rep = out.report;
  if (rep.has_memory) attach_memory_range(residuals, job, rep.memory);
  rep.range = calibrated_range(residuals, job, rep);
  if (!rep.range) {
    const Regime regime = classify_regime(job);
    rep.range_refusal = range_refusal(residuals, regime, ResidualMetric::kThroughput);
    if (!rep.range_refusal.empty()) rep.unranged_regime = regime.key;
  }
  if (s.plan.train_tokens > 0.0) rep.plan = plan_training(job, rep, s.plan);
  for (const int nodes : s.scan_nodes) {
    try {
      out.scaling.push_back(scan_point(nodes, s.job_at_nodes(nodes), residuals));
    } catch (const InputError& e) {
      ScalingPoint p;
      p.nodes = nodes;
      p.error = e.message();
      out.scaling.push_back(std::move(p));
    }
  }
  return out;
}

std::string projection_json(const JobSpec& job, const ProjectionSettings& s, const Projection& p) {
  const PerfReport& rep = p.report;
  const bool memory_benchmark = s.memory_mode == "benchmark";
  if (!s.both && p.scaling.empty() && !p.measured && !memory_benchmark) {
    return perf_json(job, rep);
  }
  auto j = nlohmann::ordered_json::parse(perf_json(job, rep));
  if (s.both) {
    j["kind"] = "both";
    j["memory"] = nlohmann::ordered_json::parse(memory_json(job, rep.memory));
  }
  if (!p.scaling.empty()) j["scaling"] = nlohmann::ordered_json::parse(scaling_json(p.scaling));
  if (p.measured) {
    j["benchmark"] = nlohmann::ordered_json::parse(profile::benchmark_json(p.bench, p.profile));
  }
  if (memory_benchmark) {
    j["memory_benchmark"] = nlohmann::ordered_json::parse(
        profile::memory_anchor_json(profile::anchor_memory(p.profile, rep.memory), p.profile));
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

PerfReport project_workload(const JobSpec& job) {
  PerfOptions po;
  po.with_memory = false;
  return project_performance(job, po);
}

profile::MeasuredProfile measure_profile(
    const ProfileSettings& s,
    const std::function<JobSpec(const std::optional<std::string>& trace_hardware)>& build_target) {
  const profile::TraceData trace = profile::read_trace(s.trace);
  profile::AnalyzeOptions ao;
  ao.launch_gap_us = s.launch_gap_us;
  profile::MeasuredProfile p = profile::analyze_trace(trace, ao);
  std::optional<std::string> trace_hardware;
  if (!p.device.empty()) {
    trace_hardware =
        match_accelerator_name(p.device, s.data_dir.empty() ? default_data_dir() : s.data_dir);
  }
  const JobSpec target = build_target(trace_hardware);
  const JobSpec bench =
      profile::reduce_to_bench(target, s.benchmark_gpus, p.model.bench.reductions);
  profile::CompareOptions co;
  co.pp_rank = s.pp_rank;
  co.data_dir = s.data_dir;
  profile::compare_with_job(p, bench, co);
  return p;
}

}  // namespace projector
