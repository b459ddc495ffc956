// Golden values of Primus' collective model (spec 5.13 / 7.4, reproduced from the reference code)
// and the structural checks of its unit tests (spec 11.3).
#include "projector/cost/primus_collectives.h"

#include <gtest/gtest.h>

#include "support/catalogue.h"

namespace projector::primus {
namespace {

constexpr double kMiB = 1048576.0;

CollectiveArgs def(int nodes, int pp = 1) {
  return make_collective_args(NetworkSpec{}, nodes, 8, 1, pp);
}
CollectiveArgs m355(int nodes, int pp = 1) {
  return make_collective_args(testing::network("primus_mi355x"), nodes, 8, 1, pp);
}

TEST(PrimusCollectives, AllReduceGoldens) {
  EXPECT_NEAR(allreduce(def(1), 64 * kMiB, 8), 377.30, 0.01);
  EXPECT_NEAR(allreduce(def(1), 1 * kMiB, 8), 206.42, 0.01);
  EXPECT_NEAR(allreduce(def(2), 64 * kMiB, 16), 658.96, 0.01);
  EXPECT_NEAR(allreduce(def(4), 64 * kMiB, 32), 939.17, 0.01);
  EXPECT_NEAR(allreduce(def(8), 1024 * kMiB, 64), 3062.40, 0.01);
  EXPECT_NEAR(allreduce(def(16), 1024 * kMiB, 128), 3068.92, 0.01);
  EXPECT_NEAR(allreduce(m355(1), 64 * kMiB, 8), 516.54, 0.01);
  EXPECT_NEAR(allreduce(m355(1), 1 * kMiB, 8), 208.75, 0.01);
  EXPECT_NEAR(allreduce(m355(2), 64 * kMiB, 16), 960.24, 0.01);
  EXPECT_NEAR(allreduce(m355(4), 64 * kMiB, 32), 1314.92, 0.01);
  EXPECT_NEAR(allreduce(m355(8), 1024 * kMiB, 64), 7426.13, 0.01);
  EXPECT_NEAR(allreduce(m355(16), 1024 * kMiB, 128), 7909.50, 0.01);  // pod 64: cluster tier
}

TEST(PrimusCollectives, AllToAllGoldens) {
  EXPECT_NEAR(alltoall(def(1), 64 * kMiB, 8), 302.96, 0.01);
  EXPECT_NEAR(alltoall(def(2), 64 * kMiB, 16), 1099.71, 0.01);
  EXPECT_NEAR(alltoall(def(4), 64 * kMiB, 32), 1662.98, 0.01);
  EXPECT_NEAR(alltoall(m355(1), 64 * kMiB, 8), 398.36, 0.01);
  EXPECT_NEAR(alltoall(m355(2), 64 * kMiB, 16), 1099.71, 0.01);
  EXPECT_NEAR(alltoall(m355(4), 64 * kMiB, 32), 1662.98, 0.01);
}

TEST(PrimusCollectives, AllGatherReduceScatterGoldens) {
  EXPECT_NEAR(allgather(def(1), 64 * kMiB, 8), 85.46, 0.01);
  EXPECT_NEAR(reduce_scatter(def(1), 64 * kMiB, 8), 94.64, 0.01);
  EXPECT_NEAR(allgather(def(2), 64 * kMiB, 16), 257.49, 0.01);
  EXPECT_NEAR(reduce_scatter(def(2), 64 * kMiB, 16), 300.57, 0.01);
  EXPECT_NEAR(allgather(m355(1), 64 * kMiB, 8), 159.58, 0.01);
  EXPECT_NEAR(reduce_scatter(m355(1), 64 * kMiB, 8), 159.77, 0.01);
  EXPECT_NEAR(allgather(m355(2), 64 * kMiB, 16), 257.49, 0.01);
  EXPECT_NEAR(reduce_scatter(m355(2), 64 * kMiB, 16), 260.70, 0.01);
}

TEST(PrimusCollectives, SendRecvGoldens) {
  EXPECT_NEAR(sendrecv(def(1), 64 * kMiB), 85.17, 0.01);
  EXPECT_NEAR(sendrecv(def(2, 2), 64 * kMiB), 1682.52, 0.01);
  // mesh: one xGMI link = 537.6 x 0.8 / 7 GB/s.
  EXPECT_NEAR(sendrecv(m355(1), 64 * kMiB), 1095.52, 0.01);
  EXPECT_NEAR(sendrecv(m355(2, 2), 64 * kMiB), 1682.52, 0.01);
}

// Spec 11.3: the reference's unit tests set the fields directly (bw_eff not applied).
CollectiveArgs unit_args(int nodes, int hp = 1) {
  NetworkSpec n = testing::network("primus_mi300x");
  n.write_latency_us = 0.3;
  n.write_resp_us = 0.3;
  n.hbm_latency_us = 0.1;
  n.kernel_launch_latency_us = 2.0;
  n.bw_eff = 0.8;
  return make_collective_args_raw(n, nodes, hp);
}

TEST(PrimusCollectives, TrivialCasesAreZero) {
  const CollectiveArgs a = unit_args(1);
  EXPECT_EQ(allgather(a, 64 * kMiB, 1), 0.0);
  EXPECT_EQ(reduce_scatter(a, 64 * kMiB, 1), 0.0);
  EXPECT_EQ(allreduce(a, 64 * kMiB, 1), 0.0);
  EXPECT_EQ(allreduce(a, 0.0, 8), 0.0);
  EXPECT_EQ(ring_allreduce(a, 64 * kMiB, 1, Protocol::kSimple), 0.0);
  EXPECT_EQ(ring_allgather(a, 0.0, 8, Protocol::kLL), 0.0);
  EXPECT_EQ(cp_allgather(a, 64 * kMiB, 1, Protocol::kSimple), 0.0);
}

TEST(PrimusCollectives, MonotoneInSizeAndScale) {
  const CollectiveArgs a = unit_args(2);
  EXPECT_LE(allreduce(a, 1 * kMiB, 16), allreduce(a, 256 * kMiB, 16));
  EXPECT_LE(allgather(a, 1 * kMiB, 16), allgather(a, 256 * kMiB, 16));
  EXPECT_LE(reduce_scatter(a, 1 * kMiB, 16), reduce_scatter(a, 256 * kMiB, 16));
  const CollectiveArgs big = unit_args(8);
  EXPECT_GE(allreduce(big, 64 * kMiB, 64), allreduce(big, 64 * kMiB, 8));
  EXPECT_GT(alltoall(a, 64 * kMiB, 16), alltoall(a, 64 * kMiB, 8));
  // 256 GPUs with pod 64: cluster tier, slower per byte than the pod tier.
  const CollectiveArgs huge = unit_args(32);
  EXPECT_GT(ring_allgather(huge, 64 * kMiB, 128, Protocol::kSimple),
            ring_allgather(huge, 64 * kMiB, 32, Protocol::kSimple));
}

TEST(PrimusCollectives, MeshDerate) {
  const CollectiveArgs a = make_collective_args(testing::network("primus_mi300x"), 1, 8, 2);
  // hp = 2 on an 8-GPU mesh: 1/7 of the 448 x 0.7 GB/s.
  EXPECT_NEAR(bw_node(a, -1, false), 448.0 * 0.7 / 7.0, 1e-9);
  EXPECT_NEAR(bw_node(a, 8, true), 448.0 * 0.7 * (1.0 - 0.12), 1e-9);
}

}  // namespace
}  // namespace projector::primus
