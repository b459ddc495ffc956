// Parameters and FLOPs of the recommendation family (model/recsys_accounting.h). Shapes follow
// TorchRec's torchrec/models/dlrm.py (DenseArch, InteractionArch, InteractionDCNArch,
// InteractionProjectionArch, OverArch) and Primus' DLRM-v4 HSTU profiler (hstu.py).
#include <fmt/format.h>

#include "projector/model/recsys_accounting.h"

namespace projector {
namespace {

// Fully connected layers in -> sizes[0] -> sizes[1] ...: weights and biases.
std::int64_t mlp_params(std::int64_t in, const std::vector<std::int64_t>& sizes) {
  std::int64_t total = 0;
  for (const std::int64_t out : sizes) {
    total += in * out + out;
    in = out;
  }
  return total;
}

void add_mlp(std::vector<RecsysGemm>& out, const std::string& block, const std::string& prefix,
             std::int64_t in, const std::vector<std::int64_t>& sizes) {
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out.push_back({block, fmt::format("{}.{}", prefix, i), 1, sizes[i], in, false, 1});
    in = sizes[i];
  }
}

std::int64_t last_or(const std::vector<std::int64_t>& v, std::int64_t fallback) {
  return v.empty() ? fallback : v.back();
}

// The dense vector the interaction sees next to the F pooled embeddings (the bottom MLP output).
std::int64_t dense_width(const RecommendationSpec& r) {
  return last_or(r.bottom_mlp.layer_sizes, r.embedding_dim());
}

std::int64_t hstu_uvqk_width(const HstuSpec& h) {
  return static_cast<std::int64_t>(h.num_heads) * (2 * h.qk_dim + 2 * h.v_dim);
}

}  // namespace

std::int64_t recsys_interaction_width(const RecommendationSpec& r) {
  const std::int64_t f = r.num_sparse_features();
  const std::int64_t d = r.embedding_dim();
  switch (r.interaction) {
    case FeatureInteraction::kDot:
      return dense_width(r) + f * (f + 1) / 2;
    case FeatureInteraction::kDcn:
    case FeatureInteraction::kConcat:
      return f * d + dense_width(r);
    case FeatureInteraction::kProjection: {
      const std::int64_t f1 = d > 0 ? last_or(r.interaction_branch1.layer_sizes, 0) / d : 0;
      const std::int64_t f2 = d > 0 ? last_or(r.interaction_branch2.layer_sizes, 0) / d : 0;
      return dense_width(r) + f1 * f2;
    }
  }
  return 0;
}

RecsysParams recsys_params(const RecommendationSpec& r) {
  RecsysParams p;
  for (const EmbeddingTableSpec& t : r.tables) p.embedding += t.num_embeddings * t.embedding_dim;
  p.bottom_mlp = mlp_params(r.dense_features, r.bottom_mlp.layer_sizes);
  const std::int64_t concat =
      static_cast<std::int64_t>(r.num_sparse_features()) * r.embedding_dim() + dense_width(r);
  if (r.interaction == FeatureInteraction::kDcn) {
    // x_{l+1} = x_0 * (W_l (V_l x_l) + b_l) + x_l: V is concat x rank, W rank x concat.
    p.interaction =
        static_cast<std::int64_t>(r.dcn_num_layers) * (2 * concat * r.dcn_low_rank_dim + concat);
  } else if (r.interaction == FeatureInteraction::kProjection) {
    p.interaction = mlp_params(concat, r.interaction_branch1.layer_sizes) +
                    mlp_params(concat, r.interaction_branch2.layer_sizes);
  }
  p.top_mlp = mlp_params(recsys_interaction_width(r), r.top_mlp.layer_sizes);
  const HstuSpec& h = r.hstu;
  if (h.num_layers > 0) {
    const std::int64_t per_layer = static_cast<std::int64_t>(h.hidden_size) * hstu_uvqk_width(h) +
                                   static_cast<std::int64_t>(h.num_heads) * h.v_dim * h.hidden_size;
    p.hstu = per_layer * h.num_layers;
  }
  return p;
}

std::vector<RecsysGemm> recsys_dense_gemms(const RecommendationSpec& r) {
  std::vector<RecsysGemm> out;
  add_mlp(out, "bottom_mlp", "bottom_mlp", r.dense_features, r.bottom_mlp.layer_sizes);
  const std::int64_t f = r.num_sparse_features();
  const std::int64_t d = r.embedding_dim();
  const std::int64_t concat = f * d + dense_width(r);
  const HstuSpec& h = r.hstu;
  if (h.num_layers > 0) {
    const std::int64_t s = h.effective_seq_len();
    out.push_back({"hstu", "hstu.uvqk", s, hstu_uvqk_width(h), h.hidden_size, false, h.num_layers});
    out.push_back({"hstu", "hstu.output", s, h.hidden_size,
                   static_cast<std::int64_t>(h.num_heads) * h.v_dim, false, h.num_layers});
  }
  switch (r.interaction) {
    case FeatureInteraction::kDot:
      out.push_back({"interaction", "interaction.bmm", f + 1, f + 1, dense_width(r), true, 1});
      break;
    case FeatureInteraction::kDcn:
      for (int l = 0; l < r.dcn_num_layers; ++l) {
        out.push_back({"interaction", fmt::format("dcn.{}.down", l), 1, r.dcn_low_rank_dim, concat,
                       false, 1});
        out.push_back(
            {"interaction", fmt::format("dcn.{}.up", l), 1, concat, r.dcn_low_rank_dim, false, 1});
      }
      break;
    case FeatureInteraction::kProjection: {
      add_mlp(out, "interaction", "branch1", concat, r.interaction_branch1.layer_sizes);
      add_mlp(out, "interaction", "branch2", concat, r.interaction_branch2.layer_sizes);
      const std::int64_t f1 = d > 0 ? last_or(r.interaction_branch1.layer_sizes, 0) / d : 0;
      const std::int64_t f2 = d > 0 ? last_or(r.interaction_branch2.layer_sizes, 0) / d : 0;
      out.push_back({"interaction", "interaction.bmm", f1, f2, d, true, 1});
      break;
    }
    case FeatureInteraction::kConcat:
      break;
  }
  add_mlp(out, "top_mlp", "top_mlp", recsys_interaction_width(r), r.top_mlp.layer_sizes);
  return out;
}

double recsys_hstu_attention_flops(const RecommendationSpec& r) {
  const HstuSpec& h = r.hstu;
  if (h.num_layers <= 0) return 0.0;
  const double s = static_cast<double>(h.effective_seq_len());
  // QK^T (s x s x qk) and AV (s x v x s) per head, causal: half of the s x s products.
  return h.num_layers * h.num_heads * 2.0 * s * s * (h.qk_dim + h.v_dim) * 0.5;
}

double recsys_forward_flops_per_sample(const RecommendationSpec& r) {
  double total = recsys_hstu_attention_flops(r);
  for (const RecsysGemm& g : recsys_dense_gemms(r)) total += g.flops_per_sample();
  return total;
}

}  // namespace projector
