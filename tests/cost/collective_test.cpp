#include "projector/cost/collective.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "support/catalogue.h"

namespace projector {
namespace {

using Curve = std::vector<std::pair<double, double>>;  // [bytes, busbw GB/s] measured

double busbw_gbs(const NetworkSpec& n, const CommGroup& g, double bytes) {
  return collective_estimate(n, CollectiveKind::kAllReduce, bytes, g).bus_bw_bytes_per_s / 1e9;
}

// Size at which a curve first reaches half of `plateau` (log-linear interpolation).
double half_bw_size(const Curve& c, double plateau) {
  for (std::size_t i = 1; i < c.size(); ++i) {
    if (c[i].second >= 0.5 * plateau) {
      const double f = (0.5 * plateau - c[i - 1].second) / (c[i].second - c[i - 1].second);
      return std::exp(std::log(c[i - 1].first) +
                      f * (std::log(c[i].first) - std::log(c[i - 1].first)));
    }
  }
  return c.back().first;
}

// The all-reduce busbw curve of the model against a measured rccl/nccl-tests curve: plateau
// (largest size) within 15%, the half-bandwidth message size within a factor 1.5 (the curves
// rise ~2x per 4x in size there, so this is ~15% in busbw), and every point >= 4 MiB within 20%.
void expect_matches(const NetworkSpec& net, const CommGroup& g, const Curve& measured,
                    double half_size_factor = 1.5) {
  const double plateau = measured.back().second;
  EXPECT_NEAR(busbw_gbs(net, g, measured.back().first), plateau, 0.15 * plateau) << net.name;
  Curve model;  // dense: 5% steps in size
  for (double m = measured.front().first; m <= measured.back().first; m *= 1.05) {
    model.emplace_back(m, busbw_gbs(net, g, m));
  }
  const double h_meas = half_bw_size(measured, plateau);
  const double h_model = half_bw_size(model, busbw_gbs(net, g, measured.back().first));
  EXPECT_LT(std::fabs(std::log(h_model / h_meas)), std::log(half_size_factor))
      << net.name << " half-bandwidth size model " << h_model << " measured " << h_meas;
  for (const auto& [m, bw] : measured) {
    if (m < 4.0 * 1048576) continue;
    EXPECT_NEAR(busbw_gbs(net, g, m), bw, 0.20 * bw) << net.name << " at " << m << " bytes";
  }
}

const CommGroup kNode8{8, 8, 1, 1, 8};
const CommGroup kTwoNodes16{16, 8, 2, 1, 8};

TEST(CollectiveCalibration, Mi300x8Gpu) {
  expect_matches(testing::network("mi300x_ib400"), kNode8,
                 {{1048576, 64.64},
                  {4194304, 138.60},
                  {8388608, 173.16},
                  {16777216, 195.85},
                  {67108864, 271.51},
                  {268435456, 304.96},
                  {1073741824, 313.66},
                  {8589934592, 315.69}});
}

TEST(CollectiveCalibration, H100Nvls8Gpu) {
  expect_matches(testing::network("h100_ib400"), kNode8,
                 {{1048576, 43.70},
                  {4194304, 128.73},
                  {16777216, 234.45},
                  {67108864, 361.78},
                  {268435456, 423.38},
                  {1073741824, 466.35},
                  {8589934592, 478.87}});
}

TEST(CollectiveCalibration, A100Nvswitch8Gpu) {
  expect_matches(testing::network("a100_ib200"), kNode8,
                 {{1048576, 36.22},
                  {16777216, 109.22},
                  {67108864, 166.63},
                  {268435456, 213.87},
                  {1073741824, 228.10},
                  {8589934592, 231.58}});
}

TEST(CollectiveCalibration, Mi300xTwoNodesCx7) {
  // mi300x_ib400.yaml (nic_rdma_setup_us 300, nic_warmup_bytes 64 MiB fitted to this curve). The
  // measured 128 MiB point (173.7) sits below the trend (64 MiB 153, 256 MiB 294): the measured
  // half-bandwidth crossing falls inside that jump (~138 MB) while the model's smooth curve
  // crosses earlier; allowed factor 1.7 here.
  expect_matches(testing::network("mi300x_ib400"), kTwoNodes16,
                 {{1048576, 4.74},
                  {4194304, 23.27},
                  {16777216, 63.26},
                  {67108864, 153.10},
                  {134217728, 173.70},
                  {268435456, 293.75},
                  {1073741824, 340.75},
                  {17179869184, 357.46}},
                 1.7);
}

TEST(CollectiveCalibration, Mi355xTwoNodesPollara) {
  expect_matches(testing::network("mi355x_pollara400"), kTwoNodes16,
                 {{1048576, 24.16},
                  {4194304, 66.30},
                  {16777216, 120.23},
                  {67108864, 204.84},
                  {268435456, 304.67},
                  {1073741824, 364.39},
                  {8589934592, 369.04}});
}

TEST(Collective, MeshDerateForSmallGroups) {
  // MI300X: 2-GPU all-reduce busbw 47.7 GB/s vs 312.9 for 8 (stas00): one of seven xGMI links.
  const NetworkSpec& n = testing::network("mi300x_ib400");
  const double two = busbw_gbs(n, {2, 2, 1, 1, 8}, 4294967296.0);
  EXPECT_NEAR(two, 47.7, 0.15 * 47.7);
}

TEST(Collective, PlacementDrivesCost) {
  const NetworkSpec& n = testing::network("mi300x_ib400");
  const double m = 256.0 * 1048576;
  // Same 8 ranks: inside one node vs one per node (NIC-bound).
  const double in_node = collective_time(n, CollectiveKind::kAllReduce, m, {8, 8, 1, 1, 8}).time_s;
  const double spread = collective_time(n, CollectiveKind::kAllReduce, m, {8, 1, 8, 1, 8}).time_s;
  EXPECT_GT(spread, 3.0 * in_node);
  // All-to-all: remote peers go over the NIC (~50 GB/s) instead of xGMI.
  const double a2a_local = collective_time(n, CollectiveKind::kAllToAll, m, {8, 8, 1, 1, 8}).time_s;
  const double a2a_remote =
      collective_time(n, CollectiveKind::kAllToAll, m, {16, 8, 2, 1, 8}).time_s;
  EXPECT_GT(a2a_remote, 2.0 * a2a_local);
  // P2P (mi300x_ib400.yaml, p2p_bw_eff 0.745): same node over one xGMI link (448 x 0.745 / 7 =
  // 47.68 GB/s) vs across nodes (50 x 0.745 = 37.25 GB/s).
  const double p2p_local = collective_time(n, CollectiveKind::kSendRecv, m, {2, 2, 1, 1, 8}).time_s;
  const double p2p_remote =
      collective_time(n, CollectiveKind::kSendRecv, m, {2, 1, 2, 1, 8}).time_s;
  EXPECT_NEAR(p2p_local, m / (448e9 * 0.745 / 7), 0.05 * p2p_local);
  EXPECT_NEAR(p2p_remote, m / (50e9 * 0.745), 0.05 * p2p_remote);
  // Crossing pods uses the slower cluster tier (Primus' mi300x file: pods of 64 GPUs, cluster
  // 25 GB/s below the pod's 50; the shipped mi300x_ib400 assumes one non-blocking pod).
  const NetworkSpec& pods = testing::network("primus_mi300x");
  EXPECT_GT(collective_time(pods, CollectiveKind::kAllReduce, m, {16, 1, 16, 2, 8}).time_s,
            collective_time(pods, CollectiveKind::kAllReduce, m, {16, 1, 16, 1, 8}).time_s);
}

// A node-aggregating all-to-all (DeepEP / HybridEP) keeps one NIC stream per node pair: over 8
// nodes it escapes the per-node remote contention 1 - 0.04 x 7 = 0.72 of h100_ib400.yaml (Primus'
// a2a_remote_contention), so with the remote leg dominating the plain all-to-all takes ~1 / 0.72
// of its time; within one node nothing changes.
TEST(Collective, NodeAggregatedAllToAllHasNoPeerContention) {
  const NetworkSpec& n = testing::network("h100_ib400");
  ASSERT_DOUBLE_EQ(n.a2a_remote_contention, 0.04);
  const double m = 512.0 * 1048576;
  CommGroup g{64, 8, 8, 1, 8};
  const double plain = collective_time(n, CollectiveKind::kAllToAll, m, g).time_s;
  g.node_aggregated = true;
  const double aggregated = collective_time(n, CollectiveKind::kAllToAll, m, g).time_s;
  EXPECT_NEAR(plain / aggregated, 1.0 / 0.72, 0.02);
  // The receiving node's NVLink forwarding (node_forward_ratio bytes per byte sent) bounds the
  // kernel once it outweighs the NIC leg: doubling it then doubles the time.
  g.node_forward_ratio = 20.0;
  const double fwd20 = collective_time(n, CollectiveKind::kAllToAll, m, g).time_s;
  g.node_forward_ratio = 40.0;
  EXPECT_NEAR(collective_time(n, CollectiveKind::kAllToAll, m, g).time_s / fwd20, 2.0, 0.02);
  EXPECT_GT(fwd20, aggregated);
  CommGroup one{8, 8, 1, 1, 8};
  const double one_plain = collective_time(n, CollectiveKind::kAllToAll, m, one).time_s;
  one.node_aggregated = true;
  EXPECT_DOUBLE_EQ(collective_time(n, CollectiveKind::kAllToAll, m, one).time_s, one_plain);
}

// A GPU-initiated all-to-all (DeepEP's low-latency kernels) pays one latency per tier and each
// tier's share of the bytes: from EP 16 to 128 to 256 (8 GPUs a node) the remote share goes
// 8/16 -> 120/128 -> 248/256, so the two increments stand 0.4375 : 0.03125 = 14 : 1 whatever the
// bandwidth and latencies. DeepEP's H800 table (docs/legacy.md, 128 tokens x top-8 x 7168 FP8
// per rank: 7.569 MB) measures 192 us at EP 128 and 194 at EP 256; the proxy-driven all-to-all
// (per-peer latency, contention) grows by far more over the same step.
TEST(Collective, GpuInitiatedAllToAllPaysEachTierOnce) {
  const NetworkSpec& n = testing::network("h800_ib400");
  const double m = 7.569e6;
  auto t = [&](int ranks, bool gpu) {
    CommGroup g{ranks, 8, ranks / 8, 1, 8};
    g.gpu_initiated = gpu;
    return collective_time(n, CollectiveKind::kAllToAll, m, g).time_s;
  };
  EXPECT_NEAR((t(128, true) - t(16, true)) / (t(256, true) - t(128, true)), 14.0, 1e-6);
  EXPECT_NEAR(t(128, true), 192e-6, 0.1 * 192e-6);
  EXPECT_NEAR(t(256, true), 194e-6, 0.1 * 194e-6);
  EXPECT_GT(t(256, false) / t(128, false) - 1.0, 4.0 * (t(256, true) / t(128, true) - 1.0));
  EXPECT_EQ(collective_estimate(n, CollectiveKind::kAllToAll, m, {256, 8, 32, 1, 8}).algorithm,
            "direct");
}

TEST(Collective, AlgorithmChoiceFollowsMessageSize) {
  const NetworkSpec& n = testing::network("h100_ib400");
  EXPECT_EQ(collective_estimate(n, CollectiveKind::kAllReduce, 65536, kNode8).protocol, "LL");
  EXPECT_EQ(collective_estimate(n, CollectiveKind::kAllReduce, 1e9, kNode8).algorithm, "nvls");
  // Trivial cases.
  EXPECT_EQ(collective_time(n, CollectiveKind::kAllReduce, 1e6, {1, 1, 1, 1, 8}).time_s, 0.0);
  EXPECT_EQ(collective_time(n, CollectiveKind::kAllGather, 0.0, kNode8).time_s, 0.0);
  // Reduce-scatter + all-gather move the same bytes as one all-reduce ring.
  const double m = 1e9;
  const double ar =
      collective_time(testing::network("a100_ib200"), CollectiveKind::kAllReduce, m, kNode8).time_s;
  const double rs =
      collective_time(testing::network("a100_ib200"), CollectiveKind::kReduceScatter, m, kNode8)
          .time_s;
  EXPECT_NEAR(2.0 * rs, ar, 0.03 * ar);
}

TEST(MakeGroup, MegatronRankOrder) {
  // TP8 CP1 DP16 PP4 on 8-GPU nodes: TP fills a node, DP is one rank per node over 16 nodes,
  // a PP hop jumps 128 ranks (another node).
  const ParallelSizes p{.tp = 8, .cp = 1, .dp = 16, .pp = 4, .ep = 1};
  const CommGroup tp = make_group(GroupKind::kTp, p, 8);
  EXPECT_EQ(tp, (CommGroup{8, 8, 1, 1, 8}));
  const CommGroup dp = make_group(GroupKind::kDp, p, 8);
  EXPECT_EQ(dp, (CommGroup{16, 1, 16, 1, 8}));
  EXPECT_EQ(make_group(GroupKind::kPpPeer, p, 8), (CommGroup{2, 1, 2, 1, 8}));
  // TP2 CP2 DP4: CP stride 2 -> both CP ranks in a node; DP stride 4 -> 2 per node, 2 nodes.
  const ParallelSizes q{.tp = 2, .cp = 2, .dp = 4, .pp = 1};
  EXPECT_EQ(make_group(GroupKind::kCp, q, 8), (CommGroup{2, 2, 1, 1, 8}));
  EXPECT_EQ(make_group(GroupKind::kDp, q, 8), (CommGroup{4, 2, 2, 1, 8}));
  EXPECT_EQ(make_group(GroupKind::kDpCp, q, 8), (CommGroup{8, 4, 2, 1, 8}));
  // MoE folding: TP1 DP64, EP8 ETP1: EP is 8 consecutive ranks (one node), EDP = 8 across nodes.
  const ParallelSizes e{.tp = 1, .cp = 1, .dp = 64, .pp = 1, .ep = 8, .etp = 1};
  EXPECT_EQ(make_group(GroupKind::kEp, e, 8), (CommGroup{8, 8, 1, 1, 8}));
  EXPECT_EQ(make_group(GroupKind::kEdp, e, 8), (CommGroup{8, 1, 8, 1, 8}));
  // EP16 spans two nodes; pods of 32 GPUs: a DP group of 64 one-per-... spans 2 pods.
  EXPECT_EQ(make_group(GroupKind::kEp, {.tp = 1, .dp = 64, .ep = 16}, 8),
            (CommGroup{16, 8, 2, 1, 8}));
  EXPECT_EQ(make_group(GroupKind::kDp, e, 8, 32).pods, 2);
}

// A multi-host NVLink domain is one node of the collective model: 8 GB200 on two 4-GPU trays are
// one NVLink group. HybridEP's kernel measures an 8-rank bf16 dispatch of 4.698e8 B at 614.8 us
// on GB200 (data/kernels/ep_dispatch.yaml); the all-to-all priced over the NVL72 node is within
// 10 % of it. An 8-GPU HGX node stays its host; a TPU is left to the torus model.
TEST(CollectiveNodes, Nvl72IsOneNodeTier) {
  const AcceleratorSpec& gb200 = testing::accelerator("gb200");
  const NetworkSpec& nvl72 = testing::network("gb200_nvl72");
  EXPECT_EQ(collective_node_gpus(gb200, nvl72, 4), 72);
  EXPECT_EQ(
      collective_node_gpus(testing::accelerator("h100_sxm"), testing::network("h100_ib400"), 8), 8);
  EXPECT_EQ(
      collective_node_gpus(testing::accelerator("tpu_v5p"), testing::network("tpu_v5p_ici"), 4), 4);
  // An MI300X job on nodes of 4 GPUs: two separate xGMI groups, not one domain of 8.
  EXPECT_EQ(
      collective_node_gpus(testing::accelerator("mi300x"), testing::network("mi300x_ib400"), 4), 4);
  const CommGroup g = make_group(8, 1, collective_node_gpus(gb200, nvl72, 4));
  EXPECT_EQ(g.nodes, 1);
  EXPECT_EQ(g.ranks_per_node, 8);
  const double t = collective_estimate(nvl72, CollectiveKind::kAllToAll, 4.698e8, g).cost.time_s;
  EXPECT_NEAR(t, 614.8e-6, 0.10 * 614.8e-6);
}

}  // namespace
}  // namespace projector
