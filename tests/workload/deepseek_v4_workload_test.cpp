// DeepSeek-V4 in the workload (docs/deepseek-v4.md): hash-routed layers dispatch the balanced
// share whatever the measured skew, the frozen indexer runs forward only, hyper-connections
// replace the residual add and widen the pipeline send.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/workload/workload.h"
#include "support/job_builders.h"
#include "support/layer_ops.h"

namespace projector {
namespace {

using testing::find_op;

JobSpec v4_job(double cv) {
  const ModelSpec m = testing::deepseek_v4({4, 4096, 64, 1024, 8, 256, 2048, 512, {0, 4, 128, 4}});
  JobSpec job = testing::make_job(m, {.ep = 8, .gbs = 8, .seq = 4096});
  job.runtime.moe_expert_load_cv = cv;
  job.runtime.moe_dispatcher = MoeDispatcher::kAllToAll;
  return job;
}

// Balanced all-to-all of the routed copies: 4096 tokens x top-6 x 4096 x 2 bytes = 201,326,592
// per rank. A measured CV of 0.5 makes a learned layer's busiest rank receive
// 1 + 0.5 / sqrt(256 / 8) x z(8) times that; a hash-routed layer stays balanced.
TEST(DeepSeekV4Workload, HashRoutedDispatchIsBalanced) {
  const JobSpec job = v4_job(0.5);
  const LayerWork hash_layer = build_layer_work(job, 1);
  const LayerWork learned_layer = build_layer_work(job, 3);
  const Op* hash = find_op(hash_layer, "moe.dispatch_a2a");
  const Op* learned = find_op(learned_layer, "moe.dispatch_a2a");
  ASSERT_NE(hash, nullptr);
  ASSERT_NE(learned, nullptr);
  EXPECT_DOUBLE_EQ(hash->bytes, 4096.0 * 6 * 4096 * 2);
  EXPECT_DOUBLE_EQ(moe_rank_load_factor(job, job.model.layers[1].moe), 1.0);
  EXPECT_GT(learned->bytes, hash->bytes * 1.1);
  EXPECT_DOUBLE_EQ(learned->bytes / hash->bytes,
                   moe_rank_load_factor(job, job.model.layers[3].moe));
}

// The indexer's ops have no backward; the attention's own GEMMs do. The pipeline sends the four
// streams: 4096 x 4096 x 2 x 4 bytes.
TEST(DeepSeekV4Workload, IndexerForwardOnlyAndStreamsSent) {
  const JobSpec job = v4_job(0.0);
  const LayerWork csa = build_layer_work(job, 1);
  EXPECT_NE(find_op(csa, "attn.indexer.scores"), nullptr);
  EXPECT_NE(find_op(csa, "attn.sparse_gather"), nullptr);
  EXPECT_NE(find_op(csa, "hc.attn.expand"), nullptr);
  EXPECT_EQ(find_op(csa, "attn.residual"), nullptr);
  bool indexer_bwd = false, q_up_bwd = false;
  for (const Op& op : csa.ops) {
    if (op.phase == WorkPhase::kF) continue;
    indexer_bwd = indexer_bwd || op.name.rfind("attn.indexer", 0) == 0;
    q_up_bwd = q_up_bwd || op.name.rfind("attn.q_up", 0) == 0;
  }
  EXPECT_FALSE(indexer_bwd);
  EXPECT_TRUE(q_up_bwd);
  const Workload wl = build_workload(job);
  EXPECT_DOUBLE_EQ(wl.ranks[0].p2p_bytes, 4096.0 * 4096 * 2 * 4);
}

}  // namespace
}  // namespace projector
