// Pipeline schedule construction and simulation speed (target: a PP16 simulation well under 5 ms).
#include <benchmark/benchmark.h>

#include "projector/schedule/schedule.h"
#include "projector/schedule/simulator.h"

namespace {

using projector::ScheduleKind;
using projector::schedule::ChunkCost;
using projector::schedule::CommTask;
using projector::schedule::CommTrigger;
using projector::schedule::Phase;
using projector::schedule::ScheduleRequest;
using projector::schedule::ScheduleTable;
using projector::schedule::SimulationInput;

// Slightly uneven chunks so the simulation is not trivially periodic.
SimulationInput costs(const ScheduleTable& t) {
  SimulationInput in;
  for (int r = 0; r < t.pp; ++r) {
    for (int c = 0; c < t.vpp; ++c) {
      const double f = 1.0e-3 * (1.0 + 0.01 * ((r * 7 + c * 3) % 5));
      in.costs.push_back(ChunkCost{f, 1.1 * f, 0.9 * f});
    }
  }
  in.p2p_s = 2.0e-5;
  return in;
}

// Per (rank, chunk) a DP reduce-scatter after its last weight-gradient action, and a parameter
// all-gather before its first forward, with 10 % interference.
void add_dp_comm(const ScheduleTable& t, SimulationInput& in) {
  in.interference = 0.1;
  for (int r = 0; r < t.pp; ++r) {
    for (int c = 0; c < t.vpp; ++c) {
      in.comm.push_back(CommTask{r, "dp", 5.0e-3, CommTrigger::kIterationStart, -1,
                                 first_action(t, r, c, {Phase::kF}), "all-gather"});
      in.comm.push_back(CommTask{r, "dp", 5.0e-3, CommTrigger::kActionEnd,
                                 last_action(t, r, c, {Phase::kW, Phase::kBW}), -1,
                                 "reduce-scatter"});
    }
  }
}

ScheduleRequest request(ScheduleKind a, int pp, int vpp, int m) {
  ScheduleRequest q;
  q.algorithm = a;
  q.pp = pp;
  q.vpp = vpp;
  q.microbatches = m;
  return q;
}

void simulate_only(benchmark::State& state, ScheduleRequest q, bool comm) {
  const ScheduleTable t = projector::schedule::build_schedule(q);
  SimulationInput in = costs(t);
  if (comm) add_dp_comm(t, in);
  for (auto _ : state) {
    benchmark::DoNotOptimize(projector::schedule::simulate(t, in).makespan_s);
  }
  state.counters["actions"] = static_cast<double>(t.actions.size());
}

void build_and_simulate(benchmark::State& state, ScheduleRequest q) {
  for (auto _ : state) {
    const ScheduleTable t = projector::schedule::build_schedule(q);
    benchmark::DoNotOptimize(projector::schedule::simulate(t, costs(t)).makespan_s);
  }
}

}  // namespace

BENCHMARK_CAPTURE(simulate_only, interleaved_pp16_v2_m128,
                  request(ScheduleKind::kInterleaved, 16, 2, 128), false)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(simulate_only, interleaved_pp16_v4_m128,
                  request(ScheduleKind::kInterleaved, 16, 4, 128), false)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(simulate_only, interleaved_pp16_v4_m128_dp_comm,
                  request(ScheduleKind::kInterleaved, 16, 4, 128), true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(simulate_only, zero_bubble_pp16_m128,
                  request(ScheduleKind::kZeroBubble, 16, 1, 128), false)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(simulate_only, zbv_formatted_pp16_m64,
                  request(ScheduleKind::kZbvFormatted, 16, 2, 64), false)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(simulate_only, dualpipev_pp16_m64, request(ScheduleKind::kDualPipeV, 16, 2, 64),
                  false)
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_CAPTURE(build_and_simulate, interleaved_pp16_v4_m128,
                  request(ScheduleKind::kInterleaved, 16, 4, 128))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build_and_simulate, zbv_formatted_pp16_m64,
                  request(ScheduleKind::kZbvFormatted, 16, 2, 64))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build_and_simulate, zbv_greedy_half_pp16_m64,
                  request(ScheduleKind::kZbvGreedyHalf, 16, 2, 64))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build_and_simulate, zbv_greedy_min_pp16_m64,
                  request(ScheduleKind::kZbvGreedyMin, 16, 2, 64))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(build_and_simulate, dualpipev_pp16_m64,
                  request(ScheduleKind::kDualPipeV, 16, 2, 64))
    ->Unit(benchmark::kMicrosecond);
