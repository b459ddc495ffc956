// Parameters and FLOPs of the recommendation family against counts worked by hand from TorchRec's
// DLRM modules (torchrec/models/dlrm.py) for the README's Criteo configurations.
#include "projector/model/recsys_accounting.h"

#include <gtest/gtest.h>

#include "projector/job/accounting.h"
#include "projector/model/accounting.h"
#include "support/recsys_jobs.h"

namespace projector {
namespace {

// Bottom MLP 13 -> 512 -> 256 -> 128 with biases.
constexpr std::int64_t kBottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128;

TEST(RecsysAccounting, DotModel) {
  const JobSpec job = testing::load_recsys("readme_dot_sgd_lbs256");
  const RecommendationSpec& m = job.model.recommendation;
  // Over arch input: D + C(F+1, 2) = 128 + 27 x 26 / 2 = 479.
  EXPECT_EQ(recsys_interaction_width(m), 479);
  const std::int64_t top =
      479 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 256 * 1 + 1;
  const RecsysParams p = recsys_params(m);
  EXPECT_EQ(p.embedding, 204184588LL * 128);
  EXPECT_EQ(p.bottom_mlp, kBottom);
  EXPECT_EQ(p.interaction, 0);
  EXPECT_EQ(p.top_mlp, top);
  // FLOPs per sample: 2 x MACs of every layer plus the (F+1)^2 x D products of the bmm.
  const double macs = 13.0 * 512 + 512.0 * 256 + 256.0 * 128 + 27.0 * 27 * 128 + 479.0 * 1024 +
                      1024.0 * 1024 + 1024.0 * 512 + 512.0 * 256 + 256.0;
  EXPECT_DOUBLE_EQ(recsys_forward_flops_per_sample(m), 2.0 * macs);
  const ModelFlops f = model_flops(job);
  EXPECT_DOUBLE_EQ(f.tokens, 2048.0);  // one sample per "token"
  EXPECT_DOUBLE_EQ(f.model_flops, 3.0 * 2.0 * macs * 2048.0);
  EXPECT_EQ(model_params(job.model).total, p.total());
}

// DCN-v2 (InteractionDCNArch): in_features F x D + D = 3456, three low-rank (512) layers of
// V (3456 x 512), W (512 x 3456) and a bias of 3456; the over arch reads all 3456.
TEST(RecsysAccounting, DcnModel) {
  const JobSpec job = testing::load_recsys("readme_dcnv2_adagrad_lbs2048");
  const RecommendationSpec& m = job.model.recommendation;
  EXPECT_EQ(recsys_interaction_width(m), 3456);
  EXPECT_EQ(recsys_params(m).interaction, 3 * (2 * 3456 * 512 + 3456));
  double gemm_macs = 0.0;
  for (const RecsysGemm& g : recsys_dense_gemms(m)) {
    if (g.block == "interaction") gemm_macs += static_cast<double>(g.m) * g.n * g.k;
  }
  EXPECT_DOUBLE_EQ(gemm_macs, 3.0 * 2 * 3456 * 512);
}

// HSTU: per block a fused UVQK projection D x H(2 d_qk + 2 d_v) and an output projection
// H d_v x D over the valid positions, and causal attention (half of S^2 per head).
TEST(RecsysAccounting, HstuBlocks) {
  const JobSpec job = testing::load_recsys("primus_dlrm_v4_hstu", {}, "mi300x");
  const RecommendationSpec& m = job.model.recommendation;
  const double s = 1638;
  const double proj = 2.0 * s * (512.0 * 4 * 512 + 4.0 * 128 * 512) * 5;
  const double attn = 5 * 4 * 2.0 * s * s * (128 + 128) * 0.5;
  EXPECT_DOUBLE_EQ(recsys_hstu_attention_flops(m), attn);
  double gemm = 0.0;
  for (const RecsysGemm& g : recsys_dense_gemms(m)) {
    if (g.block == "hstu") gemm += g.flops_per_sample();
  }
  EXPECT_DOUBLE_EQ(gemm, proj);
}

}  // namespace
}  // namespace projector
