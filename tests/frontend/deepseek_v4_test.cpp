// Primus' DeepSeek-V4 (docs/deepseek-v4.md, PR11): the V4-Flash example loads with its presets,
// every layer gets its compress ratio, hyper-connections and the hash-routed layers, it projects,
// and the layouts and keys that are not modelled are refused by key.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/job/rules.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/config_text.h"

namespace projector {
namespace {

// A 4-layer V4 stack (dense, CSA, HCA, CSA) at h 1024 with V4's knobs.
std::string v4_args(const std::string& extra) {
  return "model_type: deepseek_v4\nnum_layers: 4\nhidden_size: 1024\nnum_attention_heads: 16\n"
         "num_query_groups: 1\nkv_channels: 512\nqk_pos_emb_head_dim: 64\nq_lora_rank: 256\n"
         "o_groups: 4\no_lora_rank: 256\nindex_topk: 64\nindex_head_dim: 128\n"
         "index_n_heads: 16\nattn_sliding_window: 128\nattn_sink: true\nhc_mult: 4\n"
         "hc_sinkhorn_iters: 20\ncompress_ratios: \"[0, 4, 128, 4, 0]\"\n"
         "hybrid_attention_enabled: true\nnum_experts: 16\nmoe_router_topk: 4\n"
         "moe_ffn_hidden_size: 512\nmoe_shared_expert_intermediate_size: 512\n"
         "moe_grouped_gemm: true\nnum_hash_layers: 2\nswiglu: true\nnormalization: RMSNorm\n"
         "vocab_size: 32768\nadd_bias_linear: false\nuntie_embeddings_and_output_weights: true\n"
         "position_embedding_type: rope\nmicro_batch_size: 1\nglobal_batch_size: 8\n"
         "seq_length: 4096\nbf16: true\nhidden_dropout: 0.0\nattention_dropout: 0.0\n" +
         extra;
}

TEST(DeepSeekV4, LayersFromTheKeys) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, v4_args(""));
  ASSERT_EQ(job.model.num_layers(), 4);
  EXPECT_EQ(job.model.hc_mult, 4);
  const int ratios[] = {0, 4, 128, 4};  // the fifth entry (the MTP layer's) is dropped
  for (int i = 0; i < 4; ++i) {
    const LayerSpec& l = job.model.layers[static_cast<std::size_t>(i)];
    EXPECT_EQ(l.attention.kind, AttentionKind::kCompressed);
    EXPECT_EQ(l.attention.compressed.compress_ratio, ratios[i]);
    EXPECT_EQ(l.attention.num_query_groups, 1);
    EXPECT_EQ(l.attention.sliding_window, 128);
    EXPECT_EQ(l.moe.hash_routing, i < 2);
  }
}

// Primus' V4-Flash examples with their presets (deepseek_v4_base.yaml + deepseek_v4_flash.yaml):
// 43 layers, ratios 0, 0, then 4 / 128 alternating, a final 4 (the 44th entry is the MTP's),
// 3 hash-routed layers, EP 8, full recompute. At their default PP 8 the 43 layers do not divide
// and Primus' V4 block takes Megatron's split (deepseek_v4_layer_specs.py:642-643), so the
// refusal names the key to set; with it the job loads and projects.
JobSpec load_flash(const char* file, const std::vector<std::string>& sets, std::string* error) {
  return testing::load_bundled_primus_example(std::string("MI355X/") + file, "mi355x", sets, 0,
                                              error);
}

TEST(DeepSeekV4, PrimusFlashExampleLoadsAndProjects) {
  for (const char* file :
       {"deepseek_v4_flash-BF16-pretrain.yaml", "deepseek_v4_flash-FP8-pretrain.yaml"}) {
    std::string error;
    load_flash(file, {}, &error);
    EXPECT_NE(error.find("decoder_first_pipeline_num_layers: 8 (then 7 x 5 layers)"),
              std::string::npos)
        << error;
    const JobSpec job = load_flash(file, {"decoder_first_pipeline_num_layers=8"}, &error);
    ASSERT_EQ(job.model.num_layers(), 43) << error;
    EXPECT_EQ(job.model.layers[0].attention.compressed.compress_ratio, 0);
    EXPECT_EQ(job.model.layers[2].attention.compressed.compress_ratio, 4);
    EXPECT_EQ(job.model.layers[3].attention.compressed.compress_ratio, 128);
    EXPECT_EQ(job.model.layers[42].attention.compressed.compress_ratio, 4);
    EXPECT_TRUE(job.model.layers[2].moe.hash_routing);
    EXPECT_FALSE(job.model.layers[3].moe.hash_routing);
    EXPECT_EQ(job.model.layers[2].attention.compressed.index_topk, 512);
    EXPECT_EQ(job.model.layers[2].attention.compressed.o_groups, 8);
    EXPECT_EQ(job.model.mtp_num_layers, 1);
    const MemoryReport mem = project_memory(job);
    EXPECT_GT(mem.peak_point_bytes, 0.0);
    EXPECT_TRUE(std::isfinite(mem.peak_point_bytes));
    const PerfReport perf = project_performance(job);
    EXPECT_GT(perf.iteration_s, 0.0);
    EXPECT_TRUE(std::isfinite(perf.iteration_s));
  }
}

// Not modelled, refused by key: TP (Primus would run every head on every rank), CP, a trained
// indexer, a ratio V4 does not build, a sequence that is not whole compressor windows.
TEST(DeepSeekV4, RefusedOptionsNamedByKey) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& extra, const std::string& key) {
    EXPECT_NE(testing::load_error(dir, v4_args(extra)).find(key), std::string::npos) << extra;
  };
  refused("tensor_model_parallel_size: 2\n", "tensor_model_parallel_size");
  refused("context_parallel_size: 2\n", "context_parallel_size");
  refused("v4_indexer_distill_loss_coeff: 0.01\n", "v4_indexer_distill_loss_coeff");
  refused("recompute_granularity: selective\n", "recompute_granularity");
  std::string bad = v4_args("");
  bad.replace(bad.find("[0, 4, 128"), 10, "[0, 8, 128");
  EXPECT_NE(testing::load_error(dir, bad).find("compress_ratios"), std::string::npos);
  std::string seq = v4_args("");
  seq.replace(seq.find("seq_length: 4096"), 16, "seq_length: 4000");
  EXPECT_NE(testing::load_error(dir, seq).find("seq_length"), std::string::npos);

  const JobSpec job = testing::load_config_text(dir, v4_args(""));
  RuleFacts facts = rule_facts(job.model, 4096, 8, 8, 8);
  LayoutChoice choice;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kLegal);
  choice.tp = 2;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kTpUnsupported);
  choice.tp = 1;
  choice.cp = 2;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kCpUnsupported);
  facts.seq = 4000;
  choice.cp = 1;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kSeqCp);
}

// A K3 config without K3's per-layer pattern is refused naming it (kimi_k3_test.cpp has the rest).
TEST(DeepSeekV4, KimiK3NeedsItsPattern) {
  testing::TempDir dir;
  std::string k3 = v4_args("kda_backend: fla\n");
  k3.replace(k3.find("deepseek_v4"), 11, "kimi_k3");
  const std::string hybrid = "hybrid_attention_enabled: true\n";
  k3.erase(k3.find(hybrid), hybrid.size());
  EXPECT_NE(testing::load_error(dir, k3).find("linear_attention_freq"), std::string::npos);
}

}  // namespace
}  // namespace projector
