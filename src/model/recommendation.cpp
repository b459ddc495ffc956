// Names and small helpers of the recommendation family (model/recommendation.h).
#include "projector/model/recommendation.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "projector/util/text.h"

namespace projector {
namespace {

constexpr std::pair<std::string_view, EmbeddingSharding> kShardingNames[] = {
    {"auto", EmbeddingSharding::kAuto},
    {"data_parallel", EmbeddingSharding::kDataParallel},
    {"table_wise", EmbeddingSharding::kTableWise},
    {"column_wise", EmbeddingSharding::kColumnWise},
    {"row_wise", EmbeddingSharding::kRowWise},
    {"table_row_wise", EmbeddingSharding::kTableRowWise},
    // Short forms and Primus' embedding_sharding values.
    {"dp", EmbeddingSharding::kDataParallel},
    {"data", EmbeddingSharding::kDataParallel},
    {"tw", EmbeddingSharding::kTableWise},
    {"table", EmbeddingSharding::kTableWise},
    {"cw", EmbeddingSharding::kColumnWise},
    {"column", EmbeddingSharding::kColumnWise},
    {"rw", EmbeddingSharding::kRowWise},
    {"row", EmbeddingSharding::kRowWise},
    {"twrw", EmbeddingSharding::kTableRowWise},
    {"table_row", EmbeddingSharding::kTableRowWise},
};

constexpr std::pair<std::string_view, RecsysOptimizer> kOptimizerNames[] = {
    {"sgd", RecsysOptimizer::kSgd},
    {"adagrad", RecsysOptimizer::kAdagrad},
    {"exact_adagrad", RecsysOptimizer::kAdagrad},
    {"rowwise_adagrad", RecsysOptimizer::kRowWiseAdagrad},
    {"row_wise_adagrad", RecsysOptimizer::kRowWiseAdagrad},
    {"exact_rowwise_adagrad", RecsysOptimizer::kRowWiseAdagrad},
    {"adam", RecsysOptimizer::kAdam},
    {"exact_sgd", RecsysOptimizer::kSgd},
};

}  // namespace

std::string_view to_string(EmbeddingSharding s) {
  for (const auto& [name, value] : kShardingNames) {
    if (value == s) return name;
  }
  return "?";
}

std::optional<EmbeddingSharding> parse_embedding_sharding(std::string_view name) {
  std::string n = to_lower(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (const auto& [key, value] : kShardingNames) {
    if (key == n) return value;
  }
  return std::nullopt;
}

std::string embedding_sharding_names() {
  return "auto, data_parallel, table_wise, column_wise, row_wise, table_row_wise";
}

std::string_view to_string(EmbeddingPlacement p) {
  switch (p) {
    case EmbeddingPlacement::kHbm:
      return "hbm";
    case EmbeddingPlacement::kUvmCaching:
      return "uvm_caching";
    case EmbeddingPlacement::kUvm:
      return "uvm";
  }
  return "?";
}

std::string_view to_string(RecsysOptimizer o) {
  for (const auto& [name, value] : kOptimizerNames) {
    if (value == o) return name;
  }
  return "?";
}

std::optional<RecsysOptimizer> parse_recsys_optimizer(std::string_view name) {
  std::string n = to_lower(name);
  std::replace(n.begin(), n.end(), '-', '_');
  for (const auto& [key, value] : kOptimizerNames) {
    if (key == n) return value;
  }
  return std::nullopt;
}

double optimizer_state_bytes_per_row(RecsysOptimizer o, int dim) {
  switch (o) {
    case RecsysOptimizer::kSgd:
      return 0.0;
    case RecsysOptimizer::kAdagrad:
      return 4.0 * dim;
    case RecsysOptimizer::kRowWiseAdagrad:
      return 4.0;
    case RecsysOptimizer::kAdam:
      return 8.0 * dim;
  }
  return 0.0;
}

std::string_view to_string(FeatureInteraction i) {
  switch (i) {
    case FeatureInteraction::kDot:
      return "dot";
    case FeatureInteraction::kDcn:
      return "dcn";
    case FeatureInteraction::kProjection:
      return "projection";
    case FeatureInteraction::kConcat:
      return "concat";
  }
  return "?";
}

std::int64_t HstuSpec::effective_seq_len() const {
  if (num_layers <= 0 || max_seq_len <= 0) return 0;
  const double fill = std::clamp(fill_factor, 0.0, 1.0);
  return std::max<std::int64_t>(1, std::llround(max_seq_len * fill));
}

}  // namespace projector
