// Top-k routing statistics behind deduplicating dispatchers, derived by hand.
#include "projector/cost/moe_routing.h"

#include <gtest/gtest.h>

namespace projector {
namespace {

// Product form of C(a - b, k) / C(a, k): the chance that k distinct picks of a miss b of them.
double miss(int a, int b, int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(a - b - i) / (a - i);
  return p;
}

// DeepEP's internode test at EP 64 (8 nodes): 256 experts in 8 node groups, top-4 groups, top-8
// experts. A node is picked with probability 4/8 and then hit unless all 8 experts avoid its 32
// of the 128 picked experts: 8 x 1/2 x (1 - C(96,8)/C(128,8)) ~ 3.6 destinations per token.
TEST(MoeRouting, GroupLimitedDestinations) {
  MoeSpec m;
  m.num_experts = 256;
  m.topk = 8;
  m.router_num_groups = 8;
  m.router_group_topk = 4;
  const double expected = 8 * 0.5 * (1.0 - miss(128, 32, 8));
  EXPECT_NEAR(expected_destinations(m, 8), expected, 1e-12);
  EXPECT_NEAR(expected, 3.6, 0.05);
  // Without the group limit every node holds 32 of 256: 8 x (1 - C(224,8)/C(256,8)).
  m.router_num_groups = m.router_group_topk = 0;
  EXPECT_NEAR(expected_destinations(m, 8), 8 * (1.0 - miss(256, 32, 8)), 1e-12);
  // One destination (no expert parallelism): the token's own.
  EXPECT_DOUBLE_EQ(expected_destinations(m, 1), 1.0);
}

// The dedup factor is the remote copies of one send per destination over the remote copies of one
// send per (token, expert): (parts - 1) x P(hit) / (topk x (parts - 1) / parts).
TEST(MoeRouting, DedupFactorIsRemoteCopiesOverRoutedCopies) {
  MoeSpec m;
  m.num_experts = 128;
  m.topk = 8;
  const double hit = 1.0 - miss(128, 64, 8);
  EXPECT_NEAR(dedup_dispatch_factor(m, 16, 2), hit / 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(dedup_dispatch_factor(m, 1, 1), 1.0);
}

// AutoModel's fake balanced gate gives token t the experts 8t..8t+7 (mod E), counted by hand:
// DeepSeek-V3 (256 experts) at EP 64 over 8 nodes holds 32 experts a node and 4 a GPU, and 8t is a
// multiple of 8, so every token's eight experts sit in one node and on two GPUs; the dedup factor
// is then 1 destination node over 8 routed copies. Kimi-K2 (384 experts) at EP 32 holds 12 a GPU:
// the starts 8t mod 24 are 0, 8, 16, spanning 1, 2 and 1 GPUs (4/3 on average). A start that
// wraps: 12 experts, top-8, 2 destinations of 6: the starts 0, 8, 4 (period 3) span 2, 2 and 2.
TEST(MoeRouting, ConsecutivePlacementSpansTheFewestDestinations) {
  MoeSpec m;
  m.num_experts = 256;
  m.topk = 8;
  m.router_num_groups = 8;
  m.router_group_topk = 4;  // the fake gate ignores the group limit
  const MoePlacement c = MoePlacement::kConsecutive;
  EXPECT_DOUBLE_EQ(expected_destinations(m, 8, c), 1.0);
  EXPECT_DOUBLE_EQ(expected_destinations(m, 64, c), 2.0);
  EXPECT_DOUBLE_EQ(dedup_dispatch_factor(m, 64, 8, c), 1.0 / 8.0);
  m.num_experts = 384;
  m.router_num_groups = m.router_group_topk = 0;
  EXPECT_NEAR(expected_destinations(m, 32, c), 4.0 / 3.0, 1e-12);
  m.num_experts = 12;
  EXPECT_DOUBLE_EQ(expected_destinations(m, 2, c), 2.0);
  // Uniform placement of the same 12 experts over 2 halves: 2 x (1 - C(6,8)/C(12,8)) = 2.
  EXPECT_DOUBLE_EQ(expected_destinations(m, 2), 2.0);
}

}  // namespace
}  // namespace projector
