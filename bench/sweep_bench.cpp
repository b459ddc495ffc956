// Sweep speed: Llama 3.1 70B (the bundled example config, bf16) on 64 nodes (512 GPUs). The
// budget is 10^5 legal candidate layouts with the full performance projection of every memory
// survivor in under 60 s on 2 cores.
//
// The default axes give ~1.4 x 10^4 legal layouts for this model (see BM_Enumerate70B), so the
// benchmark widens the grid honestly with knobs the sweep supports: the V-shape schedules, block
// recompute depths (block1..block4 alongside none / selective / full), micro batches up to 16 and
// three DDP bucket sizes (40, 160, 640 MB). The counters print what was enumerated, found illegal,
// pruned for memory and projected.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/sweep/sweep.h"

namespace {

using namespace projector;

JobSpec llama70b(const char* hardware) {
  LoadRequest req;
  req.config_path = std::string(PROJECTOR_DEFAULT_DATA_DIR) +
                    "/../examples/llama3.1_70B-FP8-pretrain-mi355x.yaml";
  req.hardware = hardware;
  req.set_overrides = {"fp8=false"};
  req.cli.global_batch_size = 1024;
  return load_job(req);
}

constexpr int kNodes = 64;
constexpr const char* kWideGrid =
    "schedule=1f1b,interleaved,zero-bubble,zbv-formatted,zbv-greedy-min,zbv-greedy-half,"
    "dualpipev; recompute=none,selective,full,block1,block2,block4; mbs=1,2,4,8,16; "
    "bucket_mb=40,160,640";

sweep::SpaceOptions space() {
  sweep::SpaceOptions s;
  s.nodes = kNodes;
  return s;
}

void BM_Enumerate70B(benchmark::State& state) {
  const JobSpec base = llama70b("h100_sxm");
  const sweep::Grid grid = state.range(0) == 0 ? sweep::Grid{} : sweep::parse_grid(kWideGrid);
  sweep::Enumeration en;
  for (auto _ : state) {
    en = sweep::enumerate(base, grid, space());
    benchmark::DoNotOptimize(en.legal.data());
  }
  state.counters["enumerated"] = static_cast<double>(en.enumerated);
  state.counters["legal"] = static_cast<double>(en.legal.size());
}
BENCHMARK(BM_Enumerate70B)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Per-candidate memory projection: a fixed spread of 512 legal layouts. Arg 1: with the
// in-flight memo a sweep worker keeps (what the sweep pays); arg 0: without (every projection
// builds its schedule table).
void BM_MemoryPerCandidate(benchmark::State& state) {
  const JobSpec base = llama70b("h100_sxm");
  const sweep::Enumeration en = sweep::enumerate(base, sweep::parse_grid(kWideGrid), space());
  std::vector<JobSpec> jobs;
  const std::size_t step = std::max<std::size_t>(1, en.legal.size() / 512);
  for (std::size_t i = 0; i < en.legal.size(); i += step) {
    jobs.push_back(sweep::make_job(base, en.legal[i], kNodes));
  }
  schedule::InFlightCache in_flight;
  MemoryOptions mo;
  mo.suggest_remedies = false;
  if (state.range(0) == 1) mo.in_flight_cache = &in_flight;
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(project_memory(jobs[k], mo).peak_point_bytes);
    k = (k + 1) % jobs.size();
  }
}
BENCHMARK(BM_MemoryPerCandidate)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// Per-candidate performance projection (warm cost cache): 256 memory survivors.
void BM_PerformancePerCandidate(benchmark::State& state) {
  const JobSpec base = llama70b("h100_sxm");
  const sweep::Enumeration en = sweep::enumerate(base, sweep::parse_grid(kWideGrid), space());
  MemoryOptions mo;
  mo.suggest_remedies = false;
  std::vector<JobSpec> jobs;
  const std::size_t step = std::max<std::size_t>(1, en.legal.size() / 1024);
  for (std::size_t i = 0; i < en.legal.size() && jobs.size() < 256; i += step) {
    JobSpec j = sweep::make_job(base, en.legal[i], kNodes);
    if (project_memory(j, mo).peak_point_bytes <= 0.9 * j.cluster.accelerator.hbm_bytes) {
      jobs.push_back(std::move(j));
    }
  }
  CostCache cache(base.cluster.accelerator, base.cluster.network);
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  std::size_t k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(project_performance(jobs[k], cache, po).iteration_s);
    k = (k + 1) % jobs.size();
  }
  state.counters["jobs"] = static_cast<double>(jobs.size());
}
BENCHMARK(BM_PerformancePerCandidate)->Unit(benchmark::kMicrosecond);

// The whole sweep, wide grid, on range(0) threads.
void sweep_bench(benchmark::State& state, const char* hardware) {
  const JobSpec base = llama70b(hardware);
  const sweep::Grid grid = sweep::parse_grid(kWideGrid);
  sweep::Options o;
  o.threads = static_cast<int>(state.range(0));
  sweep::Result r;
  for (auto _ : state) {
    r = sweep::run_sweep(base, grid, space(), o);
    benchmark::DoNotOptimize(r.ranked.data());
  }
  state.counters["enumerated"] = static_cast<double>(r.enumerated);
  state.counters["legal"] = static_cast<double>(r.oom + r.projected + r.failed);
  state.counters["oom"] = static_cast<double>(r.oom);
  state.counters["projected"] = static_cast<double>(r.projected);
  state.counters["failed"] = static_cast<double>(r.failed);
  state.counters["mem_us_per_cand"] =
      r.memory_s * 1e6 / static_cast<double>(std::max<std::size_t>(1, r.oom + r.projected));
  state.counters["perf_us_per_proj"] =
      r.performance_s * 1e6 / static_cast<double>(std::max<std::size_t>(1, r.projected));
}
void BM_Sweep70B_H100(benchmark::State& state) {
  sweep_bench(state, "h100_sxm");
}
void BM_Sweep70B_MI300X(benchmark::State& state) {
  sweep_bench(state, "mi300x");
}
BENCHMARK(BM_Sweep70B_H100)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
BENCHMARK(BM_Sweep70B_MI300X)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace
