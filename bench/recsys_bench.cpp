// Recommendation jobs (TorchRec DLRM): the planner, a full `both` projection (plan already made by
// the job builder: workload, pricing, the train-pipeline step, per-rank memory), and a re-plan +
// projection per sweep candidate, on the MLPerf DLRM-DCNv2 configuration (26 tables, 8 x H100).
#include <benchmark/benchmark.h>

#include "projector/frontend/loader.h"
#include "projector/job/recsys_plan.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"

namespace {

using namespace projector;

JobSpec mlperf(int nodes) {
  LoadRequest r;
  r.config_path =
      std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../tests/data/torchrec/mlperf_dlrm_dcnv2.yaml";
  r.env = fixed_environment({});
  r.hardware = "h100_sxm";
  r.cli.nodes = nodes;
  return load_job(r);
}

void BM_RecsysPlanner(benchmark::State& state) {
  const JobSpec job = mlperf(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(plan_embeddings(job));
}
BENCHMARK(BM_RecsysPlanner)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond);

void BM_RecsysBoth(benchmark::State& state) {
  const JobSpec job = mlperf(1);
  for (auto _ : state) benchmark::DoNotOptimize(project_performance(job));
}
BENCHMARK(BM_RecsysBoth)->Unit(benchmark::kMillisecond);

// What the sweep pays per candidate: a fresh plan, memory, the performance projection (warm cache).
void BM_RecsysSweepCandidate(benchmark::State& state) {
  JobSpec job = mlperf(1);
  CostCache cache(job.cluster.accelerator, job.cluster.network);
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  for (auto _ : state) {
    job.parallel.embedding_plan = plan_embeddings(job);
    benchmark::DoNotOptimize(project_memory(job));
    benchmark::DoNotOptimize(project_performance(job, cache, po));
  }
}
BENCHMARK(BM_RecsysSweepCandidate)->Unit(benchmark::kMillisecond);

}  // namespace
