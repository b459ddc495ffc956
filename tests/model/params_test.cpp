#include <gtest/gtest.h>

#include "projector/model/accounting.h"
#include "support/model_builders.h"

namespace projector {
namespace {

// Published totals: Llama 3.1 model card (8.03B / 70.6B / 405.9B parameters).
TEST(ModelParams, Llama31Dense) {
  EXPECT_NEAR(model_params(testing::llama31_8b()).total / 1e9, 8.03, 0.005);
  EXPECT_NEAR(model_params(testing::llama31_70b()).total / 1e9, 70.55, 0.05);
  EXPECT_NEAR(model_params(testing::llama31_405b()).total / 1e9, 405.85, 0.1);
}

// Llama 3.1 8B by hand: per layer 4096*(32+2*8)*128 + 4096*4096 (attention) + 3*4096*14336 (MLP)
// + 2*4096 (norms) = 218,112,000; embedding and output 128256*4096 each; final norm 4096.
TEST(ModelParams, Llama31_8bExact) {
  const ModelParams p = model_params(testing::llama31_8b());
  EXPECT_EQ(p.decoder, 32LL * 218112000LL);
  EXPECT_EQ(p.embedding, 128256LL * 4096);
  EXPECT_EQ(p.output_layer, 128256LL * 4096);
  EXPECT_EQ(p.total, 32LL * 218112000LL + 2LL * 128256 * 4096 + 4096);
}

// Mistral AI: Mixtral 8x7B has 46.7B total and 12.9B active parameters.
TEST(ModelParams, Mixtral8x7b) {
  const ModelParams p = model_params(testing::mixtral_8x7b());
  EXPECT_NEAR(p.total / 1e9, 46.7, 0.05);
  EXPECT_NEAR(p.active / 1e9, 12.9, 0.05);
}

// DeepSeek-V3 report: 671B total, 37B activated (main model); the MTP module adds 14B.
TEST(ModelParams, DeepSeekV3) {
  ModelSpec m = testing::deepseek_v3();
  m.mtp_num_layers = 0;
  const ModelParams p = model_params(m);
  EXPECT_NEAR(p.total / 1e9, 671.0, 1.0);
  EXPECT_NEAR(p.active / 1e9, 37.5, 0.6);
  m.mtp_num_layers = 1;
  EXPECT_NEAR((model_params(m).total - p.total) / 1e9, 11.7, 2.5);
}

// GPT-3 175B (Brown et al.): 174.6B with Megatron's padded vocabulary 51200 and tied embeddings.
TEST(ModelParams, Gpt3) {
  EXPECT_NEAR(model_params(testing::gpt3_175b()).total / 1e9, 175.0, 0.5);
}

}  // namespace
}  // namespace projector
