// Collectives on a torus (TPU ICI) and across slices (DCN), cost/torus_collective.cpp: the ring
// terms per spanned axis, wraparound doubling a ring's rate, all-to-all by mean ring distance,
// TPU7x's two devices sharing a chip's links, and the DCN leg of multi-slice groups.
#include <gtest/gtest.h>

#include "projector/cost/collective.h"

namespace projector {
namespace {

NetworkSpec net() {
  NetworkSpec n;
  n.ici_link_bw_gb_per_s = 100.0;
  n.ici_bw_eff = 1.0;
  n.ici_hop_lat_us = 0.0;
  n.ici_base_lat_us = 0.0;
  n.dcn_bw_gb_per_s = 10.0;
  n.dcn_bw_eff = 1.0;
  n.dcn_lat_us = 0.0;
  return n;
}

CommGroup group(std::vector<int> extent, std::vector<bool> wrap, int slices = 1, int sharers = 1) {
  CommGroup g;
  g.torus.axes = static_cast<int>(extent.size());
  int n = 1;
  for (std::size_t i = 0; i < extent.size(); ++i) {
    g.torus.extent[i] = extent[i];
    g.torus.wrap[i] = wrap[i];
    n *= extent[i];
  }
  g.torus.slices = slices;
  g.torus.sharers = sharers;
  g.size = n * slices;
  return g;
}

double t(CollectiveKind k, double bytes, const CommGroup& g) {
  return torus_collective_estimate(net(), k, bytes, g).cost.time_s;
}

constexpr double kGB = 1e9;
constexpr double kLink = 100e9;

TEST(TorusCollective, AllGatherRing) {
  // A wrapped ring of 16 sends both ways: S (n-1)/n over 2 links.
  EXPECT_NEAR(t(CollectiveKind::kAllGather, kGB, group({16}, {true})), kGB * 15 / 16 / (2 * kLink),
              1e-12);
  // Without the wraparound only one way in effect.
  EXPECT_NEAR(t(CollectiveKind::kAllGather, kGB, group({4}, {false})), kGB * 3 / 4 / kLink, 1e-12);
  // Two spanned axes drive their links at once: the rates add.
  EXPECT_NEAR(t(CollectiveKind::kAllGather, kGB, group({16, 16}, {true, true})),
              kGB * 255 / 256 / (4 * kLink), 1e-12);
  // Reduce-scatter costs the same; all-reduce both.
  EXPECT_DOUBLE_EQ(t(CollectiveKind::kReduceScatter, kGB, group({8}, {true})),
                   t(CollectiveKind::kAllGather, kGB, group({8}, {true})));
  EXPECT_DOUBLE_EQ(t(CollectiveKind::kAllReduce, kGB, group({8}, {true})),
                   2 * t(CollectiveKind::kAllGather, kGB, group({8}, {true})));
}

TEST(TorusCollective, AllToAllByRingDistance) {
  // Wrapped ring: S n / 8 per link; a line: its middle link carries S n / 4.
  EXPECT_NEAR(t(CollectiveKind::kAllToAll, kGB, group({8}, {true})), kGB * 8 / 8 / kLink, 1e-12);
  EXPECT_NEAR(t(CollectiveKind::kAllToAll, kGB, group({4}, {false})), kGB * 4 / 4 / kLink, 1e-12);
  // A pair exchanges half the buffer over its one link.
  EXPECT_NEAR(t(CollectiveKind::kAllToAll, kGB, group({2}, {false})), kGB / 2 / kLink, 1e-12);
  // A 2x2 block (MaxText's hybrid ring of 4) is as fast as a wrapped ring of 4.
  EXPECT_NEAR(t(CollectiveKind::kAllToAll, kGB, group({2, 2}, {false, false})),
              t(CollectiveKind::kAllToAll, kGB, group({4}, {true})), 1e-12);
  // Axes run concurrently: the slowest one sets the time.
  EXPECT_NEAR(t(CollectiveKind::kAllToAll, kGB, group({4, 8}, {false, true})), kGB * 4 / 4 / kLink,
              1e-12);
}

TEST(TorusCollective, SharedLinksAndSlices) {
  // TPU7x: two devices per chip share the chip's links.
  EXPECT_NEAR(t(CollectiveKind::kAllGather, kGB, group({4}, {true}, 1, 2)),
              2 * t(CollectiveKind::kAllGather, kGB, group({4}, {true})), 1e-12);
  // Two slices: the DCN leg moves the 1/n_slice part per chip over DCN, then the ICI ring.
  const double ici = t(CollectiveKind::kAllGather, kGB, group({4}, {true}));
  EXPECT_NEAR(t(CollectiveKind::kAllGather, kGB, group({4}, {true}, 2)),
              ici + (kGB / 4) * 0.5 / 10e9, 1e-12);
  // All-to-all across slices: the remote half crosses DCN.
  EXPECT_NEAR(t(CollectiveKind::kAllToAll, kGB, group({4}, {true}, 2)),
              t(CollectiveKind::kAllToAll, kGB / 2, group({4}, {true})) + kGB / 2 / 10e9, 1e-12);
}

}  // namespace
}  // namespace projector
