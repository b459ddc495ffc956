// Primus' Flux diffusion transformer (docs/diffusion.md): parameters and FLOPs by hand, the
// bundled Primus examples loading with their blocks and sequence, memory and performance, and the
// layouts that are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/accounting.h"
#include "projector/model/describe.h"
#include "projector/perf/perf.h"
#include "projector/workload/workload.h"
#include "support/config_text.h"

namespace projector {
namespace {

JobSpec load_example(const std::string& rel) {
  return testing::load_bundled_primus_example(rel);
}

// A flat Flux config (FluxConfig's keys): `joint` double and `single` single blocks of h 256,
// 4 heads of 64, 64 image tokens (mock 128 x 128 images) + 32 text tokens.
std::string flux_args(int joint, int single, const std::string& extra) {
  return "model_type: flux_schnell\nnum_joint_layers: " + std::to_string(joint) +
         "\nnum_single_layers: " + std::to_string(single) +
         "\nnum_layers: " + std::to_string(joint + single) +
         "\nhidden_size: 256\nnum_attention_heads: 4\ncontext_dim: 512\nvec_in_dim: 128\n"
         "model_channels: 64\nin_channels: 64\nguidance_embed: false\n"
         "mock_data: true\nmock_dataset:\n  params:\n    image_size: 128\n"
         "micro_batch_size: 2\nglobal_batch_size: 16\nseq_length: 96\nbf16: true\n"
         "hidden_dropout: 0.0\nattention_dropout: 0.0\n" +
         extra;
}

// FLUX.1's 12B by hand (h 3072, d 128; every linear with a bias; block norms without weights):
// a stream of a double block holds qkv 3h^2 + 3h, proj h^2 + h, q / k RMSNorms 2 x 128, the MLP
// 8h^2 + 5h and the modulation 6h^2 + 6h; a single block qkv, proj, MLP (12h^2 + 9h), q / k norms
// and the modulation 3h^2 + 3h. img_in 64h + h, txt_in 4096h + h, time_in 256h + h + h^2 + h,
// vector_in 768h + h + h^2 + h, norm_out 2h^2 + 2h, proj_out 64h + 64: 11.89 B (BFL publishes
// "12B" for FLUX.1 [schnell]; 11.90 B with FLUX.1 [dev]'s guidance_in).
TEST(Flux, TwelveBillionParametersByHand) {
  const JobSpec job =
      load_example("MI300X/diffusion/flux_12b_ddp_energon_schnell_resample_te_spec_fp8.yaml");
  const std::int64_t h = 3072;
  const std::int64_t stream =
      3 * h * h + 3 * h + h * h + h + 2 * 128 + 8 * h * h + 5 * h + 6 * h * h + 6 * h;
  const std::int64_t single = 12 * h * h + 9 * h + 2 * 128 + 3 * h * h + 3 * h;
  const std::int64_t io = 64 * h + h + 4096 * h + h + (256 * h + h + h * h + h) +
                          (768 * h + h + h * h + h) + 2 * h * h + 2 * h + 64 * h + 64;
  const std::int64_t expected = 19 * 2 * stream + 38 * single + io;
  const ModelParams p = model_params(job.model);
  EXPECT_EQ(p.total, expected);
  EXPECT_NEAR(static_cast<double>(p.total) / 1e9, 11.89, 0.01);
  EXPECT_EQ(layer_params(job.model, job.model.layers[0]).total(), 2 * stream);
  EXPECT_EQ(layer_params(job.model, job.model.layers[19]).total(), single);
}

// flux_535m (1 double + 1 single block, the 12B's widths): 535.3 M, the name's "535M".
TEST(Flux, Flux535mExampleLoads) {
  const JobSpec job = load_example("MI300X/diffusion/flux_535m_pretrain.yaml");
  ASSERT_EQ(job.model.num_layers(), 2);
  EXPECT_EQ(job.model.layers[0].dit.streams, 2);
  EXPECT_EQ(job.model.layers[1].dit.streams, 1);
  EXPECT_NE(describe_layer(job.model.layers[0]).find("double-stream"), std::string::npos);
  EXPECT_NE(describe_layer(job.model.layers[1]).find("single-stream"), std::string::npos);
  EXPECT_NEAR(static_cast<double>(model_params(job.model).total) / 1e6, 535.3, 0.1);
  // mock 256 x 256 images: (256 / 16)^2 = 256 image tokens; the rest of seq_length 4096 is text
  // (flux_pretrain_trainer.py:193-198).
  EXPECT_EQ(job.model.diffusion.image_tokens, 256);
  EXPECT_EQ(job.model.diffusion.text_tokens, 4096 - 256);
  EXPECT_EQ(job.runtime.seq_length, 4096);
}

// The 12B DDP + TE fp8 example: 19 double and 38 single blocks, non-causal attention over
// 256 image + 256 text tokens (the trainer's default 256 x 256 image), no vocabulary padding, fp8
// GEMMs; memory and performance finite and positive.
TEST(Flux, TwelveBillionExampleProjects) {
  const JobSpec job =
      load_example("MI300X/diffusion/flux_12b_ddp_energon_schnell_resample_te_spec_fp8.yaml");
  ASSERT_EQ(job.model.num_layers(), 57);
  int doubles = 0;
  for (const LayerSpec& l : job.model.layers) doubles += l.dit.streams == 2 ? 1 : 0;
  EXPECT_EQ(doubles, 19);
  EXPECT_FALSE(job.model.layers[0].attention.causal);
  EXPECT_EQ(job.model.diffusion.image_tokens, 256);
  EXPECT_EQ(job.model.diffusion.text_tokens, 256);
  EXPECT_EQ(padded_vocab_size(job.model, job.parallel.tp), 64);
  EXPECT_TRUE(job.runtime.precision.fp8_dense);
  EXPECT_TRUE(job.parallel.distributed_optimizer);
  const MemoryReport mem = project_memory(job);
  EXPECT_TRUE(std::isfinite(mem.peak_point_bytes) && mem.peak_point_bytes > 0.0);
  const PerfReport perf = project_performance(job);
  EXPECT_TRUE(std::isfinite(perf.iteration_s) && perf.iteration_s > 0.0);
}

// FLOPs per token of a double and a single block by hand (h 256, 4 heads of 64, 96 tokens, no
// causal halving): qkv 2 x 256 x 768, the attention core 4 x 96 x 256, proj 2 x 256 x 256, the MLP
// 2 x 2 x 256 x 1024 (each token runs through one stream's weights), and the modulation
// streams x 2 x 256 x chunks x 256 once per sample, / 96 tokens. The workload's forward GEMMs of
// the block carry the same FLOPs for the microbatch of 2 x 96 tokens.
TEST(Flux, BlockFlopsByHand) {
  testing::TempDir dir;
  const JobSpec job = testing::load_config_text(dir, flux_args(1, 1, ""));
  const double body = 2.0 * 256 * 768 + 4.0 * 96 * 256 + 2.0 * 256 * 256 + 4.0 * 256 * 1024;
  const double dbl = body + 2.0 * 2.0 * 256 * 6 * 256 / 96.0;
  const double sgl = body + 2.0 * 256 * 3 * 256 / 96.0;
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(job.model, job.model.layers[0], 96).total(), dbl);
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(job.model, job.model.layers[1], 96).total(), sgl);
  for (int i = 0; i < 2; ++i) {
    const LayerWork lw = build_layer_work(job, i);
    double fwd = 0.0;
    for (const Op& op : lw.ops) {
      if (op.phase == WorkPhase::kF && !op.recompute &&
          (op.kind == OpKind::kGemm || op.kind == OpKind::kAttention)) {
        fwd += op.flops;
      }
    }
    EXPECT_NEAR(fwd, (i == 0 ? dbl : sgl) * 2 * 96, 1e-6 * fwd) << i;
  }
}

// Refused with the key named: TP, CP and PP over Flux blocks, a sequence without text tokens and a
// diffusion model other than Flux.
TEST(Flux, UnmodelledLayoutsAreRefused) {
  testing::TempDir dir;
  auto error = [&](const std::string& text) {
    try {
      testing::load_config_text(dir, text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(
      error(flux_args(1, 1, "tensor_model_parallel_size: 2\n")).find("tensor_model_parallel_size"),
      std::string::npos);
  EXPECT_NE(error(flux_args(1, 1, "context_parallel_size: 2\n")).find("context_parallel_size"),
            std::string::npos);
  EXPECT_NE(error(flux_args(1, 1, "pipeline_model_parallel_size: 2\n"))
                .find("pipeline_model_parallel_size"),
            std::string::npos);
  std::string short_seq = flux_args(1, 1, "");
  short_seq.replace(short_seq.find("seq_length: 96"), 14, "seq_length: 64");
  EXPECT_NE(error(short_seq).find("seq_length"), std::string::npos);
  EXPECT_NE(error("model_type: diffusion_model\nnum_layers: 2\nhidden_size: 256\n"
                  "num_attention_heads: 4\nseq_length: 96\n")
                .find("is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace projector
