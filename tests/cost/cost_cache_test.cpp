#include "projector/cost/cost_cache.h"

#include <gtest/gtest.h>

#include "support/catalogue.h"

namespace projector {
namespace {

TEST(CostCache, ReturnsTheModelsResultsAndCountsHits) {
  CostCache cache(testing::accelerator("h100_sxm"), testing::network("h100_ib400"), 4);
  const GemmShape g{8192, 4096, 4096, 1, Dtype::kBf16};
  const OpCost direct = gemm_time(testing::accelerator("h100_sxm"), g);
  EXPECT_EQ(cache.gemm(g).time_s, direct.time_s);
  EXPECT_EQ(cache.gemm(g).time_s, direct.time_s);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), 1u);
  // Different dtype or op is a different key.
  GemmShape g8 = g;
  g8.dtype = Dtype::kFp8;
  EXPECT_LT(cache.gemm(g8).time_s, direct.time_s);
  AttentionShape a;
  a.seq_q = a.seq_kv = 4096;
  a.q_heads = a.kv_heads = 32;
  EXPECT_EQ(cache.attention_fwd(a).time_s,
            attention_fwd_time(testing::accelerator("h100_sxm"), a).time_s);
  EXPECT_EQ(cache.attention_bwd(a).time_s,
            attention_bwd_time(testing::accelerator("h100_sxm"), a).time_s);
  EXPECT_EQ(
      cache.memory_bound(1e8, MemOpClass::kElementwise).time_s,
      memory_bound_time(testing::accelerator("h100_sxm"), 1e8, MemOpClass::kElementwise).time_s);
  const CommGroup grp{8, 8, 1, 1, 8};
  EXPECT_EQ(
      cache.collective(CollectiveKind::kAllReduce, 1e8, grp).time_s,
      collective_time(testing::network("h100_ib400"), CollectiveKind::kAllReduce, 1e8, grp).time_s);
  EXPECT_EQ(cache.size(), 6u);
}

TEST(CostCache, GrowsPastInitialCapacity) {
  CostCache cache(testing::accelerator("mi300x"), testing::network("mi300x_ib400"), 2);
  for (int i = 1; i <= 200; ++i) cache.gemm({i * 64, 4096, 4096, 1, Dtype::kBf16});
  EXPECT_EQ(cache.size(), 200u);
  for (int i = 1; i <= 200; ++i) {
    EXPECT_EQ(
        cache.gemm({i * 64, 4096, 4096, 1, Dtype::kBf16}).time_s,
        gemm_time(testing::accelerator("mi300x"), {i * 64, 4096, 4096, 1, Dtype::kBf16}).time_s);
  }
  EXPECT_EQ(cache.hits(), 200u);
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace projector
