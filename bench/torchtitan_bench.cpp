// The torchtitan back-end: loading a job (TOML parse, flavor table, adapter, job builder) and a
// whole `both` projection of a Primus torchtitan experiment.
#include <benchmark/benchmark.h>

#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/perf/perf.h"

namespace {

projector::LoadRequest request(const std::string& file) {
  projector::LoadRequest r;
  r.config_path = std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../tests/data/torchtitan/" + file;
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.env = projector::fixed_environment({});
  r.hardware = "mi300x";
  return r;
}

void BM_LoadTorchtitanToml(benchmark::State& state) {
  const projector::LoadRequest r = request("upstream/llama3_8b.toml");
  for (auto _ : state) benchmark::DoNotOptimize(projector::load_job(r));
}
BENCHMARK(BM_LoadTorchtitanToml)->Unit(benchmark::kMicrosecond);

void BM_BothPrimusTorchtitanLlama4(benchmark::State& state) {
  projector::LoadRequest r = request("primus/llama4_17Bx16E-BF16-pretrain.yaml");
  r.cli.nodes = 2;
  for (auto _ : state) {
    const projector::JobSpec job = projector::load_job(r);
    projector::PerfOptions o;
    o.with_memory = true;
    benchmark::DoNotOptimize(projector::project_performance(job, o));
  }
}
BENCHMARK(BM_BothPrimusTorchtitanLlama4)->Unit(benchmark::kMillisecond);

}  // namespace
