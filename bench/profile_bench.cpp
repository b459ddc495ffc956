// Reading and analysing real trace fixtures (tests/profile/data): gzip inflate + SAX parse, then
// steps, phases, wall attribution, layers and GEMM shapes. Bytes/s counts decompressed JSON.
#include <benchmark/benchmark.h>

#include <string>

#include "projector/profile/profile.h"

namespace {

std::string fixture(const char* name) {
  return std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/../tests/profile/data/" + name;
}

void read_trace(benchmark::State& state, const char* name) {
  const std::string path = fixture(name);
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    const projector::profile::TraceData t = projector::profile::read_trace(path);
    bytes = t.json_bytes;
    benchmark::DoNotOptimize(t.gpu.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void analyze_trace(benchmark::State& state, const char* name) {
  const projector::profile::TraceData t = projector::profile::read_trace(fixture(name));
  for (auto _ : state) {
    const projector::profile::MeasuredProfile p = projector::profile::analyze_trace(t);
    benchmark::DoNotOptimize(p.step_ms);
  }
}

BENCHMARK_CAPTURE(read_trace, qwen_h100_3_6MB_json, "qwen1.5_0.5b_fwd_h100.json.gz")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(read_trace, hta_a100_ddp_6_3MB_json, "hta_a100_ddp_nccl.json.gz")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(analyze_trace, qwen_h100, "qwen1.5_0.5b_fwd_h100.json.gz")
    ->Unit(benchmark::kMillisecond);

}  // namespace
