// Issue 12 item 15: FP8 GEMMs on AMD CDNA3 are priced with the same training-shape discount as
// BF16 (the MAF shape is the best case), so a small dense FP8 job's throughput matches AMD's
// published single-node measurement instead of exceeding it.
#include <gtest/gtest.h>

#include <string>

#include "projector/cost/gemm.h"
#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "support/catalogue.h"
#include "support/config_text.h"

namespace projector {
namespace {

double tflops(const AcceleratorSpec& a, std::int64_t m, std::int64_t n, std::int64_t k, Dtype d) {
  return gemm_time(a, {m, n, k, 1, d}).achieved_flops_per_s() / 1e12;
}

// On an LLM training shape (Llama-3.1-8B fc1, 16384 x 28672 x 4096) FP8 runs faster than BF16 by
// the ratio of AMD's MAF measurements on MI325X, 1519 / 843 = 1.80 (R2), not more: both dtypes
// carry the same shape discount against MAF. (MI300X's fp8 fraction is fitted on Primus-Turbo's
// per-tensor FP8 GEMM rows of data/kernels, whose speed-up over its bf16 rows is lower; checked by
// `projector kernels`.)
TEST(Fp8Gemm, SpeedupOverBf16IsTheMafRatio) {
  for (const auto& [name, ratio] : {std::pair{"mi325x", 1519.0 / 843.0}}) {
    const AcceleratorSpec a = testing::isolated(name);
    const double r =
        tflops(a, 16384, 28672, 4096, Dtype::kFp8) / tflops(a, 16384, 28672, 4096, Dtype::kBf16);
    EXPECT_NEAR(r, ratio, 0.05 * ratio) << name;
    // Below the MAF rate itself on a training shape.
    EXPECT_LT(tflops(a, 16384, 28672, 4096, Dtype::kFp8),
              name == std::string("mi325x") ? 1519 : 1273)
        << name;
  }
}

// Llama-3.1-8B FP8 (hybrid, delayed scaling) on one MI325X node, MBS 2, seq 8192, TE fused
// cross-entropy, as Primus' MI325X example: AMD's ROCm performance page, quoted by Primus'
// projection blog, measured 16,224 tokens/s/GPU on one node (data/validation/calibration_runs.yaml
// amd-primus-llama3.1-8b-fp8-mi325x-8node, tokens_per_sec_per_gpu_1node). Within 8 % (the
// Primus profile's one end-to-end constant is a median over five runs, two of them MoE, and
// moves by a few per cent when one of those is read differently: -6 % with its 0.082); its MFU
// (about 70 % of the BF16 peak) is below the 80 % projected before.
TEST(Fp8Mfu, Llama31_8bOnOneMi325xNode) {
  testing::TempDir dir;
  const std::string cfg =
      "modules:\n  pre_trainer:\n    framework: megatron\n    config: pre_trainer.yaml\n"
      "    model: llama3.1_8B.yaml\n    overrides:\n      micro_batch_size: 2\n"
      "      global_batch_size: 128\n      seq_length: 8192\n      max_position_embeddings: 8192\n"
      "      overlap_grad_reduce: true\n      overlap_param_gather: true\n"
      "      gradient_accumulation_fusion: false\n      cross_entropy_fusion_impl: te\n"
      "      cross_entropy_loss_fusion: true\n      fp8: hybrid\n      fp8_recipe: delayed\n";
  const JobSpec job = testing::load_config_text(dir, cfg, "mi325x");
  const PerfReport rep = project_performance(job);
  EXPECT_NEAR(rep.tokens_per_s_per_gpu, 16224.0, 0.08 * 16224.0);
  EXPECT_LT(rep.mfu, 0.76);
}

}  // namespace
}  // namespace projector
