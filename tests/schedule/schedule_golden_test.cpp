// Golden values for the schedule tables run through the simulator with balanced chunks and no
// communication. Expected values come from the papers' closed forms (derivations in comments) and
// from the Primus reference table (spec 8.5), which these constructions reproduce.
#include <gtest/gtest.h>

#include <vector>

#include "projector/schedule/schedule.h"
#include "projector/schedule/simulator.h"

namespace projector::schedule {
namespace {

SimulationInput balanced(int pp, int vpp, double f, double b, double w) {
  SimulationInput in;
  in.costs.assign(static_cast<std::size_t>(pp * vpp), ChunkCost{f, b, w});
  return in;
}

SimulationResult run(const ScheduleTable& t, double f, double b, double w) {
  return simulate(t, balanced(t.pp, t.vpp, f, b, w));
}

std::vector<int> peaks(const SimulationResult& r) {
  std::vector<int> out;
  for (const RankStats& s : r.ranks) out.push_back(s.peak_inflight);
  return out;
}

// 1F1B: makespan (m + p - 1)(f + b); bubble over ideal (p - 1)/m (Narayanan et al. 2021).
// PP4 M8 f=1 b=2: 11 * 3 = 33, max bubble 9/33 = 0.273 (spec 8.5). Rank r holds min(p - r, m).
TEST(ScheduleGolden, OneF1BPp4M8) {
  const SimulationResult r = run(build_1f1b(4, 8), 1, 2, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 33.0);
  EXPECT_NEAR(r.max_bubble_fraction, 9.0 / 33.0, 1e-12);
  EXPECT_NEAR(r.bubble_over_ideal, 3.0 / 8.0, 1e-12);
  EXPECT_EQ(peaks(r), (std::vector<int>{4, 3, 2, 1}));
}

// PP8 M32: (32 + 7) * 3 = 117; bubble 21/117 = 0.179; peaks 8..1.
TEST(ScheduleGolden, OneF1BPp8M32) {
  const SimulationResult r = run(build_1f1b(8, 32), 1, 2, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 117.0);
  EXPECT_NEAR(r.max_bubble_fraction, 21.0 / 117.0, 1e-12);
  EXPECT_NEAR(r.bubble_over_ideal, 7.0 / 32.0, 1e-12);
  EXPECT_EQ(peaks(r), (std::vector<int>{8, 7, 6, 5, 4, 3, 2, 1}));
}

// Interleaved: makespan (m + (p-1)/v)(F_rank + B_rank), bubble over ideal (p-1)/(v m).
// PP4 VPP2 M8, chunk f=0.5 b=1: (8 + 1.5) * 3 = 28.5, max bubble 4.5/28.5 = 0.158.
// Peak in-flight chunk-microbatches = warm-up (p-r-1)*2 + (v-1)*p plus the steady F: 11, 9, 7, 5.
TEST(ScheduleGolden, InterleavedPp4Vpp2M8) {
  const SimulationResult r = run(build_interleaved(4, 2, 8), 0.5, 1, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 28.5);
  EXPECT_NEAR(r.max_bubble_fraction, 4.5 / 28.5, 1e-12);
  EXPECT_NEAR(r.bubble_over_ideal, 3.0 / (2 * 8), 1e-12);
  EXPECT_EQ(peaks(r), (std::vector<int>{11, 9, 7, 5}));
}

// PP8 VPP2 M32: (32 + 3.5) * 3 = 106.5; peaks 23, 21, ..., 9.
TEST(ScheduleGolden, InterleavedPp8Vpp2M32) {
  const SimulationResult r = run(build_interleaved(8, 2, 32), 0.5, 1, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 106.5);
  EXPECT_NEAR(r.bubble_over_ideal, 7.0 / (2 * 32), 1e-12);
  EXPECT_EQ(peaks(r), (std::vector<int>{23, 21, 19, 17, 15, 13, 11, 9}));
}

// (p-1)/(v m) for v = 4: PP4 VPP4 M8, chunk f=0.25 b=0.5 (rank F+B = 3): (8 + 3/4) * 3 = 26.25.
TEST(ScheduleGolden, InterleavedVpp4) {
  const SimulationResult r = run(build_interleaved(4, 4, 8), 0.25, 0.5, 0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 26.25);
  EXPECT_NEAR(r.bubble_over_ideal, 3.0 / (4 * 8), 1e-12);
}

// ZB-H1 (Qi et al. 2023): bubble (p-1)(F + B - W); with F=B=W=1 that is p-1, a third of 1F1B's
// (p-1)(F+B+W). PP4 M8: 24 + 3 = 27, bubble 3/27 = 0.111; PP8 M32: 96 + 7 = 103.
// Peak: every rank holds p microbatches (W deferred by r on rank r).
TEST(ScheduleGolden, ZeroBubbleH1) {
  const SimulationResult r4 = run(build_zero_bubble_h1(4, 8), 1, 1, 1);
  EXPECT_DOUBLE_EQ(r4.makespan_s, 27.0);
  EXPECT_NEAR(r4.max_bubble_fraction, 3.0 / 27.0, 1e-12);
  EXPECT_EQ(peaks(r4), (std::vector<int>{4, 4, 4, 4}));
  const SimulationResult r8 = run(build_zero_bubble_h1(8, 32), 1, 1, 1);
  EXPECT_DOUBLE_EQ(r8.makespan_s, 103.0);
  EXPECT_NEAR(r8.max_bubble_fraction, 7.0 / 103.0, 1e-12);
  EXPECT_EQ(peaks(r8), std::vector<int>(8, 8));
  // Same work as 1F1B with F=1, BW=2: 1F1B bubble 9, ZB-H1 bubble 3 -> one third.
  const SimulationResult base = run(build_1f1b(4, 8), 1, 1, 1);
  EXPECT_NEAR((r4.makespan_s - 24.0) / (base.makespan_s - 24.0), 1.0 / 3.0, 1e-12);
}

// Spec 8.5 (Primus reference, balanced f=b=w=0.5 per chunk, activation 1 per chunk).
TEST(ScheduleGolden, ZbvFormatted) {
  const SimulationResult r4 = run(build_zbv_formatted(4, 8), 0.5, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(r4.makespan_s, 25.5);
  EXPECT_NEAR(r4.max_bubble_fraction, 1.5 / 25.5, 1e-12);
  EXPECT_EQ(peaks(r4), std::vector<int>(4, 8));
  const SimulationResult r8 = run(build_zbv_formatted(8, 32), 0.5, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(r8.makespan_s, 99.5);
  EXPECT_EQ(peaks(r8), std::vector<int>(8, 16));
}

TEST(ScheduleGolden, ZbvGreedyHalf) {
  const SimulationResult r4 = run(build_zbv_greedy(4, 8, ZbvMemory::kHalf), 0.5, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(r4.makespan_s, 26.5);
  EXPECT_EQ(peaks(r4), std::vector<int>(4, 6));
  const SimulationResult r8 = run(build_zbv_greedy(8, 32, ZbvMemory::kHalf), 0.5, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(r8.makespan_s, 104.5);
  EXPECT_EQ(peaks(r8), std::vector<int>(8, 10));
}

TEST(ScheduleGolden, ZbvGreedyMin) {
  const SimulationResult r4 = run(build_zbv_greedy(4, 8, ZbvMemory::kMin), 0.5, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(r4.makespan_s, 29.5);
  EXPECT_EQ(peaks(r4), std::vector<int>(4, 4));
  const SimulationResult r8 = run(build_zbv_greedy(8, 32, ZbvMemory::kMin), 0.5, 0.5, 0.5);
  EXPECT_DOUBLE_EQ(r8.makespan_s, 109.0);
  EXPECT_EQ(peaks(r8), std::vector<int>(8, 8));
}

// Bubble ordering for the same total work (per rank 3 units per microbatch): ZBV < ZB-H1 < 1F1B,
// and ZBV's bubble over ideal is small (< 4 % at PP8 M32).
TEST(ScheduleGolden, BubbleOrdering) {
  const double zbv = run(build_zbv_formatted(8, 32), 0.5, 0.5, 0.5).bubble_over_ideal;
  const double zb = run(build_zero_bubble_h1(8, 32), 1, 1, 1).bubble_over_ideal;
  const double ofob = run(build_1f1b(8, 32), 1, 1, 1).bubble_over_ideal;
  EXPECT_LT(zbv, zb);
  EXPECT_LT(zb, ofob);
  EXPECT_LT(zbv, 0.04);
}

}  // namespace
}  // namespace projector::schedule
