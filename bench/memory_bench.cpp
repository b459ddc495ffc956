// project_memory() speed: Llama 3.1 405B on 16384 GPUs (TP8 PP16 DP128), the largest dense shape
// the brief names; the budget is 50 us per projection.
#include <benchmark/benchmark.h>

#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"

namespace {

projector::JobSpec llama405b_16k_gpus() {
  using namespace projector;
  JobSpec j;
  ModelSpec& m = j.model;
  m.hidden_size = 16384;
  m.vocab_size = 128256;
  LayerSpec layer;
  layer.attention.num_heads = 128;
  layer.attention.num_query_groups = 8;
  layer.attention.head_dim = 128;
  layer.mlp.ffn_hidden_size = 53248;
  layer.mlp.gated = true;
  layer.mlp.activation = ActivationKind::kSilu;
  m.layers.assign(126, layer);
  ParallelSpec& p = j.parallel;
  p.tp = 8;
  p.pp = 16;
  p.sequence_parallel = true;
  p.distributed_optimizer = true;
  p.stages = balanced_stages(126, 16, 1, 0);
  j.cluster.nodes = 2048;
  j.cluster.gpus_per_node = 8;
  j.cluster.accelerator.hbm_bytes = 141e9;  // H200: the job fits (89.5 GB), no remedies
  j.runtime.micro_batch_size = 1;
  j.runtime.seq_length = 8192;
  j.runtime.global_batch_size = 2048;
  return j;
}

void BM_ProjectMemoryLlama405b(benchmark::State& state) {
  const projector::JobSpec job = llama405b_16k_gpus();
  for (auto _ : state) benchmark::DoNotOptimize(projector::project_memory(job));
}
BENCHMARK(BM_ProjectMemoryLlama405b)->Unit(benchmark::kMicrosecond);

// Same job on an 80 GB part: OOM, so the projection re-runs itself once per remedy (4).
void BM_ProjectMemoryLlama405bWithRemedies(benchmark::State& state) {
  projector::JobSpec job = llama405b_16k_gpus();
  job.cluster.accelerator.hbm_bytes = 80e9;
  for (auto _ : state) benchmark::DoNotOptimize(projector::project_memory(job));
}
BENCHMARK(BM_ProjectMemoryLlama405bWithRemedies)->Unit(benchmark::kMicrosecond);

}  // namespace
