// Parameter and FLOP accounting of the recommendation family (model/recommendation.h): the one
// list of dense GEMMs a sample runs through (bottom MLP, interaction, top MLP, HSTU projections),
// which the FLOP count, the workload and the reports all read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/model/recommendation.h"

namespace projector {

struct RecsysParams {
  std::int64_t embedding = 0;    // all table rows x widths
  std::int64_t bottom_mlp = 0;   // dense arch
  std::int64_t interaction = 0;  // DCN cross layers or projection branches
  std::int64_t top_mlp = 0;      // over arch
  std::int64_t hstu = 0;         // HSTU blocks (UVQK and output projections)
  std::int64_t dense() const { return bottom_mlp + interaction + top_mlp + hstu; }
  std::int64_t total() const { return embedding + dense(); }
};
RecsysParams recsys_params(const RecommendationSpec& r);

// One dense GEMM of the forward pass, per sample. With `batched`, each sample runs its own
// m x n x k product of two activations (the interaction bmm: no weights); otherwise the batch is
// stacked into one GEMM of (B x m) x n x k against a weight of k x n.
struct RecsysGemm {
  std::string block;   // bottom_mlp, interaction, top_mlp, hstu
  std::string name;    // bottom_mlp.0, dcn.1.down, interaction.bmm, hstu.uvqk, ...
  std::int64_t m = 1;  // rows per sample (the HSTU sequence; F+1 for the dot bmm)
  std::int64_t n = 0;
  std::int64_t k = 0;
  bool batched = false;
  int repeat = 1;  // identical layers (HSTU blocks)
  double flops_per_sample() const { return 2.0 * static_cast<double>(m) * n * k * repeat; }
};
// In forward order. HSTU attention cores are not GEMMs here (recsys_hstu_attention_flops).
std::vector<RecsysGemm> recsys_dense_gemms(const RecommendationSpec& r);

// Width of the interaction output that feeds the top MLP: dot D + F(F+1)/2; DCN (F+1) D;
// projection D + F1 F2; concat (F+1) D.
std::int64_t recsys_interaction_width(const RecommendationSpec& r);

// Causal SiLU attention of every HSTU block of one sample (QK^T and AV over the valid positions,
// the unmasked half counted).
double recsys_hstu_attention_flops(const RecommendationSpec& r);

// Forward FLOPs of one sample: every dense GEMM plus the HSTU attention cores (embedding lookups
// are memory traffic, not FLOPs).
double recsys_forward_flops_per_sample(const RecommendationSpec& r);

}  // namespace projector
