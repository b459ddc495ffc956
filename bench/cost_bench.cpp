// Pricing one Llama-3.1-405B layer (TP8, seq 8192, MBS 1) through a warm CostCache: the per-layer
// work a sweep repeats for every configuration. Target: < 2 us per layer.
#include <benchmark/benchmark.h>

#include "projector/cost/cost_cache.h"

namespace projector {
namespace {

AcceleratorSpec bench_accelerator() {
  AcceleratorSpec a;  // MI300X-like facts (hardware_specs.yaml); values only affect cold misses
  a.name = "mi300x";
  a.peak_tflops[static_cast<int>(Dtype::kBf16)] = 1307.4;
  a.peak_tflops[static_cast<int>(Dtype::kFp8)] = 2614.9;
  a.compute_units = 304;
  a.boost_clock_mhz = 2100.0;
  a.sustained_clock_mhz = 1207.0;
  a.hbm_bw_bytes_per_s = 5.3e12;
  a.lds_bytes_per_cu = 65536.0;
  a.calibration.gemm_peak_fraction[static_cast<int>(Dtype::kBf16)] = 0.87;
  a.calibration.attention_fwd_fraction.value = 0.6;
  a.calibration.attention_bwd_fraction.value = 0.35;
  a.calibration.hbm_elementwise_fraction.value = 0.566;
  a.calibration.kernel_launch_s.value = 2.8e-6;
  return a;
}

double price_layer(CostCache& c) {
  constexpr std::int64_t T = 8192, H = 16384, F = 53248, tp = 8;
  constexpr std::int64_t qkv = (H + 2 * 8 * 128) / tp, attn_out = H / tp, ffn = F / tp;
  const Dtype d = Dtype::kBf16;
  double t = 0.0;
  // Forward GEMMs.
  t += c.gemm({T, qkv, H, 1, d}).time_s;
  t += c.gemm({T, H, attn_out, 1, d}).time_s;
  t += c.gemm({T, 2 * ffn, H, 1, d}).time_s;
  t += c.gemm({T, H, ffn, 1, d}).time_s;
  // Backward: dgrad + wgrad of each.
  t += c.gemm({T, H, qkv, 1, d}).time_s;
  t += c.gemm({H, qkv, T, 1, d}).time_s;
  t += c.gemm({T, attn_out, H, 1, d}).time_s;
  t += c.gemm({attn_out, H, T, 1, d}).time_s;
  t += c.gemm({T, H, 2 * ffn, 1, d}).time_s;
  t += c.gemm({H, 2 * ffn, T, 1, d}).time_s;
  t += c.gemm({T, ffn, H, 1, d}).time_s;
  t += c.gemm({ffn, H, T, 1, d}).time_s;
  AttentionShape a;
  a.batch = 1;
  a.q_heads = 128 / tp;
  a.kv_heads = 1;
  a.seq_q = a.seq_kv = T;
  t += c.attention_fwd(a).time_s;
  t += c.attention_bwd(a).time_s;
  const double act = static_cast<double>(T) * H * 2;
  t += c.memory_bound(12 * act, MemOpClass::kElementwise).time_s;
  t += c.memory_bound(14 * act, MemOpClass::kElementwise).time_s;
  t += c.memory_bound(3.0 * T * ffn * 2, MemOpClass::kElementwise).time_s;
  const CommGroup tp_group{8, 8, 1, 1, 8};
  t += c.collective(CollectiveKind::kAllReduce, act, tp_group).time_s;
  t += c.collective(CollectiveKind::kReduceScatter, act, tp_group).time_s;
  t += c.collective(CollectiveKind::kAllGather, act, tp_group).time_s;
  return t;
}

void BM_Price405bLayerWarmCache(benchmark::State& state) {
  NetworkSpec net;
  net.node_bw_gb_per_s = 448.0;
  net.node_topology = "mesh";
  CostCache cache(bench_accelerator(), net);
  price_layer(cache);  // warm
  for (auto _ : state) benchmark::DoNotOptimize(price_layer(cache));
  state.counters["lookups/layer"] = 20;
}
BENCHMARK(BM_Price405bLayerWarmCache);

void BM_Price405bLayerCold(benchmark::State& state) {
  NetworkSpec net;
  for (auto _ : state) {
    CostCache cache(bench_accelerator(), net, 64);
    benchmark::DoNotOptimize(price_layer(cache));
  }
}
BENCHMARK(BM_Price405bLayerCold)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace projector
