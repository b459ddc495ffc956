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

// One DeepSeek-V4-Flash CSA layer by hand (PR11 module shapes; h 4096, 64 heads x 512, q rank
// 1024, 8 groups x rank 1024, indexer 64 x 128, hc_mult 4):
//   attention 4096*1024 + 1024 + 1024*32768 + 4096*512 + 512 + 32768*1024 + 8*1024*4096 + 64
//     = 106,956,352; compressor (overlapping, coff 2) 4096*2048 + 8*512 + 512 = 8,393,216;
//   indexer 4096*192 + 128*8192 + 4096*512 + 8*128 + 128 = 3,933,312;
//   hyper-connections 2 x (4*4096*24 + 3 + 24) = 786,486; norms 8,192;
//   MoE router 256*4096 = 1,048,576, experts 256*3*4096*2048 = 6,442,450,944, shared 25,165,824.
TEST(ModelParams, DeepSeekV4CsaLayerByHand) {
  const ModelSpec m = testing::deepseek_v4_flash();
  const LayerSpec& csa = m.layers[2];
  ASSERT_EQ(csa.attention.compressed.compress_ratio, 4);
  const CompressedAttentionParams a = compressed_attention_params(4096, csa.attention);
  EXPECT_EQ(a.attention, 106956352);
  EXPECT_EQ(a.compressor, 8393216);
  EXPECT_EQ(a.indexer, 3933312);
  const LayerParams p = layer_params(m, csa);
  EXPECT_EQ(p.hyper, 786486);
  EXPECT_EQ(p.total(), 6588742902LL);
  // HCA: compressor 4096*1024 + 128*512 + 512 = 4,260,352, no indexer.
  const CompressedAttentionParams hca = compressed_attention_params(4096, m.layers[3].attention);
  EXPECT_EQ(hca.compressor, 4260352);
  EXPECT_EQ(hca.indexer, 0);
}

// DeepSeek's V4 release (model cards): Flash 284B total / 13B activated, Pro 1.6T / 49B; the
// totals exclude the MTP module (as V3's 671B does) and the activated counts the per-token
// weights without the embedding table (a lookup, not a GEMM): Flash 13.13B, Pro 48.53B.
TEST(ModelParams, DeepSeekV4PublishedTotals) {
  ModelSpec flash = testing::deepseek_v4_flash();
  flash.mtp_num_layers = 0;
  const ModelParams f = model_params(flash);
  EXPECT_EQ(f.total, 284189099607LL);  // summed by hand per layer kind, embeddings and heads
  EXPECT_NEAR(f.total / 1e9, 284.0, 0.5);
  EXPECT_NEAR((f.active - f.embedding) / 1e9, 13.0, 0.2);
  ModelSpec pro = testing::deepseek_v4_pro();
  pro.mtp_num_layers = 0;
  const ModelParams p = model_params(pro);
  EXPECT_NEAR(p.total / 1e12, 1.6, 0.05);
  EXPECT_NEAR((p.active - p.embedding) / 1e9, 49.0, 0.5);
  // The MTP depth: eh_proj 2h x h, three norms, one layer shaped like the last (CSA) and its own
  // HyperHead 4*4096*4 + 1 + 4 = 65,541.
  flash.mtp_num_layers = 1;
  EXPECT_EQ(model_params(flash).total - f.total,
            2LL * 4096 * 4096 + 3 * 4096 + 6588742902LL + 65541);
}

// GPT-3 175B (Brown et al.): 174.6B with Megatron's padded vocabulary 51200 and tied embeddings.
TEST(ModelParams, Gpt3) {
  EXPECT_NEAR(model_params(testing::gpt3_175b()).total / 1e9, 175.0, 0.5);
}

}  // namespace
}  // namespace projector
