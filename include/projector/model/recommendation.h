// The recommendation model family (DLRM and its descendants): sparse features looked up in
// embedding tables and pooled, dense features through a bottom MLP, a feature interaction, and a
// top (over) MLP. Field names follow TorchRec's dlrm_main.py arguments. Only the data types exist
// so far: memory, workload and accounting of this family are not modelled yet (model/family.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/util/dtype.h"

namespace projector {

enum class EmbeddingPooling : std::uint8_t { kSum, kMean, kNone };

// One sparse feature's table (an EmbeddingBagConfig).
struct EmbeddingTableSpec {
  std::string name;
  std::int64_t num_embeddings = 0;  // rows
  int embedding_dim = 0;
  int pooling_factor = 1;  // lookups per sample (multi-hot size; 1 for one-hot)
  EmbeddingPooling pooling = EmbeddingPooling::kSum;
  Dtype dtype = Dtype::kFp32;
};

// A stack of fully connected layers; layer_sizes are the output widths in order.
struct DenseStackSpec {
  std::vector<std::int64_t> layer_sizes;
};

enum class FeatureInteraction : std::uint8_t {
  kDot,     // pairwise dot products of the pooled embeddings and the bottom-MLP output (DLRM)
  kDcn,     // DCN-v2 cross layers (low-rank), DLRM-DCN
  kConcat,  // plain concatenation
};

struct RecommendationSpec {
  int dense_features = 0;
  std::vector<EmbeddingTableSpec> tables;
  DenseStackSpec bottom_mlp;  // dense_arch_layer_sizes
  FeatureInteraction interaction = FeatureInteraction::kDot;
  int dcn_num_layers = 0;    // kDcn only
  int dcn_low_rank_dim = 0;  // kDcn only
  DenseStackSpec top_mlp;    // over_arch_layer_sizes
};

}  // namespace projector
