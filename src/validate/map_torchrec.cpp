// A published TorchRec DLRM run (model.type dlrm, dlrm_main.py's names) -> the recommendation
// model and its training settings in the draft. What the entry leaves open comes from the torchrec
// framework profile (data/frameworks/torchrec.yaml), through the job builder, as for a config.
#include <fmt/format.h>

#include "projector/util/bounds.h"
#include "projector/util/text.h"
#include "validate/mapper.h"

namespace projector::validate_detail {
namespace {

// The table dtype as the entry states it; unstated ("", "not stated"): the framework profile's
// default, recorded as an assumption (as the TorchRec adapter applies it to a config).
std::optional<Dtype> table_dtype(Mapper& m, const RunEntry::Dlrm& x) {
  std::string text = x.embedding_dtype;
  const std::string lower = to_lower(text);
  if (lower.empty() || lower.find("not stated") != std::string::npos || lower == "unknown") {
    const RecsysProfileValue* v = m.d_.profile.recsys.find("embedding_dtype");
    if (v == nullptr) {
      m.fail(fmt::format("model.dlrm.embedding_dtype not stated and the {} profile has no default",
                         m.d_.profile.name));
      return std::nullopt;
    }
    text = v->text;
    m.assume("model.dlrm.embedding_dtype", text, "not stated; " + v->source);
  }
  const std::optional<Dtype> dtype = parse_dtype(text);
  if (!dtype) m.fail(fmt::format("model.dlrm.embedding_dtype: unknown dtype '{}'", text));
  return dtype;
}

void map_tables(Mapper& m, const RunEntry::Dlrm& x, RecommendationSpec& r) {
  const std::optional<Dtype> dtype = table_dtype(m, x);
  if (!dtype) return;
  if (!x.multi_hot_sizes.empty() &&
      x.multi_hot_sizes.size() != x.num_embeddings_per_feature.size()) {
    return m.fail(fmt::format("model.dlrm.multi_hot_sizes: {} pooling factors for {} tables",
                              x.multi_hot_sizes.size(), x.num_embeddings_per_feature.size()));
  }
  for (std::size_t i = 0; i < x.num_embeddings_per_feature.size(); ++i) {
    if (x.num_embeddings_per_feature[i] <= 0) {
      return m.fail(fmt::format("model.dlrm.num_embeddings_per_feature: table {} has {} rows", i,
                                x.num_embeddings_per_feature[i]));
    }
    const std::int64_t pooling = i < x.multi_hot_sizes.size() ? x.multi_hot_sizes[i] : 1;
    if (pooling < 1 || pooling > kMaxCount) {
      return m.fail(
          fmt::format("model.dlrm.multi_hot_sizes: {} is not in 1..{}", pooling, kMaxCount));
    }
    EmbeddingTableSpec t;
    t.name = fmt::format("t_cat_{}", i);
    t.num_embeddings = x.num_embeddings_per_feature[i];
    t.embedding_dim = *x.embedding_dim;
    t.pooling_factor = static_cast<double>(pooling);
    t.dtype = *dtype;
    r.tables.push_back(std::move(t));
  }
}

// training.optimizer (dlrm_main.py: --adagrad is torch.optim.Adagrad for the tables, through
// FBGEMM's EXACT_ADAGRAD, and for the dense part; otherwise SGD for both), training.precision
// (the dense GEMMs' dtype), training.sharding (a sharding type pins every table; otherwise the
// planner decides).
void map_recsys_training(Mapper& m) {
  const RunEntry::Training& t = m.e_.training;
  RecsysDraft& d = m.d_.recsys;
  const std::string opt = to_lower(t.optimizer);
  if (!opt.empty()) {
    const std::optional<RecsysOptimizer> o = parse_recsys_optimizer(opt);
    if (!o) return m.fail(fmt::format("training.optimizer: '{}' is not modelled", t.optimizer));
    d.embedding_optimizer = d.dense_optimizer = *o;
    m.note(
        fmt::format("training.optimizer {}: fused into the embedding backward and for the "
                    "dense part (dlrm_main.py)",
                    to_string(*o)));
  }
  const std::string prec = to_lower(t.precision);
  if (has(prec, "tf32")) {
    d.dense_dtype = Dtype::kTf32;
  } else if (has(prec, "bf16")) {
    d.dense_dtype = Dtype::kBf16;
  } else if (has(prec, "fp32")) {
    d.dense_dtype = Dtype::kFp32;
  }
  if (const std::optional<EmbeddingSharding> s = parse_embedding_sharding(t.sharding);
      s && *s != EmbeddingSharding::kAuto) {
    for (EmbeddingTableSpec& table : m.d_.model.recommendation.tables) table.sharding = *s;
    m.note(fmt::format("training.sharding: every table {}", to_string(*s)));
  } else if (!t.sharding.empty()) {
    m.note("training.sharding: " + t.sharding + " (TorchRec's planner, as reproduced)");
  }
}

}  // namespace

void map_recommendation(Mapper& m) {
  const RunEntry::Model& src = m.e_.model;
  ModelSpec& ms = m.d_.model;
  ms.family = ModelFamily::kRecommendation;
  if (!src.dlrm) return m.fail("model.type is dlrm but the model.dlrm block is missing");
  const RunEntry::Dlrm& x = *src.dlrm;
  if (!x.embedding_dim || x.num_embeddings_per_feature.empty() ||
      x.dense_arch_layer_sizes.empty() || x.over_arch_layer_sizes.empty()) {
    return m.fail(
        "model.dlrm: embedding_dim, num_embeddings_per_feature, dense_arch_layer_sizes and "
        "over_arch_layer_sizes are required");
  }
  RecommendationSpec& r = ms.recommendation;
  if (x.dense_features) {
    r.dense_features = *x.dense_features;
  } else if (const std::optional<double> v = m.d_.profile.recsys.number("dense_features")) {
    r.dense_features = static_cast<int>(*v);
    m.assume("model.dlrm.dense_features", std::to_string(r.dense_features),
             m.d_.profile.recsys.source("dense_features"));
  }
  map_tables(m, x, r);
  r.bottom_mlp.layer_sizes = x.dense_arch_layer_sizes;
  r.top_mlp.layer_sizes = x.over_arch_layer_sizes;
  const std::string interaction = to_lower(x.interaction_type);
  r.interaction = has(interaction, "dcn")    ? FeatureInteraction::kDcn
                  : has(interaction, "proj") ? FeatureInteraction::kProjection
                  : has(interaction, "cat")  ? FeatureInteraction::kConcat
                                             : FeatureInteraction::kDot;
  r.dcn_num_layers = x.dcn_num_layers.value_or(0);
  r.dcn_low_rank_dim = x.dcn_low_rank_dim.value_or(0);
  if (r.interaction == FeatureInteraction::kDcn &&
      (r.dcn_num_layers <= 0 || r.dcn_low_rank_dim <= 0)) {
    return m.fail("model.dlrm: a DCN interaction needs dcn_num_layers and dcn_low_rank_dim");
  }
  map_recsys_training(m);
  m.note(fmt::format("model: recommendation model, {} embedding tables of dim {}", r.tables.size(),
                     *x.embedding_dim));
}

}  // namespace projector::validate_detail
