// LFM2's gated short-convolution layers (docs/linear-attention.md, Primus PR10): Primus'
// lfm_layer_types in a GPT stack, one layer's parameters and FLOPs by hand, the workload, memory
// and performance, and the layouts that are not modelled, refused by key.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

// A small LFM2-like stack: h 1024, layers conv, conv, attention, conv, SwiGLU MLPs.
std::string lfm_args(const std::string& extra) {
  return "num_layers: 4\nhidden_size: 1024\nnum_attention_heads: 8\nffn_hidden_size: 2048\n"
         "group_query_attention: true\nnum_query_groups: 2\nswiglu: true\n"
         "normalization: RMSNorm\nvocab_size: 50304\nadd_bias_linear: false\n"
         "lfm_layer_types: [conv, conv, full_attention, conv]\nconv_L_cache: 3\n"
         "micro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 2048\nbf16: true\n"
         "hidden_dropout: 0.0\nattention_dropout: 0.0\n" +
         extra;
}

std::string kinds(const JobSpec& job) {
  std::string out;
  for (const LayerSpec& l : job.model.layers) {
    out += l.has_linear_attention() && l.linear.short_conv() ? 'C' : l.has_attention() ? 'T' : '?';
  }
  return out;
}

// One short-conv layer by hand (PR10 attention.py:113-158): in_proj 1024 x 3072, the depthwise
// conv 1024 x 3, out_proj 1024 x 1024, no norm; conv_bias adds 3072 + 1024 + 1024. Its FFN keeps
// its norm (fused into fc1) and SwiGLU 3 x 1024 x 2048. Forward FLOPs per token: the two
// projections, 2 x 1024 x 3072 + 2 x 1024 x 1024 = 8 h^2 (the conv and gates are elementwise).
TEST(ShortConv, LayerParamsAndFlopsByHand) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, lfm_args(""));
  EXPECT_EQ(kinds(job), "CCTC");
  const LayerSpec& l = job.model.layers[0];
  EXPECT_EQ(l.linear.conv_kernel, 3);
  const std::int64_t mixer = 1024 * 3072 + 1024 * 3 + 1024 * 1024;
  EXPECT_EQ(linear_attention_params(1024, l.linear), mixer);
  const LayerParams p = layer_params(job.model, l);
  EXPECT_EQ(p.attention, mixer);
  EXPECT_EQ(p.attention_norms, 0);
  EXPECT_EQ(p.total(), mixer + 3 * 1024 * 2048 + 1024);
  const JobSpec biased = testing::load_config_text(dir, lfm_args("conv_bias: true\n"));
  EXPECT_EQ(linear_attention_params(1024, biased.model.layers[0].linear),
            mixer + 3072 + 1024 + 1024);

  const double h = 1024.0;
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(job.model, l, 2048).linear_attn_flops,
                   8.0 * h * h);
  // The workload's short-conv GEMMs carry the same FLOPs over 2048 tokens; backward twice.
  const LayerWork lw = build_layer_work(job, 0);
  EXPECT_EQ(lw.label, "short_conv_dense_layer");
  double fwd = 0.0, bwd = 0.0;
  for (const Op& op : lw.ops) {
    if (op.kind != OpKind::kGemm || op.name.rfind("short_conv.", 0) != 0) continue;
    if (op.phase == WorkPhase::kF && !op.recompute) fwd += op.flops;
    if (op.phase != WorkPhase::kF) bwd += op.flops;
  }
  EXPECT_DOUBLE_EQ(fwd, 8.0 * h * h * 2048);
  EXPECT_DOUBLE_EQ(bwd, 2.0 * fwd);
}

// Primus' LFM2-8B-A1B example (PR10 lfm2_8B_A1B.yaml): 24 layers, attention at 2, 6, 10, 14, 18
// and 21, dense FFNs in layers 0-1 and MoE (32 experts, top 4) after; the conv layers are
// 2048 wide with kernel 3.
TEST(ShortConv, PrimusLfm2ExampleLoadsAndProjects) {
  const JobSpec job = testing::load_bundled_primus_example("MI355X/lfm2_8B_A1B-BF16-pretrain.yaml");
  EXPECT_EQ(kinds(job), "CCTCCCTCCCTCCCTCCCTCCTCC");
  for (int i = 0; i < job.model.num_layers(); ++i) EXPECT_EQ(job.model.layers[i].is_moe, i >= 2);
  EXPECT_EQ(job.model.layers[3].moe.num_experts, 32);
  EXPECT_EQ(job.model.layers[0].linear.short_conv_width, 2048);
  EXPECT_EQ(build_layer_work(job, 3).label, "short_conv_moe_layer");
  const MemoryReport mem = project_memory(job);
  EXPECT_GT(mem.peak_point_bytes, 0.0);
  EXPECT_TRUE(std::isfinite(mem.peak_point_bytes));
  const PerfReport perf = project_performance(job);
  EXPECT_GT(perf.iteration_s, 0.0);
  EXPECT_TRUE(std::isfinite(perf.iteration_s));
  EXPECT_GT(perf.model_tflops_per_gpu, 0.0);
}

// The conv layer keeps more than its GEMM inputs: in_proj's input (h) and output (3 h), B * x,
// the conv output and out_proj's input (h each), bf16, 2048 tokens.
TEST(ShortConv, SavedActivations) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, lfm_args(""));
  const double T = 2048.0, h = 1024.0;
  const double mixer = T * h * 2.0 * (1.0 + 3.0 + 1.0 + 1.0 + 1.0);
  LayerSpec mixer_only = job.model.layers[0];
  mixer_only.kind = LayerKind::kLinearAttention;
  EXPECT_DOUBLE_EQ(layer_activation(job, mixer_only).total_bytes, mixer);
  EXPECT_GT(layer_activation(job, job.model.layers[0]).total_bytes, mixer);
}

// Not modelled, refused by key: TP and CP over the conv layers (Primus builds them unsplit),
// entries other than conv / full_attention and a list that is not num_layers long (Primus'
// asserts, PR10 gpt_layer_specs.py:55-66). The layout rule refuses TP > 1 from elsewhere.
TEST(ShortConv, RefusedOptionsNamedByKey) {
  testing::TempDir dir;
  EXPECT_NE(testing::load_error(dir, lfm_args("tensor_model_parallel_size: 2\n"))
                .find("tensor_model_parallel_size"),
            std::string::npos);
  EXPECT_NE(testing::load_error(dir, lfm_args("context_parallel_size: 2\n"))
                .find("context_parallel_size"),
            std::string::npos);
  std::string bad = lfm_args("");
  bad.replace(bad.find("full_attention"), 14, "mamba");
  EXPECT_NE(testing::load_error(dir, bad).find("lfm_layer_types"), std::string::npos);
  std::string short_list = lfm_args("");
  short_list.replace(short_list.find("num_layers: 4"), 13, "num_layers: 5");
  EXPECT_NE(testing::load_error(dir, short_list).find("lfm_layer_types"), std::string::npos);

  const JobSpec job = testing::load_config_text(dir, lfm_args(""));
  const RuleFacts facts = rule_facts(job.model, 2048, 8, 8, 8);
  LayoutChoice choice;
  choice.tp = 1;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kLegal);
  choice.tp = 2;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kTpUnsupported);
  choice.tp = 1;
  choice.cp = 2;  // the causal conv would be cut at shard boundaries: not modelled
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kCpUnsupported);
}

}  // namespace
}  // namespace projector
