#include "projector/cost/measured.h"

#include <gtest/gtest.h>

#include <memory>

#include "projector/cost/cost_cache.h"
#include "support/catalogue.h"

namespace projector {
namespace {

TEST(MeasuredScale, ScalesOnlyMeasuredClassesAndNamesTheSource) {
  auto m = std::make_shared<MeasuredScale>();
  m->source = "trace.json.gz";
  m->ratio[static_cast<int>(CostClass::kGemm)] = 1.25;
  m->ratio[static_cast<int>(CostClass::kElementwise)] = 3.0;
  CostCache plain(testing::accelerator("h100_sxm"), testing::network("h100_ib400"));
  CostCache anchored(testing::accelerator("h100_sxm"), testing::network("h100_ib400"), 64, m);

  const GemmShape g{8192, 4096, 4096, 1, Dtype::kBf16};
  const OpCost model = plain.gemm(g);
  const OpCost measured = anchored.gemm(g);
  EXPECT_DOUBLE_EQ(measured.time_s, 1.25 * model.time_s);
  EXPECT_DOUBLE_EQ(measured.efficiency, model.efficiency / 1.25);
  EXPECT_EQ(measured.flops, model.flops);
  EXPECT_EQ(measured.provenance, Provenance::kMeasured);
  EXPECT_EQ(measured.source, "trace.json.gz");
  EXPECT_TRUE(model.source.empty());

  EXPECT_DOUBLE_EQ(anchored.memory_bound(1e8, MemOpClass::kElementwise).time_s,
                   3.0 * plain.memory_bound(1e8, MemOpClass::kElementwise).time_s);
  // Not measured: the kernel model stands.
  const OpCost loss = anchored.memory_bound(1e8, MemOpClass::kLoss);
  EXPECT_EQ(loss.time_s, plain.memory_bound(1e8, MemOpClass::kLoss).time_s);
  EXPECT_NE(loss.provenance, Provenance::kMeasured);
}

TEST(MeasuredScale, AnchorsACollectiveOnlyOnTheTracedGroup) {
  auto m = std::make_shared<MeasuredScale>();
  const CommGroup traced{8, 8, 1, 1, 8};
  m->collectives.push_back({CollectiveKind::kAllReduce, traced, 0.5});
  CostCache plain(testing::accelerator("h100_sxm"), testing::network("h100_ib400"));
  CostCache anchored(testing::accelerator("h100_sxm"), testing::network("h100_ib400"), 64, m);
  EXPECT_DOUBLE_EQ(anchored.collective(CollectiveKind::kAllReduce, 1e8, traced).time_s,
                   0.5 * plain.collective(CollectiveKind::kAllReduce, 1e8, traced).time_s);
  // Two nodes, another kind: the collective model.
  const CommGroup wider{16, 8, 2, 1, 8};
  EXPECT_EQ(anchored.collective(CollectiveKind::kAllReduce, 1e8, wider).time_s,
            plain.collective(CollectiveKind::kAllReduce, 1e8, wider).time_s);
  EXPECT_EQ(anchored.collective(CollectiveKind::kAllGather, 1e8, traced).time_s,
            plain.collective(CollectiveKind::kAllGather, 1e8, traced).time_s);
}

}  // namespace
}  // namespace projector
