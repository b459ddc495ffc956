// The memory model and the event simulator count the same pipeline schedule: the memory model's
// in-flight microbatches equal the simulator's peak_inflight on every rank of every schedule
// (exhaustively over PP <= 16 and m <= 64), its activation peak equals the simulator's
// peak_activation fed the same per-chunk sizes, and both agree with the peaks the schedules'
// authors publish.
#include "projector/schedule/in_flight.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "projector/job/layout.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/schedule/simulator.h"
#include "projector/util/error.h"
#include "support/model_builders.h"

namespace projector {
namespace {

using schedule::ChunkCost;
using schedule::InFlightCache;
using schedule::ScheduleTable;
using schedule::SimulationInput;

// Chunks per rank each schedule is run with (interleaved: two depths).
std::vector<int> chunk_counts(ScheduleKind k) {
  if (k == ScheduleKind::kInterleaved) return {2, 3};
  return {is_v_shape(k) ? 2 : 1};
}

TEST(InFlightInvariant, MemoryEqualsSimulatorPeakExhaustively) {
  int compared = 0;
  for (const ScheduleKind k : kAllSchedules) {
    for (const int vpp : chunk_counts(k)) {
      InFlightCache cache;
      for (int pp = 2; pp <= 16; ++pp) {
        for (int m = 1; m <= 64; ++m) {
          ScheduleTable table;
          try {
            table = schedule::build_schedule({k, pp, vpp, m});
          } catch (const InputError&) {
            // A shape the schedule refuses (e.g. interleaved with m % pp != 0): memory refuses it
            // with the same error instead of inventing a count.
            EXPECT_THROW(in_flight_microbatches(k, pp, vpp, 0, m, &cache), InputError);
            continue;
          }
          SimulationInput in;
          in.costs.assign(static_cast<std::size_t>(pp * vpp), ChunkCost{1.0, 1.0, 1.0});
          const schedule::SimulationResult sim = schedule::simulate(table, in);
          for (int r = 0; r < pp; ++r) {
            const double mem =
                in_flight_microbatches(k, pp, vpp, r, m, &cache).total_chunk_microbatches();
            ASSERT_EQ(mem, sim.ranks[static_cast<std::size_t>(r)].peak_inflight)
                << to_string(k) << " pp=" << pp << " vpp=" << vpp << " m=" << m << " rank=" << r;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 50000);
}

// Combined 1F1B (overlap_moe_expert_parallel_comm): one more warm-up forward, then each F runs
// beside a B layer by layer, the backward freeing a layer as the forward saves one (MG9
// combined_1f1b.py). The peak equals plain 1F1B's (pp - r without a pipeline bubble; one
// microbatch without a pipeline), and the memory model and the simulator count it alike.
TEST(InFlightInvariant, CombinedOneFOneBHoldsWhatPlainOneFOneBHolds) {
  int compared = 0;
  for (const auto& [k, vpp] :
       {std::pair{ScheduleKind::k1F1B, 1}, std::pair{ScheduleKind::kInterleaved, 2}}) {
    for (int pp = 1; pp <= 8; ++pp) {
      for (int m = 2 * pp; m <= 32; m += pp) {
        if (k == ScheduleKind::kInterleaved && (pp < 2 || m % pp != 0)) continue;
        schedule::ScheduleRequest req{k, pp, vpp, m};
        const ScheduleTable plain = schedule::build_schedule(req);
        req.combined_forward_backward = true;
        const ScheduleTable combined = schedule::build_schedule(req);
        const schedule::InFlightProfile a(plain), b(combined);
        SimulationInput in;
        in.costs.assign(static_cast<std::size_t>(pp * vpp), ChunkCost{1.0, 1.0, 1.0});
        const schedule::SimulationResult sim = schedule::simulate(combined, in);
        for (int r = 0; r < pp; ++r) {
          if (k == ScheduleKind::k1F1B) {
            EXPECT_EQ(b.peak(r), a.peak(r)) << "pp=" << pp << " m=" << m << " rank=" << r;
          }
          EXPECT_EQ(b.peak(r), sim.ranks[static_cast<std::size_t>(r)].peak_inflight)
              << to_string(k) << " pp=" << pp << " m=" << m << " rank=" << r;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
}

// With many microbatches every rank reaches the schedule's published steady peak, in
// chunk-microbatches (a chunk is half a stage in the V shapes): 1F1B pp - r (Narayanan et al.
// 2021); ZB-H1 pp (Qi et al. 2023: the same as 1F1B's first stage); ZB-V 2 pp (Qi et al. 2023: pp
// whole microbatches); V-Half 2 ((pp + 2) // 2) and V-Min 2 ((pp + 4) // 3) (Qi et al. 2024, the
// authors' table of activation memory in microbatches); DualPipeV 2 pp + 1 (DeepSeek's DualPipe:
// PP + 1 stage-microbatches, PP = 2 x devices for the V).
TEST(InFlightInvariant, PublishedSteadyPeaks) {
  constexpr int m = 64;
  InFlightCache cache;
  for (int pp = 2; pp <= 16; ++pp) {
    for (int r = 0; r < pp; ++r) {
      const auto total = [&](ScheduleKind k, int vpp) {
        return in_flight_microbatches(k, pp, vpp, r, m, &cache).total_chunk_microbatches();
      };
      EXPECT_EQ(total(ScheduleKind::k1F1B, 1), pp - r);
      EXPECT_EQ(total(ScheduleKind::kZeroBubble, 1), pp);
      EXPECT_EQ(total(ScheduleKind::kZbvFormatted, 2), 2 * pp);
      EXPECT_EQ(total(ScheduleKind::kZbvGreedyHalf, 2), 2 * ((pp + 2) / 2)) << "pp=" << pp;
      EXPECT_EQ(total(ScheduleKind::kZbvGreedyMin, 2), 2 * ((pp + 4) / 3)) << "pp=" << pp;
      EXPECT_EQ(total(ScheduleKind::kDualPipeV, 2), 2 * pp + 1);
    }
  }
}

// A job whose chunks differ in size (embedding, output head, uneven layers): memory's activation
// component on every rank is the simulator's peak_activation when each chunk's F adds the memory
// model's per-microbatch bytes and a split B frees all but its W set.
TEST(InFlightInvariant, ActivationPeakEqualsSimulator) {
  struct Case {
    ScheduleKind kind;
    int vpp;
    int gbs;
  };
  for (const Case& c :
       {Case{ScheduleKind::k1F1B, 1, 16}, Case{ScheduleKind::kInterleaved, 2, 16},
        Case{ScheduleKind::kInterleaved, 3, 12}, Case{ScheduleKind::kZeroBubble, 1, 16},
        Case{ScheduleKind::kZbvFormatted, 2, 16}, Case{ScheduleKind::kZbvGreedyMin, 2, 16},
        Case{ScheduleKind::kZbvGreedyHalf, 2, 16}, Case{ScheduleKind::kDualPipeV, 2, 16}}) {
    JobSpec j;
    j.model = testing::llama32_1b();  // 16 layers: uneven over 4 x 3 stages
    ParallelSpec& p = j.parallel;
    p.pp = 4;
    p.vpp = c.vpp;
    p.stages = balanced_stages(j.model.num_layers(), p.pp, p.vpp, 0);
    j.cluster.gpus_per_node = 4;
    j.runtime.seq_length = 2048;
    j.runtime.global_batch_size = c.gbs;
    j.runtime.schedule = c.kind;
    const MemoryReport rep = project_memory(j);
    ASSERT_EQ(rep.schedule, c.kind);

    const ScheduleTable table = schedule::build_schedule({c.kind, p.pp, p.vpp, c.gbs});
    SimulationInput in;
    in.costs.resize(static_cast<std::size_t>(p.pp * p.vpp));
    for (const RankMemory& rm : rep.ranks) {
      for (int ch = 0; ch < p.vpp; ++ch) {
        const std::size_t cc = static_cast<std::size_t>(ch);
        ChunkCost& cost = in.costs[static_cast<std::size_t>(rm.pp_rank * p.vpp + ch)];
        cost = ChunkCost{1.0, 1.0, 1.0};
        cost.activation = rm.activation_per_chunk_bytes[cc];
        cost.b_release_fraction = 1.0 - rm.w_only_per_chunk_bytes[cc] / cost.activation;
      }
    }
    const schedule::SimulationResult sim = schedule::simulate(table, in);
    for (const RankMemory& rm : rep.ranks) {
      const double sim_peak = sim.ranks[static_cast<std::size_t>(rm.pp_rank)].peak_activation;
      EXPECT_NEAR(rm.point[static_cast<std::size_t>(MemoryComponent::kActivations)], sim_peak,
                  1e-9 * sim_peak)
          << to_string(c.kind) << " vpp=" << c.vpp << " rank " << rm.pp_rank;
    }
  }
}

}  // namespace
}  // namespace projector
