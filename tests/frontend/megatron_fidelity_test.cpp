// Issue 12: the Megatron adapter projects the job Megatron-LM / Primus would launch. One test (or
// group) per item; each states the Megatron-LM source that decides the expected value.
#include <gtest/gtest.h>

#include <algorithm>

#include "projector/frontend/loader.h"
#include "projector/memory/memory.h"
#include "support/temp_dir.h"

namespace projector {
namespace {

const std::string kRepoData = PROJECTOR_DEFAULT_DATA_DIR;
const std::string kData = PROJECTOR_TEST_DATA_DIR;

// A flat Megatron argument file: a small Llama-shaped model plus `extra` lines.
std::string flat_args(const std::string& extra) {
  return "num_layers: 4\nhidden_size: 4096\nnum_attention_heads: 32\ngroup_query_attention: true\n"
         "num_query_groups: 8\nffn_hidden_size: 14336\nswiglu: true\nnormalization: RMSNorm\n"
         "position_embedding_type: rope\nvocab_size: 128256\nadd_bias_linear: false\n"
         "micro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 8192\nbf16: true\n"
         "attention_dropout: 0.0\nhidden_dropout: 0.0\n" +
         extra;
}

JobSpec load_text(const testing::TempDir& dir, const std::string& text,
                  std::vector<std::string> set = {}) {
  LoadRequest r;
  r.config_path = dir.write("exp.yaml", text);
  r.data_dir = kRepoData;
  r.set_overrides = std::move(set);
  return load_job(r);
}

const AppliedDefault* find_default(const JobSpec& job, const std::string& key) {
  for (const AppliedDefault& d : job.defaults) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

// ------------------------------------------------------------------ 1: attention kernel

// Megatron-Core's defaults (transformer_impl transformer_engine, attention_backend auto) run
// Transformer Engine's fused attention whatever use_flash_attn says; local / unfused do not.
TEST(MegatronFidelity, AttentionBackendDecidesTheKernel) {
  testing::TempDir dir;
  const JobSpec def = load_text(dir, flat_args(""));
  EXPECT_TRUE(def.runtime.flash_attention);
  EXPECT_EQ(def.runtime.attention_kernel, AttentionKernel::kFused);
  ASSERT_NE(find_default(def, "attention_backend"), nullptr);
  // use_flash_attn is a dead flag on the Megatron-Core path.
  EXPECT_TRUE(load_text(dir, flat_args("use_flash_attn: false\n")).runtime.flash_attention);
  EXPECT_FALSE(load_text(dir, flat_args("attention_backend: local\n")).runtime.flash_attention);
  EXPECT_FALSE(load_text(dir, flat_args("attention_backend: unfused\n")).runtime.flash_attention);
  EXPECT_FALSE(load_text(dir, flat_args("transformer_impl: local\n")).runtime.flash_attention);
  const JobSpec fa = load_text(dir, flat_args("attention_backend: flash\n"));
  EXPECT_TRUE(fa.runtime.flash_attention);
  EXPECT_EQ(fa.runtime.attention_kernel, AttentionKernel::kFa2);
  // Legacy (non-Core) models still read --use-flash-attn.
  EXPECT_FALSE(load_text(dir, flat_args("use_legacy_models: true\nuse_flash_attn: false\n"))
                   .runtime.flash_attention);
}

// The Llama-8B-shaped job at seq 8192: with the fused kernel no s^2 score matrix is kept,
// so the saved activations of a layer stay linear in the sequence (unfused keeps 2 bytes x
// heads x s^2 per layer: 32 x 8192^2 x 2 B = 4 GiB per layer and microbatch).
TEST(MegatronFidelity, FusedAttentionKeepsNoScoreMatrix) {
  testing::TempDir dir;
  const JobSpec fused = load_text(dir, flat_args(""));
  const JobSpec unfused = load_text(dir, flat_args("attention_backend: local\n"));
  const double diff = layer_activation(unfused, unfused.model.layers[0]).total_bytes -
                      layer_activation(fused, fused.model.layers[0]).total_bytes;
  const double s2 = 32.0 * 8192.0 * 8192.0 * 2.0;  // softmax output, bf16 (no dropout)
  const double lse = 32.0 * 8192.0 * 4.0;          // fused: fp32 logsumexp
  EXPECT_NEAR(diff, s2 - lse, 1.0);
}

// ------------------------------------------------------------------ 10: preset precedence

// With a Primus checkout, its model preset is the architecture Primus launches, even when the
// bundled catalogue has a preset of the same name (Primus' qwen3_8B inherits qk_layernorm: false
// from qwen2.5_base.yaml; the bundled one follows the HF checkpoint's q/k norm).
TEST(MegatronFidelity, PrimusCheckoutPresetWinsOverBundled) {
  testing::TempDir dir;
  const std::string exp =
      dir.write("exp.yaml",
                "modules:\n  pre_trainer:\n    framework: megatron\n    config: pre_trainer.yaml\n"
                "    model: qwen3_8B.yaml\n    overrides:\n      seq_length: 4096\n");
  LoadRequest r;
  r.config_path = exp;
  r.data_dir = kRepoData;
  const JobSpec bundled = load_job(r);
  EXPECT_TRUE(bundled.model.layers[0].attention.qk_layernorm);
  r.primus_path = kData + "/primus";
  const JobSpec primus = load_job(r);
  EXPECT_FALSE(primus.model.layers[0].attention.qk_layernorm);
  const AppliedDefault* d = find_default(primus, "modules.pre_trainer.model");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find(kData + "/primus/primus/configs/models/megatron/qwen3_8B.yaml"),
            std::string::npos)
      << d->reason;
}

}  // namespace
}  // namespace projector
