// project_performance() speed on the two shapes issue 5 names: Llama 3.1 405B on 16,384 H100s
// (TP8 PP16 VPP2, 128 microbatches per iteration) and DeepSeek-V3 on 1,024 H100s (PP16 EP64).
// Budget: 5 ms per full projection (workload, pricing, schedule simulation, metrics, memory).
#include <benchmark/benchmark.h>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"

namespace {

using namespace projector;

JobSpec base_job(const char* preset, int nodes) {
  JobSpec j;
  const std::string data = default_data_dir();
  j.model = load_model_preset(preset, data);
  j.cluster.nodes = nodes;
  j.cluster.gpus_per_node = 8;
  j.cluster.accelerator = load_accelerator("h100_sxm", data);
  j.cluster.network = default_network_for(j.cluster.accelerator, data);
  j.runtime.micro_batch_size = 1;
  j.runtime.seq_length = 8192;
  return j;
}

JobSpec llama405b() {
  JobSpec j = base_job("llama3.1_405B", 2048);
  ParallelSpec& p = j.parallel;
  p.tp = 8;
  p.etp = 8;
  p.pp = 16;
  p.vpp = 2;
  p.sequence_parallel = true;
  p.distributed_optimizer = true;
  p.overlap_grad_reduce = true;
  p.overlap_param_gather = true;
  p.stages = balanced_stages(j.model.num_layers(), p.pp, p.vpp, 0);
  j.runtime.global_batch_size = 128 * j.dp();  // 128 microbatches per pipeline
  return j;
}

JobSpec deepseek_v3() {
  JobSpec j = base_job("deepseek_v3", 128);
  j.runtime.seq_length = 4096;
  ParallelSpec& p = j.parallel;
  p.pp = 16;
  p.ep = 64;
  p.distributed_optimizer = true;
  p.overlap_grad_reduce = true;
  p.stages = balanced_stages(j.model.num_layers(), p.pp, 1, j.model.mtp_num_layers);
  j.runtime.global_batch_size = 32 * j.dp();
  return j;
}

// A fresh cost cache every time: what one `projector performance` invocation does.
void BM_PerformanceLlama405b16k(benchmark::State& state) {
  const JobSpec job = llama405b();
  for (auto _ : state) benchmark::DoNotOptimize(project_performance(job));
}
BENCHMARK(BM_PerformanceLlama405b16k)->Unit(benchmark::kMillisecond);

// A warm cache and no op table: what a sweep pays per candidate.
void BM_PerformanceLlama405b16kWarm(benchmark::State& state) {
  const JobSpec job = llama405b();
  CostCache cache(job.cluster.accelerator, job.cluster.network);
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  for (auto _ : state) benchmark::DoNotOptimize(project_performance(job, cache, po));
}
BENCHMARK(BM_PerformanceLlama405b16kWarm)->Unit(benchmark::kMillisecond);

void BM_PerformanceDeepSeekV3x1024(benchmark::State& state) {
  const JobSpec job = deepseek_v3();
  for (auto _ : state) benchmark::DoNotOptimize(project_performance(job));
}
BENCHMARK(BM_PerformanceDeepSeekV3x1024)->Unit(benchmark::kMillisecond);

}  // namespace
