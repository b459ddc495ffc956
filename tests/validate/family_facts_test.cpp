// Model-family reference facts (data/models/_families.yaml) fill what a published run leaves
// unstated, each recorded with its source; what no row gives is refused, not guessed (issue 29 §2:
// no family knowledge in the mapper's code).
#include "validate/family_facts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "projector/util/error.h"
#include "projector/validate/validate.h"

namespace projector {
namespace {

const std::string kData = PROJECTOR_DEFAULT_DATA_DIR;

// A 12-layer model of `family` on 8 H100s, stating only what `extra` adds to its shape.
MappedRun map_family(const std::string& family, const std::string& extra,
                     const std::string& framework = "Megatron-LM") {
  const std::string text =
      "- id: t\n  framework: " + framework +
      "\n"
      "  hardware: {accelerator: NVIDIA H100 SXM 80GB, count: 8, per_node: 8}\n"
      "  model:\n    family: " +
      family + "\n    num_layers: 12\n    hidden_size: 768\n    num_attention_heads: 12\n" + extra +
      "  training: {tp: 1, pp: 1, micro_batch_size: 4, global_batch_size: 32, seq_len: 1024}\n";
  return map_run(parse_runs(text, "t.yaml").at(0), kData);
}

const std::string* assumption(const MappedRun& m, const std::string& prefix) {
  auto it = std::find_if(m.assumptions.begin(), m.assumptions.end(),
                         [&](const std::string& a) { return a.starts_with(prefix); });
  return it == m.assumptions.end() ? nullptr : &*it;
}

// GPT-2 small as the GPT-2 paper describes it: the 50,257-token BPE vocabulary, LayerNorm, learned
// positions, the output layer tied to the embedding.
TEST(FamilyFacts, GptTakesTheGpt2Architecture) {
  const MappedRun m = map_family("gpt", "");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.model.vocab_size, 50257);
  EXPECT_EQ(m.job.model.norm, NormKind::kLayerNorm);
  EXPECT_EQ(m.job.model.position_embedding, PositionEmbeddingKind::kLearnedAbsolute);
  EXPECT_TRUE(m.job.model.tied_embeddings);
  for (const char* key :
       {"model.vocab_size = 50257", "model.norm = layernorm",
        "model.position_embedding = learned_absolute", "model.tied_embeddings = true"}) {
    const std::string* a = assumption(m, key);
    ASSERT_NE(a, nullptr) << key;
    EXPECT_NE(a->find("Radford"), std::string::npos) << *a;  // the row's source comes along
  }
  // The vocabulary row names the tokenizer table's source too.
  EXPECT_NE(assumption(m, "model.vocab_size")->find("GPT2BPETokenizer"), std::string::npos);
}

// gpt_oss contains "gpt": the more specific row, listed first, answers the facts it states
// (untied, no dropout: the gpt-oss config.json), not the GPT-2 row; a stated value beats both.
TEST(FamilyFacts, SpecificRowFirst) {
  const MappedRun m = map_family(
      "gpt_oss", "    vocab_size: 201088\n    norm: rmsnorm\n    position_embedding: rope\n");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_FALSE(m.job.model.tied_embeddings);
  EXPECT_DOUBLE_EQ(m.job.model.attention_dropout, 0.0);
  EXPECT_DOUBLE_EQ(m.job.model.hidden_dropout, 0.0);
  EXPECT_EQ(m.job.model.vocab_size, 201088);  // stated wins
  EXPECT_EQ(assumption(m, "model.vocab_size"), nullptr);
}

// A family with no row takes the framework profile's defaults, recorded with the profile's
// source (Megatron-LM: LayerNorm, learned positions, tied output layer, dropout 0.1: MG1's
// argument defaults); where the profile has none either (DeepSpeed on its own), the run is refused
// by the name of the setting, never guessed.
TEST(FamilyFacts, UnknownFamilyTakesTheProfileOrIsRefused) {
  const MappedRun m = map_family("minimax_m2", "    vocab_size: 200064\n");
  ASSERT_TRUE(m.mapped) << m.reason;
  EXPECT_EQ(m.job.model.norm, NormKind::kLayerNorm);
  EXPECT_EQ(m.job.model.position_embedding, PositionEmbeddingKind::kLearnedAbsolute);
  EXPECT_TRUE(m.job.model.tied_embeddings);
  EXPECT_DOUBLE_EQ(m.job.model.attention_dropout, 0.1);
  const std::string* tied = assumption(m, "model.tied_embeddings = true");
  ASSERT_NE(tied, nullptr);
  EXPECT_NE(tied->find("megatron-lm: MG1"), std::string::npos) << *tied;
  // No vocabulary default anywhere: the tokenizer is the run's.
  const MappedRun v = map_family("minimax_m2", "");
  EXPECT_NE(v.reason.find("model.vocab_size not stated"), std::string::npos) << v.reason;
  const MappedRun d = map_family("minimax_m2", "    vocab_size: 200064\n", "DeepSpeed");
  EXPECT_FALSE(d.mapped);
  EXPECT_NE(d.reason.find("model.norm not stated"), std::string::npos) << d.reason;
  // The family's fact beats the profile's default: Llama on Megatron is RMSNorm, RoPE, untied.
  const MappedRun l = map_family("llama3", "    vocab_size: 128256\n");
  ASSERT_TRUE(l.mapped) << l.reason;
  EXPECT_EQ(l.job.model.norm, NormKind::kRmsNorm);
  EXPECT_EQ(l.job.model.position_embedding, PositionEmbeddingKind::kRope);
  EXPECT_FALSE(l.job.model.tied_embeddings);
  EXPECT_DOUBLE_EQ(l.job.model.attention_dropout, 0.0);
}

// A broken table is an input error naming the file, the line and the key.
TEST(FamilyFacts, MalformedTableNamesFileLineAndKey) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "projector_family_facts_test";
  std::filesystem::create_directories(dir / "models");
  {
    std::ofstream f(dir / "models" / "_families.yaml");
    f << "families:\n  - match: [gpt]\n    norm: batchnorm\n    source: test\n";
  }
  validate_detail::FamilyFacts facts(dir.string(), "GPT");
  try {
    (void)facts.norm();
    FAIL() << "a norm the model does not know was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("_families.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find(":3"), std::string::npos) << what;
    EXPECT_NE(what.find("norm"), std::string::npos) << what;
  }
  validate_detail::FamilyFacts other(dir.string(), "llama");
  EXPECT_FALSE(other.norm().has_value());  // no row matches
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace projector
