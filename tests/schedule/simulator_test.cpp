// Simulator semantics (dependencies, P2P, communication streams, interference, memory, critical
// path, errors), the reference's wrong edge cases (spec 8.6) as regression tests, selection rules
// and table structure. Expected values are derived by hand in the comments.
#include "projector/schedule/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "projector/schedule/schedule.h"
#include "projector/util/error.h"

namespace projector::schedule {
namespace {

SimulationInput balanced(int pp, int vpp, double f, double b, double w) {
  SimulationInput in;
  in.costs.assign(static_cast<std::size_t>(pp * vpp), ChunkCost{f, b, w});
  return in;
}

std::vector<int> peaks(const SimulationResult& r) {
  std::vector<int> out;
  for (const RankStats& s : r.ranks) out.push_back(s.peak_inflight);
  return out;
}

ScheduleTable custom(int pp, int vpp, int m, StageLayout layout,
                     const std::vector<std::vector<Action>>& ranks) {
  ScheduleTable t;
  t.pp = pp;
  t.vpp = vpp;
  t.microbatches = m;
  t.layout = layout;
  t.rank_offsets.push_back(0);
  for (const auto& list : ranks) {
    t.actions.insert(t.actions.end(), list.begin(), list.end());
    t.rank_offsets.push_back(static_cast<int>(t.actions.size()));
  }
  return t;
}

Action act(int chunk, int mb, Phase phase, bool overlap = false) {
  return Action{mb, static_cast<std::int16_t>(chunk), phase, overlap};
}

std::string input_error_key(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.key();
  }
  return "<no error>";
}

// ------------------------------------------------------------------ spec 8.6 regression cases

// 1F1B with M < PP-1 (PP=8, M=4, f=1, b=2): the reference scheduled nonexistent microbatches and
// reported 27.0; the correct makespan is (M + PP - 1)(f + b) = 11 * 3 = 33. Rank r holds
// min(PP - r, M) microbatches: 4,4,4,4,4,3,2,1.
TEST(ScheduleEdge, OneF1BFewerMicrobatchesThanStages) {
  const SimulationResult r = simulate(build_1f1b(8, 4), balanced(8, 1, 1, 2, 0));
  EXPECT_DOUBLE_EQ(r.makespan_s, 33.0);
  EXPECT_EQ(peaks(r), (std::vector<int>{4, 4, 4, 4, 4, 3, 2, 1}));
}

// Interleaved with M mod PP != 0 (PP=4, VPP=2, M=3): the reference deadlocked and divided by zero.
// Megatron-LM rejects it (M >= group size >= PP, remainder 0 or >= PP); so do we, with a key.
TEST(ScheduleEdge, InterleavedMicrobatchesNotMultipleOfPp) {
  EXPECT_EQ(input_error_key([] { build_interleaved(4, 2, 3); }), "num_microbatches");
  EXPECT_EQ(input_error_key([] { build_interleaved(4, 2, 10); }), "num_microbatches");
  EXPECT_EQ(input_error_key([] { build_interleaved(4, 2, 10, 3); }), "microbatch_group");
  // With a group size of 5 (10 = 2 groups of 5) Megatron accepts M=10; the pipeline stays full, so
  // the balanced closed form (M + (PP-1)/V)(F+B) = (10 + 1.5) * 3 = 34.5 holds.
  const SimulationResult r = simulate(build_interleaved(4, 2, 10, 5), balanced(4, 2, 0.5, 1, 0));
  EXPECT_DOUBLE_EQ(r.makespan_s, 34.5);
}

// ZBV formatted with M < 2PP-1 (PP=4, M=2): the reference padded to 7 microbatches (22.5).
// With 2 microbatches the table must hold exactly 2 per stage (simulate() validates that), and the
// makespan is at least one microbatch's F chain + B chain over 8 stages (8 * 1.0) plus the second
// microbatch's lag (0.5) and a final W (0.5) = 9.0.
TEST(ScheduleEdge, ZbvFormattedFewMicrobatches) {
  const ScheduleTable t = build_zbv_formatted(4, 2);
  EXPECT_EQ(t.actions.size(), 4u * 2 * 2 * 3);  // ranks * chunks * microbatches * {F,B,W}
  const SimulationResult r = simulate(t, balanced(4, 2, 0.5, 0.5, 0.5));
  EXPECT_GE(r.makespan_s, 9.0);
  EXPECT_LT(r.makespan_s, 22.5);
}

// A rank with zero layers (zero durations) is allowed (the reference raised). A zero-time stage
// passes work through instantly, so PP4 with rank 2 empty behaves like 3-stage 1F1B:
// (8 + 3 - 1) * 3 = 30.
TEST(ScheduleEdge, ZeroDurationRank) {
  SimulationInput in = balanced(4, 1, 1, 2, 0);
  in.costs[2] = ChunkCost{0, 0, 0};
  EXPECT_DOUBLE_EQ(simulate(build_1f1b(4, 8), in).makespan_s, 30.0);
}

// Every construction with every small shape it accepts simulates without deadlock (never hangs).
TEST(ScheduleEdge, AllShapesSimulate) {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 14; ++m) {
      std::vector<ScheduleTable> tables = {
          build_1f1b(p, m), build_zero_bubble_h1(p, m), build_zbv_formatted(p, m),
          build_zbv_greedy(p, m, ZbvMemory::kMin), build_zbv_greedy(p, m, ZbvMemory::kHalf)};
      if (m >= 2 * p) tables.push_back(build_dualpipev(p, m));
      if (m % p == 0) tables.push_back(build_interleaved(p, 3, m));
      for (const ScheduleTable& t : tables) {
        const SimulationResult r = simulate(t, balanced(p, t.vpp, 1, 1, 1));
        // Each rank does 3 units per (chunk, microbatch) and can never beat that.
        EXPECT_GE(r.makespan_s, 3.0 * t.vpp * m - 1e-9) << to_string(t.algorithm);
      }
    }
  }
}

// ---------------------------------------------------------------------------------- semantics

// One stage: no pipeline, makespan m (f + b) and no bubble.
TEST(Simulator, SingleStage) {
  const SimulationResult r = simulate(build_1f1b(1, 4), balanced(1, 1, 1, 2, 0));
  EXPECT_DOUBLE_EQ(r.makespan_s, 12.0);
  EXPECT_DOUBLE_EQ(r.max_bubble_fraction, 0.0);
}

// Uneven stages, PP2 M3: stage 0 f=1 b=2, stage 1 f=2 b=4. By hand: rank 1 runs F0 [1,3], BW0
// [3,7], F1 [7,9], BW1 [9,13], F2 [13,15], BW2 [15,19]; rank 0's last BW2 runs [19,21]. In general
// one bottleneck stage gives f0 + m (f1 + b1) + b0 = 1 + 18 + 2 = 21.
TEST(Simulator, UnevenStages) {
  SimulationInput in;
  in.costs = {ChunkCost{1, 2, 0}, ChunkCost{2, 4, 0}};
  const SimulationResult r = simulate(build_1f1b(2, 3), in);
  EXPECT_DOUBLE_EQ(r.makespan_s, 21.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].busy_s, 18.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].idle_s, 21.0 - 9.0);
}

// P2P: one microbatch through p stages crosses p-1 edges forward and back:
// p (f + b) + 2 (p - 1) c = 4 * 3 + 6 * 0.5 = 15. PP2 M2 by hand: rank 1 F0 [1.5,2.5], BW0
// [2.5,4.5], F1 [4.5,5.5], BW1 [5.5,7.5]; rank 0 BW0 [5,7], BW1 [8,10] -> 10.
TEST(Simulator, P2pTransfer) {
  SimulationInput in = balanced(4, 1, 1, 2, 0);
  in.p2p_s = 0.5;
  EXPECT_DOUBLE_EQ(simulate(build_1f1b(4, 1), in).makespan_s, 15.0);
  SimulationInput in2 = balanced(2, 1, 1, 2, 0);
  in2.p2p_s = 0.5;
  EXPECT_DOUBLE_EQ(simulate(build_1f1b(2, 2), in2).makespan_s, 10.0);
}

// Per-edge P2P: PP3 M1, edge 0 costs 1 s each way, edge 1 is free: 3 * 3 + 2 * 1 = 11.
// Backward-only override: forward edges 0, backward edge 0 = 2: 9 + 2 = 11 too.
TEST(Simulator, P2pPerEdge) {
  SimulationInput in = balanced(3, 1, 1, 2, 0);
  in.p2p_forward_s = {1.0, 0.0};
  EXPECT_DOUBLE_EQ(simulate(build_1f1b(3, 1), in).makespan_s, 11.0);
  in.p2p_forward_s = {0.0, 0.0};
  in.p2p_backward_s = {2.0, 0.0};
  EXPECT_DOUBLE_EQ(simulate(build_1f1b(3, 1), in).makespan_s, 11.0);
}

// Blocking P2P (Megatron's waited sends), PP2 M2 f=1 b=2 c=0.5, by hand. Rank 0: F0 [0,1] +0.5,
// F1 [1.5,2.5] +0.5; rank 1: F0 [1.5,2.5] (the last stage sends no activation), BW0 [2.5,4.5]
// +0.5, F1 [5,6] (its input arrived at 3.0, the rank is free at 5.0), BW1 [6,8] +0.5; rank 0:
// BW0 [5,7], BW1 [8.5,10.5] (stage 0 sends no gradient). Makespan 10.5 against 10 asynchronous;
// each rank waited for two sends (1 s).
TEST(Simulator, BlockingP2pHoldsTheSender) {
  SimulationInput in = balanced(2, 1, 1, 2, 0);
  in.p2p_s = 0.5;
  in.blocking_p2p = true;
  const SimulationResult r = simulate(build_1f1b(2, 2), in);
  EXPECT_DOUBLE_EQ(r.makespan_s, 10.5);
  EXPECT_DOUBLE_EQ(r.ranks[0].p2p_blocked_s, 1.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].p2p_blocked_s, 1.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].busy_s, 6.0);  // waiting is idle, not busy
  in.blocking_p2p = false;
  const SimulationResult a = simulate(build_1f1b(2, 2), in);
  EXPECT_DOUBLE_EQ(a.makespan_s, 10.0);
  EXPECT_DOUBLE_EQ(a.ranks[0].p2p_blocked_s, 0.0);
  // The V-shape turn is a hand-off on the rank: nothing to wait for.
  SimulationInput v = balanced(1, 2, 1, 1, 1);
  v.p2p_s = 5.0;
  v.blocking_p2p = true;
  EXPECT_DOUBLE_EQ(simulate(build_zbv_formatted(1, 1), v).makespan_s, 6.0);
}

// The V-shape turn on rank pp-1 is a local hand-off: PP1 with two V chunks and p2p 5 s pays none.
TEST(Simulator, VShapeTurnIsLocal) {
  SimulationInput in = balanced(1, 2, 1, 1, 1);
  in.p2p_s = 5.0;
  EXPECT_DOUBLE_EQ(simulate(build_zbv_formatted(1, 1), in).makespan_s, 6.0);
}

// Interference: a 1 s DP task at iteration start on a 1-rank pipeline with interference 0.5.
// F (1 s nominal) advances at 1/1.5 while the task runs: 2/3 done at t=1, the last 1/3 at full
// speed -> F ends at 4/3; BW (2 s) runs [4/3, 10/3]. The task hides entirely: exposed 0.
TEST(Simulator, Interference) {
  SimulationInput in = balanced(1, 1, 1, 2, 0);
  in.interference = 0.5;
  in.comm.push_back(CommTask{0, "dp", 1.0, CommTrigger::kIterationStart, -1, -1, ""});
  const SimulationResult r = simulate(build_1f1b(1, 1), in);
  EXPECT_NEAR(r.makespan_s, 10.0 / 3.0, 1e-12);
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_EQ(r.streams[0].name, "dp");
  EXPECT_DOUBLE_EQ(r.streams[0].max_exposed_s, 0.0);
  EXPECT_DOUBLE_EQ(r.streams[0].busy_s[0], 1.0);
}

// A reduce-scatter launched after the last weight-gradient action extends the iteration by its
// full length (nothing left to hide behind): 3 + 1 = 4, exposed 1, and the critical path ends on
// the communication task.
TEST(Simulator, GradientReduceTail) {
  const ScheduleTable t = build_1f1b(1, 1);
  SimulationInput in = balanced(1, 1, 1, 2, 0);
  in.comm.push_back(CommTask{0, "dp", 1.0, CommTrigger::kActionEnd,
                             last_action(t, 0, 0, {Phase::kW, Phase::kBW}), -1, "reduce-scatter"});
  const SimulationResult r = simulate(t, in);
  EXPECT_DOUBLE_EQ(r.makespan_s, 4.0);
  EXPECT_DOUBLE_EQ(r.compute_makespan_s, 3.0);
  EXPECT_DOUBLE_EQ(r.streams[0].exposed_s[0], 1.0);
  ASSERT_FALSE(r.critical_path.empty());
  EXPECT_EQ(r.critical_path.back().kind, CriticalStep::Kind::kComm);
  EXPECT_EQ(r.critical_path.front().kind, CriticalStep::Kind::kCompute);
}

// A rank's tail (Megatron's deferred output-layer weight gradients) runs after its last action
// once its sends left, and holds back what that action triggers. PP 2, 2 microbatches, F 1, B 2,
// no P2P time: rank 1 (the last stage) runs F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7], rank 0 ends with
// B1 [7,9] (its input left rank 1 at 7, before the tail). A 3 s tail on rank 1 runs [7,10]: the
// makespan is 10, not 9; rank 1's reduction (1 s, at its last action's end) runs [10,11], not
// [7,8].
TEST(Simulator, TailRunsAfterTheLastSendAndBeforeItsReduction) {
  const ScheduleTable t = build_1f1b(2, 2);
  SimulationInput in = balanced(2, 1, 1, 2, 0);
  in.record_timeline = true;
  const double plain = simulate(t, in).makespan_s;
  EXPECT_DOUBLE_EQ(plain, 9.0);
  in.tail_s = {0.0, 3.0};
  const SimulationResult r = simulate(t, in);
  EXPECT_DOUBLE_EQ(r.makespan_s, 10.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].compute_end_s, 9.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].compute_end_s, 10.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].busy_s, 9.0);
  ASSERT_FALSE(r.critical_path.empty());
  EXPECT_EQ(r.critical_path.back().kind, CriticalStep::Kind::kTail);
  EXPECT_DOUBLE_EQ(r.critical_path.back().start_s, 7.0);
  for (std::size_t i = 1; i < r.critical_path.size(); ++i) {
    EXPECT_DOUBLE_EQ(r.critical_path[i].start_s, r.critical_path[i - 1].end_s);
  }
  const auto tail = std::find_if(r.timeline.begin(), r.timeline.end(), [](const TimelineEvent& e) {
    return e.label == "deferred weight gradients";
  });
  ASSERT_NE(tail, r.timeline.end());
  EXPECT_EQ(tail->rank, 1);
  EXPECT_DOUBLE_EQ(tail->end_s, 10.0);

  in.comm.push_back(CommTask{1, "dp", 1.0, CommTrigger::kActionEnd,
                             last_action(t, 1, 0, {Phase::kW, Phase::kBW}), -1, "reduce"});
  EXPECT_DOUBLE_EQ(simulate(t, in).makespan_s, 11.0);
  in.tail_s.clear();
  EXPECT_DOUBLE_EQ(simulate(t, in).makespan_s, 9.0);  // [7,8] beside rank 0's last backward
  in.tail_s = {0.0};
  EXPECT_THROW(simulate(t, in), ScheduleError);
}

// A parameter all-gather that must finish before the first F delays everything by its length.
// Two tasks on one stream run FIFO: the second (0.5 s) starts when the first ends.
TEST(Simulator, BlockingPrefetchAndFifoStream) {
  const ScheduleTable t = build_1f1b(1, 1);
  SimulationInput in = balanced(1, 1, 1, 2, 0);
  in.comm.push_back(CommTask{0, "dp", 0.5, CommTrigger::kIterationStart, -1,
                             first_action(t, 0, 0, {Phase::kF}), "all-gather"});
  in.comm.push_back(CommTask{0, "dp", 0.5, CommTrigger::kIterationStart, -1, -1, ""});
  in.record_timeline = true;
  const SimulationResult r = simulate(t, in);
  EXPECT_DOUBLE_EQ(r.makespan_s, 3.5);
  EXPECT_DOUBLE_EQ(r.streams[0].exposed_s[0], 0.5);  // first task exposed, second hidden
  EXPECT_EQ(r.critical_path.front().kind, CriticalStep::Kind::kComm);
  ASSERT_EQ(r.timeline.size(), 4u);
  EXPECT_EQ(r.timeline[0].label, "all-gather");
  // Sorted by start; at equal starts compute comes first.
  EXPECT_EQ(r.timeline[1].label, "F c0 mb0");
  EXPECT_DOUBLE_EQ(r.timeline[1].start_s, 0.5);
  EXPECT_EQ(r.timeline[2].stream, 1);
  EXPECT_DOUBLE_EQ(r.timeline[2].start_s, 0.5);  // second dp task after the first (FIFO)
}

// Overlapped forward&backward pair: f=1 (0.5 of it hideable comm), b=1 (0.5 comm), w=1, so the
// pair F + BW takes max(0.5 + 1.5, 0.5 + 0.5) = 2 instead of 3. Table on one rank, V chunks:
// F0.0 1, F1.0 1, [F0.1 + BW1.0] 2, BW0.0 2, F1.1 1, BW1.1 2, BW0.1 2 -> 11 (12 unpaired).
TEST(Simulator, OverlappedPair) {
  const auto table = [](bool overlap) {
    return custom(1, 2, 2, StageLayout::kVShape,
                  {{act(0, 0, Phase::kF), act(1, 0, Phase::kF), act(0, 1, Phase::kF, overlap),
                    act(1, 0, Phase::kBW), act(0, 0, Phase::kBW), act(1, 1, Phase::kF),
                    act(1, 1, Phase::kBW), act(0, 1, Phase::kBW)}});
  };
  SimulationInput in;
  in.costs.assign(2, ChunkCost{1, 1, 1, 0.5, 0.5});
  EXPECT_DOUBLE_EQ(simulate(table(true), in).makespan_s, 11.0);
  EXPECT_DOUBLE_EQ(simulate(table(false), in).makespan_s, 12.0);
  // The comm kernels on half of the compute units (DeepEP's SMs): the pair's compute runs on the
  // other half while the 1 s of comm runs, max(2 + 0.5 x 1, 1) = 2.5 -> 11.5; on all units the
  // pair is no better than running the two in turn.
  in.pair_comm_compute_share = 0.5;
  EXPECT_DOUBLE_EQ(simulate(table(true), in).makespan_s, 11.5);
  in.pair_comm_compute_share = 1.0;
  EXPECT_DOUBLE_EQ(simulate(table(true), in).makespan_s, 12.0);
  in.pair_comm_compute_share = 1.5;
  EXPECT_THROW(simulate(table(true), in), ScheduleError);
}

// Activation memory: ZB-H1 PP2 M2 with B releasing half of a microbatch's activation. Rank 0
// (warm-up 1, defers W by 0): F0 (+1), F1 (+1) = 2, then B0 (-0.5) W0 (-0.5) ... peak 2.
// Rank 1 (W deferred by 1): F0 1, B0 0.5, F1 1.5, B1 1.0, W0 0.5, W1 0 -> peak 1.5.
TEST(Simulator, ActivationRelease) {
  SimulationInput in = balanced(2, 1, 1, 1, 1);
  for (ChunkCost& c : in.costs) c.b_release_fraction = 0.5;
  const SimulationResult r = simulate(build_zero_bubble_h1(2, 2), in);
  EXPECT_DOUBLE_EQ(r.ranks[0].peak_activation, 2.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].peak_activation, 1.5);
  EXPECT_EQ(r.ranks[1].peak_inflight, 2);
}

// Critical path of balanced 1F1B without P2P: gap-free from 0 to the makespan.
TEST(Simulator, CriticalPathContiguous) {
  const SimulationResult r = simulate(build_1f1b(4, 8), balanced(4, 1, 1, 2, 0));
  ASSERT_FALSE(r.critical_path.empty());
  EXPECT_DOUBLE_EQ(r.critical_path.front().start_s, 0.0);
  EXPECT_DOUBLE_EQ(r.critical_path.back().end_s, r.makespan_s);
  double busy = 0.0;
  for (std::size_t i = 1; i < r.critical_path.size(); ++i) {
    EXPECT_DOUBLE_EQ(r.critical_path[i].start_s, r.critical_path[i - 1].end_s);
  }
  for (const CriticalStep& s : r.critical_path) busy += s.end_s - s.start_s;
  EXPECT_DOUBLE_EQ(busy, 33.0);
}

// ------------------------------------------------------------------------------------- errors

// rank 0 runs BW before its F; rank 1 needs rank 0's F: a cycle. Must throw, promptly.
TEST(Simulator, DeadlockIsAnError) {
  const ScheduleTable t = custom(2, 1, 1, StageLayout::kInterleaved,
                                 {{act(0, 0, Phase::kBW), act(0, 0, Phase::kF)},
                                  {act(0, 0, Phase::kF), act(0, 0, Phase::kBW)}});
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(simulate(t, balanced(2, 1, 1, 2, 0)), ScheduleError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(Simulator, InvalidTablesAreErrors) {
  const SimulationInput in = balanced(1, 1, 1, 1, 1);
  // W without a split B.
  EXPECT_THROW(
      simulate(custom(1, 1, 1, StageLayout::kInterleaved,
                      {{act(0, 0, Phase::kF), act(0, 0, Phase::kBW), act(0, 0, Phase::kW)}}),
               in),
      ScheduleError);
  // Missing backward.
  EXPECT_THROW(simulate(custom(1, 1, 1, StageLayout::kInterleaved, {{act(0, 0, Phase::kF)}}), in),
               ScheduleError);
  // Microbatch out of range.
  EXPECT_THROW(simulate(custom(1, 1, 1, StageLayout::kInterleaved,
                               {{act(0, 0, Phase::kF), act(0, 1, Phase::kBW)}}),
                        in),
               ScheduleError);
  // Wrong number of costs.
  EXPECT_THROW(simulate(build_1f1b(2, 2), in), ScheduleError);
}

// Same inputs, same outputs (bit for bit), including the timeline.
TEST(Simulator, Deterministic) {
  const ScheduleTable t = build_zbv_greedy(6, 24, ZbvMemory::kHalf);
  SimulationInput in = balanced(6, 2, 0.7, 0.9, 0.4);
  in.p2p_s = 0.05;
  in.record_timeline = true;
  const SimulationResult a = simulate(t, in);
  const SimulationResult b = simulate(build_zbv_greedy(6, 24, ZbvMemory::kHalf), in);
  EXPECT_EQ(a.makespan_s, b.makespan_s);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (std::size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].start_s, b.timeline[i].start_s);
    EXPECT_EQ(a.timeline[i].label, b.timeline[i].label);
  }
  EXPECT_EQ(a.critical_path.size(), b.critical_path.size());
}

// --------------------------------------------------------------------- DualPipeV and selection

// DualPipeV PP2 M4 with unit F=B=W per chunk (BW = 2, no overlap benefit, pair F+BW = 3), traced
// by hand from the step list: rank 0 ends with B0.3 [24,25] and W0.3 [25,26] -> 26. Peak in-flight
// per rank is 2pp + 1: steps 1-2 issue 2pp forwards, step 3 keeps the count (B, W, F) and the
// first overlapped pair adds its F before its BW frees one.
TEST(DualPipeV, SmallCaseAndMemory) {
  const SimulationResult r = simulate(build_dualpipev(2, 4), balanced(2, 2, 1, 1, 1));
  EXPECT_DOUBLE_EQ(r.makespan_s, 26.0);
  for (int p : {2, 4, 8}) {
    const SimulationResult rp = simulate(build_dualpipev(p, 4 * p), balanced(p, 2, 1, 1, 1));
    EXPECT_EQ(peaks(rp), std::vector<int>(static_cast<std::size_t>(p), 2 * p + 1));
  }
  EXPECT_EQ(input_error_key([] { build_dualpipev(4, 7); }), "num_microbatches");
}

// Hiding communication inside overlapped pairs must shorten DualPipeV.
TEST(DualPipeV, OverlapHelps) {
  const ScheduleTable t = build_dualpipev(4, 16);
  SimulationInput plain;
  plain.costs.assign(8, ChunkCost{1, 1, 1});
  SimulationInput hidden;
  hidden.costs.assign(8, ChunkCost{1, 1, 1, 0.4, 0.4});
  EXPECT_LT(simulate(t, hidden).makespan_s, simulate(t, plain).makespan_s - 1.0);
}

// Without overlapped pairs (torchtitan's pipeline_parallel_expert_parallel_overlap off) DualPipeV
// keeps its order but runs each F / B pair in turn. PP2 M4 by hand from the step list: rank 0 has
// 2 pairs in step 4 and 1 in step 5, rank 1 has 3 in step 4 (its first F0 / B1 is not paired).
TEST(DualPipeV, SequentialPairs) {
  const ScheduleTable paired = build_dualpipev(2, 4);
  const ScheduleTable seq = build_dualpipev(2, 4, false);
  auto pairs = [](const ScheduleTable& t) {
    return std::count_if(t.actions.begin(), t.actions.end(),
                         [](const Action& a) { return a.overlap_with_next; });
  };
  EXPECT_EQ(pairs(paired), 6);
  EXPECT_EQ(pairs(seq), 0);
  ASSERT_EQ(seq.actions.size(), paired.actions.size());
  // Hideable communication changes nothing when no pair can hide it.
  SimulationInput plain;
  plain.costs.assign(4, ChunkCost{1, 1, 1});
  SimulationInput hidden;
  hidden.costs.assign(4, ChunkCost{1, 1, 1, 0.4, 0.4});
  EXPECT_DOUBLE_EQ(simulate(seq, hidden).makespan_s, simulate(seq, plain).makespan_s);
  EXPECT_LT(simulate(paired, hidden).makespan_s, simulate(paired, plain).makespan_s);
}

TEST(ScheduleSelect, AutoRule) {
  EXPECT_EQ(select_schedule(ScheduleKind::kAuto, 4, 2, false).algorithm,
            ScheduleKind::kInterleaved);
  EXPECT_EQ(select_schedule(ScheduleKind::kAuto, 4, 2, true).algorithm, ScheduleKind::kInterleaved);
  EXPECT_EQ(select_schedule(ScheduleKind::kAuto, 4, 1, true).algorithm, ScheduleKind::kZeroBubble);
  EXPECT_EQ(select_schedule(ScheduleKind::kAuto, 4, 1, false).algorithm, ScheduleKind::k1F1B);
  EXPECT_EQ(select_schedule(ScheduleKind::kZbvGreedyMin, 4, 2, false).algorithm,
            ScheduleKind::kZbvGreedyMin);
  EXPECT_EQ(input_error_key([] { select_schedule(ScheduleKind::kZbvFormatted, 4, 1, false); }),
            "vpp");
  EXPECT_EQ(input_error_key([] { select_schedule(ScheduleKind::kInterleaved, 4, 1, false); }),
            "vpp");
  EXPECT_EQ(input_error_key([] { build_1f1b(4, 0); }), "num_microbatches");
  const ScheduleTable t = build_schedule({ScheduleKind::kAuto, 4, 1, 8, true});
  EXPECT_EQ(t.algorithm, ScheduleKind::kZeroBubble);
}

TEST(ScheduleSelect, ParseNames) {
  for (const char* name : {"auto", "1f1b", "interleaved", "zero-bubble", "zbv-formatted",
                           "zbv-greedy-min", "zbv-greedy-half", "dualpipev"}) {
    EXPECT_EQ(to_string(parse_schedule_kind(name).value()), name);
  }
  EXPECT_FALSE(parse_schedule_kind("zb-h2").has_value());
}

// Stage maps. Interleaved PP4 VPP2: stage 5 = rank 1 chunk 1. V-shape PP4: stage 5 = rank 2
// chunk 1 (2*4-1-5), stage 3 and 4 both on rank 3 (the turn), stage 7 on rank 0.
TEST(ScheduleTable, StageMapping) {
  const ScheduleTable il = build_interleaved(4, 2, 8);
  EXPECT_EQ(il.location_of(5).rank, 1);
  EXPECT_EQ(il.location_of(5).chunk, 1);
  EXPECT_EQ(il.stage_of(1, 1), 5);
  const ScheduleTable v = build_zbv_formatted(4, 8);
  EXPECT_EQ(v.location_of(5).rank, 2);
  EXPECT_EQ(v.location_of(5).chunk, 1);
  EXPECT_EQ(v.location_of(3).rank, 3);
  EXPECT_EQ(v.location_of(4).rank, 3);
  EXPECT_EQ(v.location_of(7).rank, 0);
  for (int z = 0; z < 8; ++z) {
    EXPECT_EQ(v.stage_of(v.location_of(z).rank, v.location_of(z).chunk), z);
    EXPECT_EQ(il.stage_of(il.location_of(z).rank, il.location_of(z).chunk), z);
  }
}

// Megatron's interleaved order for PP2 M4 VPP2 rank 0 (group size 2): warm-up (2-0-1)*2 + 1*2 = 4
// forwards in table order (mb0 c0, mb1 c0, mb0 c1, mb1 c1), then F(mb2 c0), BW(mb0 c1), ...
TEST(ScheduleTable, InterleavedOrder) {
  const ScheduleTable t = build_interleaved(2, 2, 4);
  const auto r0 = t.rank_actions(0);
  ASSERT_GE(r0.size(), 6u);
  EXPECT_EQ(r0[0], act(0, 0, Phase::kF));
  EXPECT_EQ(r0[1], act(0, 1, Phase::kF));
  EXPECT_EQ(r0[2], act(1, 0, Phase::kF));
  EXPECT_EQ(r0[3], act(1, 1, Phase::kF));
  EXPECT_EQ(r0[4], act(0, 2, Phase::kF));
  EXPECT_EQ(r0[5], act(1, 0, Phase::kBW));
  EXPECT_EQ(first_action(t, 0, 1, {Phase::kBW}), 5);
  EXPECT_EQ(last_action(t, 0, 0, {Phase::kBW}), static_cast<int>(r0.size()) - 1);
}

}  // namespace
}  // namespace projector::schedule
