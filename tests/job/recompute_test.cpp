// Recompute choices (job/recompute.h): the one vocabulary the sweep's recompute axis and the memory
// remedies write into a job, each value checked by hand against what the choice means.
#include "projector/job/recompute.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "support/job_builders.h"
#include "support/model_builders.h"

namespace projector {
namespace {

// Two named policies, as a framework's adapter would own them: the layer input only (full
// rematerialisation) and the QKV projections kept.
const std::array<NamedTensorPolicy, 2>& table() {
  static const std::array<NamedTensorPolicy, 2> t = [] {
    TensorPolicy qkv;
    qkv.set(LayerTensor::kQuery, TensorPlacement::kDevice);
    qkv.set(LayerTensor::kKey, TensorPlacement::kDevice);
    qkv.set(LayerTensor::kValue, TensorPlacement::kDevice);
    return std::array<NamedTensorPolicy, 2>{NamedTensorPolicy{"full", TensorPolicy{}, true},
                                            NamedTensorPolicy{"save_qkv", qkv, true}};
  }();
  return t;
}

TEST(RecomputeChoice, TextRoundTrips) {
  for (const char* text :
       {"none", "selective", "full", "block3", "op", "every2", "remat:base", "remat:save_qkv"}) {
    const std::optional<RecomputeChoice> c = parse_recompute_choice(text, table());
    ASSERT_TRUE(c.has_value()) << text;
    EXPECT_EQ(to_string(*c), text);
  }
  EXPECT_EQ(parse_recompute_choice("remat:save_qkv", table())->tensors, &table()[1]);
  // Names the framework does not have, and counts that are not positive, are refused.
  EXPECT_FALSE(parse_recompute_choice("remat:save_qkv", {}).has_value());
  EXPECT_FALSE(parse_recompute_choice("remat:minimal", table()).has_value());
  EXPECT_FALSE(parse_recompute_choice("block0", table()).has_value());
  EXPECT_FALSE(parse_recompute_choice("every-1", table()).has_value());
  EXPECT_FALSE(parse_recompute_choice("every2x", table()).has_value());
  EXPECT_TRUE(checkpoints_whole_layers({RecomputeKind::kEveryN, 2}));
  EXPECT_FALSE(checkpoints_whole_layers({RecomputeKind::kSelective}));
}

TEST(RecomputeChoice, WritesTheFrameworksPolicy) {
  JobSpec job = testing::make_job(testing::llama31_8b(), {.gbs = 64});  // 32 layers
  job.runtime.selective_default = RecomputeModules{RecomputeModule::kMlp};
  job.runtime.tensor_policies = table();

  apply_recompute(job, {RecomputeKind::kEveryN, 8});  // blocks 8, 16, 24, 32 (0-based 7, ...)
  EXPECT_EQ(job.runtime.recompute.granularity, RecomputeGranularity::kNone);
  EXPECT_EQ(job.runtime.recompute.layer_ids, (std::vector<int>{7, 15, 23, 31}));

  apply_recompute(job, {RecomputeKind::kSelective});  // the framework's set, not core_attn
  EXPECT_EQ(job.runtime.recompute.granularity, RecomputeGranularity::kSelective);
  EXPECT_EQ(job.runtime.recompute.modules, RecomputeModules{RecomputeModule::kMlp});
  EXPECT_TRUE(job.runtime.recompute.layer_ids.empty());

  apply_recompute(job, {RecomputeKind::kFullBlock, 4});
  EXPECT_EQ(job.runtime.recompute.granularity, RecomputeGranularity::kFull);
  EXPECT_EQ(job.runtime.recompute.method, RecomputeMethod::kBlock);
  EXPECT_EQ(job.runtime.recompute.num_layers, 4);
  EXPECT_TRUE(job.runtime.recompute.modules.empty());

  apply_recompute(job, {RecomputeKind::kTensorPolicy, 0, &table()[1]});
  EXPECT_EQ(job.runtime.recompute.granularity, RecomputeGranularity::kTensors);
  EXPECT_TRUE(job.runtime.recompute.tensors.on_device(LayerTensor::kKey));
  EXPECT_FALSE(job.runtime.recompute.tensors.kept(LayerTensor::kMlpOut));
  // remat:base keeps the policy the job has.
  apply_recompute(job, {RecomputeKind::kTensorPolicy});
  EXPECT_EQ(job.runtime.recompute.tensors, table()[1].policy);
}

}  // namespace
}  // namespace projector
