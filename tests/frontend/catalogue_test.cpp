// Every bundled model preset loads, and its parameter count matches the published figure.
// Tolerances are stated per model: they cover rounding in the published number (e.g. "141B") and
// small tensors the model does not carry (attention sinks, Grok's post-norms, router biases).
#include <gtest/gtest.h>

#include "projector/frontend/loader.h"
#include "projector/model/accounting.h"
#include "projector/model/describe.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

ModelParams params(const std::string& name) {
  return model_params(load_model_preset(name, kData));
}

struct Published {
  const char* name;
  double total_b;
  double total_tol_b;
  double active_b;  // 0: dense (active == total)
  double active_tol_b;
};

// Sources: each preset's `source:` line (model cards / papers / HF config.json). Exact HF
// checkpoint sizes where they exist: Llama 2 7B 6,738,415,616; 13B 13,015,864,320; 70B
// 68,976,648,192; Llama 3.2 1B 1,235,814,400; 3B 3,212,749,824; Qwen2.5 7B 7,615,616,512; 72B
// 72,706,203,648; Qwen3 8B 8,190,735,360; 32B 32,762,123,264.
const Published kPublished[] = {
    {"llama2_7B", 6.738, 0.002, 0, 0},
    {"llama2_13B", 13.016, 0.002, 0, 0},
    {"llama2_70B", 68.977, 0.005, 0, 0},
    {"llama3_8B", 8.03, 0.005, 0, 0},
    {"llama3_70B", 70.55, 0.05, 0, 0},
    {"llama3.1_8B", 8.03, 0.005, 0, 0},
    {"llama3.1_70B", 70.55, 0.05, 0, 0},
    {"llama3.1_405B", 405.85, 0.1, 0, 0},
    {"llama3.2_1B", 1.2358, 0.0005, 0, 0},
    {"llama3.2_3B", 3.2127, 0.0005, 0, 0},
    {"qwen2.5_7B", 7.6156, 0.001, 0, 0},
    {"qwen2.5_72B", 72.706, 0.002, 0, 0},
    {"qwen3_8B", 8.1907, 0.001, 0, 0},
    {"qwen3_32B", 32.762, 0.002, 0, 0},
    {"mixtral_8x7B_v0.1", 46.7, 0.05, 12.9, 0.05},
    {"mixtral_8x22B_v0.1", 141.0, 0.5, 39.0, 0.3},
    {"qwen3_30B_A3B", 30.5, 0.1, 3.3, 0.1},
    {"qwen3_235B_A22B", 235.0, 0.5, 22.0, 0.3},
    {"deepseek_v2_lite", 15.7, 0.1, 0, 0},  // active: see DeepSeekV2Lite below
    {"deepseek_v2", 236.0, 1.0, 21.0, 0.5},
    {"grok1", 314.0, 2.5, 0, 0},  // active: see Grok1 below
    {"gpt3_175B", 175.0, 0.5, 0, 0},
};

TEST(Catalogue, ListsEveryBundledPreset) {
  const std::vector<std::string> names = list_model_presets(kData);
  EXPECT_EQ(names.size(), 25u);
  for (const Published& p : kPublished) {
    EXPECT_NE(std::find(names.begin(), names.end(), p.name), names.end()) << p.name;
  }
  for (const char* n : {"deepseek_v3", "gpt_oss_20B", "gpt_oss_120B"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(Catalogue, PublishedParameterCounts) {
  for (const Published& p : kPublished) {
    const ModelParams mp = params(p.name);
    EXPECT_NEAR(mp.total / 1e9, p.total_b, p.total_tol_b) << p.name;
    if (p.active_b > 0) {
      EXPECT_NEAR(mp.active / 1e9, p.active_b, p.active_tol_b) << p.name;
    } else if (std::string(p.name) != "deepseek_v2_lite" && std::string(p.name) != "grok1") {
      EXPECT_EQ(mp.active, mp.total) << p.name;
    }
  }
}

// DeepSeek-V3 report: 671B total and 37B activated for the main model; the MTP module adds
// 14B (the released checkpoint has 685B).
TEST(Catalogue, DeepSeekV3WithMtp) {
  const ModelSpec m = load_model_preset("deepseek_v3", kData);
  EXPECT_EQ(m.mtp_num_layers, 1);
  const ModelParams p = model_params(m);
  EXPECT_NEAR((p.total - p.mtp) / 1e9, 671.0, 1.0);
  // The 685B checkpoint stores the MTP module's own copies of the embedding and output head
  // (2 x 129280 x 7168 = 1.85B) that Megatron shares with the main model: 14B - 1.85B = 12.15B.
  EXPECT_NEAR(p.mtp / 1e9, 14.0 - 2 * 129280.0 * 7168 / 1e9, 0.6);
  ModelSpec main = m;
  main.mtp_num_layers = 0;
  EXPECT_NEAR(model_params(main).active / 1e9, 37.0, 0.6);
}

// DeepSeek-V2 paper: V2-Lite activates 2.4B of 15.7B per token, counting the output head but
// not the embedding lookup (2.66B with it; the 0.21B table is a gather, not compute).
TEST(Catalogue, DeepSeekV2Lite) {
  const ModelParams p = params("deepseek_v2_lite");
  EXPECT_NEAR((p.active - p.embedding) / 1e9, 2.4, 0.1);
}

// xAI's Grok-1 release: 314B parameters, "25% of the weights active on a given token" (top-2 of
// 8 experts plus the shared attention and embeddings).
TEST(Catalogue, Grok1Active) {
  const ModelParams p = params("grok1");
  EXPECT_NEAR(static_cast<double>(p.active) / p.total, 0.25, 0.02);
}

// gpt-oss model card: 20.9B / 116.8B total; 3.61B / 5.13B active, where "active" counts the
// unembedding but not the embedding table (a lookup). Our `active` counts both, so subtract one.
TEST(Catalogue, GptOss) {
  const ModelParams small = params("gpt_oss_20B");
  EXPECT_NEAR(small.total / 1e9, 20.91, 0.05);
  EXPECT_NEAR((small.active - small.embedding) / 1e9, 3.61, 0.03);
  const ModelParams big = params("gpt_oss_120B");
  EXPECT_NEAR(big.total / 1e9, 116.83, 0.1);
  EXPECT_NEAR((big.active - big.embedding) / 1e9, 5.13, 0.03);
}

TEST(Catalogue, TiedEmbeddingsWhereTheCheckpointTiesThem) {
  EXPECT_TRUE(load_model_preset("llama3.2_1B", kData).tied_embeddings);
  EXPECT_TRUE(load_model_preset("llama3.2_3B", kData).tied_embeddings);
  EXPECT_TRUE(load_model_preset("gpt3_175B", kData).tied_embeddings);
  EXPECT_FALSE(load_model_preset("llama3.1_8B", kData).tied_embeddings);
  EXPECT_FALSE(load_model_preset("qwen3_8B", kData).tied_embeddings);
}

// Layer runs: DeepSeek-V3 is 3 dense MLA layers then 58 MoE layers.
TEST(Catalogue, LayerRunsCompressIdenticalLayers) {
  const std::vector<LayerRun> runs = layer_runs(load_model_preset("deepseek_v3", kData));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].count, 3);
  EXPECT_EQ(runs[1].first, 3);
  EXPECT_EQ(runs[1].count, 58);
  EXPECT_NE(runs[1].description.find("256 experts top-8"), std::string::npos);
  // gpt-oss alternates sliding-window and full attention: 24 runs of one layer.
  EXPECT_EQ(layer_runs(load_model_preset("gpt_oss_20B", kData)).size(), 24u);
}

TEST(Catalogue, EverySourceIsCited) {
  for (const std::string& name : list_model_presets(kData)) {
    EXPECT_FALSE(model_preset_source(name, kData).empty()) << name;
  }
}

}  // namespace
}  // namespace projector
