// MaxText on TPU: loading a flat MaxText YAML (base.yml + the model config transcription), one
// memory + performance projection of a DeepSeek-V3 671B job on a v5p-256 slice (per-layer FSDP
// gathers on the torus, saved-tensor remat, MoE), and the sweep over its mesh axes and remat
// policies.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/sweep/sweep.h"

namespace {

using namespace projector;

std::string config_file() {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / "projector_maxtext_bench.yml";
  std::ofstream(p) << "model_name: deepseek3-671b\n"
                      "per_device_batch_size: 2\n"
                      "max_target_length: 4096\n"
                      "ici_fsdp_parallelism: -1\n"
                      "ici_expert_parallelism: 4\n"
                      "remat_policy: save_qkv_proj\n"
                      "weight_dtype: bfloat16\n"
                      "compile_topology: v5p-512\n";
  return p.string();
}

LoadRequest request() {
  LoadRequest r;
  r.config_path = config_file();
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  return r;
}

void BM_MaxTextLoad(benchmark::State& state) {
  const LoadRequest r = request();
  for (auto _ : state) benchmark::DoNotOptimize(load_job(r).model.layers.size());
}
BENCHMARK(BM_MaxTextLoad)->Unit(benchmark::kMillisecond);

void BM_MaxTextProject(benchmark::State& state) {
  const JobSpec job = load_job(request());
  for (auto _ : state) {
    benchmark::DoNotOptimize(project_memory(job).peak_point_bytes);
    benchmark::DoNotOptimize(project_performance(job).iteration_s);
  }
}
BENCHMARK(BM_MaxTextProject)->Unit(benchmark::kMillisecond);

void BM_MaxTextSweep(benchmark::State& state) {
  const JobSpec base = load_job(request());
  sweep::Options o;
  o.threads = 2;
  sweep::Result r;
  for (auto _ : state) {
    r = sweep::run_sweep(base, sweep::Grid{}, sweep::SpaceOptions{}, o);
    benchmark::DoNotOptimize(r.ranked.data());
  }
  state.counters["enumerated"] = static_cast<double>(r.enumerated);
  state.counters["projected"] = static_cast<double>(r.projected);
  state.counters["failed"] = static_cast<double>(r.failed);
}
BENCHMARK(BM_MaxTextSweep)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
