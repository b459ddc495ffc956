// DeepSeek-V4's hyper-connections in the memory model (docs/deepseek-v4.md): what each mixer keeps
// for its backward, the K-stream layer input that full recompute keeps, and hash-routed layers
// that have no skewed upper bound. Values by hand in the comments.
#include <gtest/gtest.h>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "support/job_builders.h"

namespace projector {
namespace {

// A 4-layer Flash-shaped stack: dense, CSA, HCA, CSA; the first 3 hash-routed.
JobSpec v4_job() {
  const ModelSpec m = testing::deepseek_v4({4, 4096, 64, 1024, 8, 256, 2048, 512, {0, 4, 128, 4}});
  JobSpec job = testing::make_job(m, {.ep = 8, .gbs = 8, .seq = 4096});
  return job;
}

// Per sublayer and token (bf16, K = 4, h = 4096): the K-stream input 4*4096*2 = 32,768 bytes, the
// fp32 normalised fn input 4*4096*4 = 65,536, the sublayer output 4096*2 = 8,192 and the fp32
// logits and Sinkhorn matrix (24 + 16)*4 = 160: 106,656 bytes; two sublayers over 4096 tokens
// 873,725,952 bytes. Full recompute keeps the K-stream input: 4096*4096*2*4 = 134,217,728.
TEST(DeepSeekV4Memory, HyperConnectionBytesByHand) {
  const JobSpec job = v4_job();
  const LayerActivation la = layer_activation(job, job.model.layers[1]);
  EXPECT_DOUBLE_EQ(la.hyper_bytes, 873725952.0);
  EXPECT_DOUBLE_EQ(la.input_bytes, 134217728.0);
  ModelSpec plain = job.model;
  plain.hc_mult = 1;
  JobSpec one = job;
  one.model = plain;
  const LayerActivation lp = layer_activation(one, one.model.layers[1]);
  EXPECT_DOUBLE_EQ(lp.hyper_bytes, 0.0);
  EXPECT_DOUBLE_EQ(la.total_bytes - lp.total_bytes, 873725952.0);
}

// The routed-expert activations of a hash-routed layer keep the balanced share in the upper
// bound too (a uniform token-id table), while a learned layer's upper bound doubles it.
TEST(DeepSeekV4Memory, HashRoutedLayersHaveNoSkewedBound) {
  const JobSpec job = v4_job();
  const LayerActivation hash_point = layer_activation(job, job.model.layers[2], false);
  const LayerActivation hash_upper = layer_activation(job, job.model.layers[2], true);
  EXPECT_DOUBLE_EQ(hash_upper.moe_bytes, hash_point.moe_bytes);
  const LayerActivation learned_point = layer_activation(job, job.model.layers[3], false);
  const LayerActivation learned_upper = layer_activation(job, job.model.layers[3], true);
  EXPECT_GT(learned_upper.moe_bytes, learned_point.moe_bytes);
}

}  // namespace
}  // namespace projector
