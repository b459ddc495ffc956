// Linear attention layers (docs/linear-attention.md): Gated DeltaNet in Megatron's GPT stack
// (experimental_attention_variant gated_delta_net) and in Primus' gdn / kda hybrid stacks; their
// parameters, FLOPs, workload, memory and the parallel layouts Megatron refuses.
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

// A Primus GDN hybrid stack (PR5 hybrid_mamba_mla_layer_specs.py gdn_hybrid_stack_spec): h 1024,
// 4 key heads and 8 value heads of 64, conv 4, 8 sublayers (4 GDN + 4 MLP), RMSNorm.
std::string gdn_args(const std::string& spec, const std::string& extra) {
  return "model_type: mamba\nis_hybrid_model: true\nnum_layers: 8\nhidden_size: 1024\n"
         "num_attention_heads: 16\nffn_hidden_size: 4096\nswiglu: true\n"
         "normalization: RMSNorm\nvocab_size: 50304\nadd_bias_linear: false\n"
         "position_embedding_type: none\n"
         "linear_conv_kernel_dim: 4\nlinear_key_head_dim: 64\nlinear_value_head_dim: 64\n"
         "linear_num_key_heads: 4\nlinear_num_value_heads: 8\n"
         "spec: ['primus.backends.megatron.core.models.hybrid.hybrid_mamba_mla_layer_specs', '" +
         spec +
         "']\n"
         "micro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 2048\nbf16: true\n"
         "hidden_dropout: 0.0\nattention_dropout: 0.0\n" +
         extra;
}

// A Qwen3.5-like GPT stack (Primus qwen3_5_35B_A3B.yaml, scaled down): 8 layers, MoE in every
// layer, GQA full attention with an output gate, GDN with 4 key / 8 value heads of 64.
std::string qwen_args(const std::string& extra) {
  return "num_layers: 8\nhidden_size: 1024\nnum_attention_heads: 8\nffn_hidden_size: 2048\n"
         "group_query_attention: true\nnum_query_groups: 2\nkv_channels: 128\n"
         "qk_layernorm: true\nswiglu: true\nnormalization: RMSNorm\nvocab_size: 50304\n"
         "add_bias_linear: false\nnum_experts: 16\nmoe_router_topk: 2\n"
         "moe_ffn_hidden_size: 256\nmoe_shared_expert_intermediate_size: 256\n"
         "moe_layer_freq: 1\nexperimental_attention_variant: gated_delta_net\n"
         "linear_conv_kernel_dim: 4\nlinear_key_head_dim: 64\nlinear_value_head_dim: 64\n"
         "linear_num_key_heads: 4\nlinear_num_value_heads: 8\nattention_output_gate: true\n"
         "micro_batch_size: 1\nglobal_batch_size: 8\nseq_length: 2048\nbf16: true\n"
         "hidden_dropout: 0.0\nattention_dropout: 0.0\n" +
         extra;
}

std::string kinds(const JobSpec& job) {
  std::string out;
  for (const LayerSpec& l : job.model.layers) {
    out += l.has_linear_attention() ? (l.has_ffn() ? 'L' : 'G')
           : l.has_attention()      ? (l.has_ffn() ? 'T' : '*')
                                    : (l.has_mamba() ? 'M' : '-');
  }
  return out;
}

// One GDN layer by hand (MG16 common.py:202-286): q/k 4 x 64 = 256 each, v and z
// 8 x 64 = 512 each, beta and alpha 8 each: in_proj 1024 x 1552; conv over 256 + 256 + 512 =
// 1024 channels x 4 (no bias); A_log and dt_bias 8 each; the output norm over one value head (64);
// out_proj 512 x 1024; the layer's input RMSNorm 1024.
TEST(LinearAttention, GdnLayerParams) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, gdn_args("gdn_hybrid_stack_spec", ""));
  EXPECT_EQ(kinds(job), "G-G-G-G-");
  const LayerSpec& l = job.model.layers[0];
  EXPECT_EQ(l.linear.kind, LinearAttentionKind::kGdn);
  EXPECT_EQ(l.linear.in_proj_width(), 1552);
  const std::int64_t mixer = 1024 * 1552 + 1024 * 4 + 2 * 8 + 64 + 512 * 1024;
  EXPECT_EQ(linear_attention_params(1024, l.linear), mixer);
  EXPECT_EQ(layer_params(job.model, l).total(), mixer + 1024);
}

// KDA (Primus PR8 kimi_delta_attention.py:300-448): in_proj 1024 x (1024 + 64 + 64 + 8) =
// 1024 x 1160, conv 1024 x 4, f_b 64 x (8 x 64), A_log 8, dt_bias 8 x 64, g_b 64 x 512 + 512,
// the output norm 64, out_proj 512 x 1024; the TE spec adds gate_norm (1024), the no-TE spec not.
TEST(LinearAttention, KdaLayerParams) {
  testing::TempDir dir;
  const JobSpec te = testing::load_config_text(dir, gdn_args("kda_hybrid_stack_spec", ""));
  const LayerSpec& l = te.model.layers[0];
  EXPECT_EQ(l.linear.kind, LinearAttentionKind::kKda);
  const std::int64_t mixer =
      1024 * 1160 + 1024 * 4 + 64 * 512 + 8 + 512 + 64 * 512 + 512 + 64 + 512 * 1024;
  EXPECT_EQ(linear_attention_params(1024, l.linear), mixer + 1024);
  const JobSpec no_te = testing::load_config_text(dir, gdn_args("kda_hybrid_stack_spec_no_te", ""));
  EXPECT_EQ(linear_attention_params(1024, no_te.model.layers[0].linear), mixer);
}

// Forward FLOPs per token of the GDN layer: in_proj 2 x 1024 x 1552, out_proj 2 x 512 x 1024 and
// the chunked delta rule per value head with C 64, d_k = d_v = 64: Q K^T and K_beta K^T
// (2 x 2 x 64 x 64), the forward substitution (2 x 64 x 21), A [V_beta | K_beta] and P V_new
// (2 x 64 x (2 x 64 + 64)), three state products (3 x 2 x 64 x 64) = 68224, times 8 heads. The
// workload's forward ops of the mixer carry the same FLOPs (2048 tokens, a multiple of C), and its
// backward twice them.
TEST(LinearAttention, GdnFlopsByHandAndWorkload) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, gdn_args("gdn_hybrid_stack_spec", ""));
  const LayerSpec& l = job.model.layers[0];
  const double kernel = 8.0 * (4.0 * 64 * 64 + 2.0 * 64 * 21 + 2.0 * 64 * 192 + 6.0 * 64 * 64);
  EXPECT_DOUBLE_EQ(kernel, 8.0 * 68224);
  EXPECT_DOUBLE_EQ(delta_rule_flops_per_token(l.linear), kernel);
  const double expected = 2.0 * 1024 * 1552 + 2.0 * 512 * 1024 + kernel;
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(job.model, l, 2048).total(), expected);

  const LayerWork lw = build_layer_work(job, 0);
  EXPECT_EQ(lw.label, "linear_attention_layer");
  double fwd = 0.0, bwd = 0.0, chunk_fwd = 0.0;
  for (const Op& op : lw.ops) {
    if (op.kind != OpKind::kGemm || op.name.rfind("linear_attn.", 0) != 0) continue;
    if (op.phase == WorkPhase::kF && !op.recompute) {
      fwd += op.flops;
      if (op.name.rfind("linear_attn.chunk_", 0) == 0) chunk_fwd += op.flops;
    } else if (op.phase != WorkPhase::kF) {
      bwd += op.flops;
    }
  }
  EXPECT_DOUBLE_EQ(fwd, expected * 2048);
  EXPECT_DOUBLE_EQ(chunk_fwd, kernel * 2048);
  EXPECT_DOUBLE_EQ(bwd, 2.0 * fwd);
}

// Megatron's rule (MG17 experimental_attention_variant_module_specs.py:458-470): layer i is full
// attention when (i + 1) % linear_attention_freq == 0, so 3 and 7 of 8 with freq 4; every layer
// keeps its MoE. A list states the pattern (1 linear). The gated attention layer's linear_qkv has
// 8 x 128 gate rows more (MG18 attention.py:1689-1691).
TEST(LinearAttention, QwenLayerPatternAndOutputGate) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, qwen_args("linear_attention_freq: 4\n"));
  EXPECT_EQ(kinds(job), "LLLTLLLT");
  for (const LayerSpec& l : job.model.layers) EXPECT_TRUE(l.is_moe);
  const JobSpec list = testing::load_config_text(
      dir, qwen_args("linear_attention_freq: [1, 0, 1, 1, 0, 1, 1, 1]\n"));
  EXPECT_EQ(kinds(list), "LTLLTLLL");
  const LayerSpec& attn = job.model.layers[3];
  EXPECT_TRUE(attn.attention.output_gate);
  LayerSpec ungated = attn;
  ungated.attention.output_gate = false;
  EXPECT_EQ(layer_params(job.model, attn).attention - layer_params(job.model, ungated).attention,
            1024 * 8 * 128);
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(job.model, attn, 2048).qkv_flops -
                       layer_forward_flops_per_token(job.model, ungated, 2048).qkv_flops,
                   2.0 * 1024 * 8 * 128);
  EXPECT_GT(layer_activation(job, attn).total_bytes, layer_activation(job, ungated).total_bytes);
  EXPECT_EQ(build_layer_work(job, 0).label, "linear_moe_layer");
  // The PaLM-convention count (6 N + 6 heads x 2 head_dim x s per layer) has an s^2 term only for
  // the two attention layers.
  EXPECT_DOUBLE_EQ(palm_flops_per_token(job.model, 2048),
                   6.0 * static_cast<double>(model_params(job.model).active -
                                             model_params(job.model).embedding) +
                       2.0 * 6.0 * 8 * 256 * 2048);
  EXPECT_NE(testing::load_error(dir, qwen_args("")).find("linear_attention_freq"),
            std::string::npos);
}

// Memory and performance project with positive, finite results, and GDN layers keep more than
// their GEMM inputs: the saved set is larger than in_proj's input and output alone.
TEST(LinearAttention, MemoryAndPerformanceProject) {
  testing::TempDir dir;
  for (const std::string& text :
       {qwen_args("linear_attention_freq: 4\n"), gdn_args("gdn_hybrid_stack_spec", ""),
        gdn_args("kda_hybrid_stack_spec_no_te", "")}) {
    const JobSpec job = testing::load_config_text(dir, text);
    const MemoryReport mem = project_memory(job);
    EXPECT_GT(mem.peak_point_bytes, 0.0);
    EXPECT_TRUE(std::isfinite(mem.peak_point_bytes));
    const PerfReport perf = project_performance(job);
    EXPECT_GT(perf.iteration_s, 0.0);
    EXPECT_TRUE(std::isfinite(perf.iteration_s));
    EXPECT_GT(perf.model_tflops_per_gpu, 0.0);
  }
  const JobSpec job = testing::load_config_text(dir, gdn_args("gdn_hybrid_stack_spec", ""));
  const double T = 2048.0;
  const double gemm_io = T * 1024 * 2 + T * 1552 * 2 + T * 512 * 2;
  EXPECT_GT(layer_activation(job, job.model.layers[0]).total_bytes, gemm_io);
}

// Megatron refuses linear heads that TP x CP does not divide (MG2 transformer_config.py:
// 1500-1509), Primus' KDA refuses TP > 1 (kimi_delta_attention.py:300); CP over GDN is not
// modelled. Each error names its key.
TEST(LinearAttention, RefusedParallelLayouts) {
  testing::TempDir dir;
  const std::string tp8 = "tensor_model_parallel_size: 8\n";
  // 8 query groups divide over TP 8; the 4 linear key heads do not.
  std::string wide_kv = qwen_args("linear_attention_freq: 4\n" + tp8);
  wide_kv.replace(wide_kv.find("num_query_groups: 2"), 19, "num_query_groups: 8");
  EXPECT_NE(testing::load_error(dir, wide_kv).find("linear_num_key_heads"), std::string::npos);
  EXPECT_NE(
      testing::load_error(dir, gdn_args("kda_hybrid_stack_spec", "tensor_model_parallel_size: 2\n"))
          .find("tensor_model_parallel_size"),
      std::string::npos);
  EXPECT_NE(
      testing::load_error(dir, gdn_args("gdn_hybrid_stack_spec", "context_parallel_size: 2\n"))
          .find("context_parallel_size"),
      std::string::npos);
  std::string six = gdn_args("gdn_hybrid_stack_spec", "");
  six.replace(six.find("linear_num_value_heads: 8"), 25, "linear_num_value_heads: 6");
  EXPECT_NE(testing::load_error(dir, six).find("linear_num_value_heads"), std::string::npos);
  // The layout rule (job/rules.h kTpLinearHeads) refuses the same layouts when TP comes from
  // elsewhere (the CLI, the sweep): GDN's 4 key heads at TP 8, KDA at any TP > 1.
  const JobSpec gdn = testing::load_config_text(dir, gdn_args("gdn_hybrid_stack_spec", ""));
  const RuleFacts facts = rule_facts(gdn.model, 2048, 8, 8, 8);
  LayoutChoice choice;
  choice.tp = 4;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kLegal);
  choice.tp = 8;
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kTpLinearHeads);
  const JobSpec kda = testing::load_config_text(dir, gdn_args("kda_hybrid_stack_spec", ""));
  choice.tp = 2;
  EXPECT_EQ(check_layout(rule_facts(kda.model, 2048, 8, 8, 8), choice), LayoutRule::kTpUnsupported);
  choice.tp = 1;
  choice.cp = 2;  // the head all-to-all of CP over GDN / KDA is not modelled
  EXPECT_EQ(check_layout(facts, choice), LayoutRule::kCpUnsupported);
  // TP 2 divides both head counts: the layout loads.
  const JobSpec tp2 = testing::load_config_text(
      dir, gdn_args("gdn_hybrid_stack_spec", "tensor_model_parallel_size: 2\n"));
  EXPECT_EQ(tp2.parallel.tp, 2);
}

}  // namespace
}  // namespace projector
