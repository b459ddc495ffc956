// dlrm_main.py's arguments (TR1) -> the recommendation model and the stated training settings.
// Unstated arguments take dlrm_main.py's defaults from the framework profile, recorded.
#include <fmt/format.h>

#include <charconv>

#include "frontend/torchrec/adapter.h"
#include "projector/util/bounds.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

class DlrmReader {
 public:
  DlrmReader(ArgReader& r, const FrameworkProfile& p, JobDraft& d) : r_(r), p_(p), d_(d) {}

  std::int64_t positive(const std::string& key, const std::string& profile_key) {
    if (r_.has(key)) {
      const std::int64_t v = r_.as_int(key, *r_.get(key));
      if (v <= 0) r_.fail(key, fmt::format("must be a positive integer, got {}", v));
      return v;
    }
    return profile_integer(p_, profile_key, d_, key);
  }
  std::vector<std::int64_t> sizes(const std::string& key) {
    if (const auto v = int_list(r_, key, true)) {
      if (v->empty()) r_.fail(key, "must list at least one layer size");
      return *v;
    }
    const std::string text = profile_text(p_, key, d_, key);
    std::vector<std::int64_t> out;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t comma = std::min(text.find(',', start), text.size());
      long long n = 0;
      const char* first = text.data() + start;
      const char* last = text.data() + comma;
      const auto [end, ec] = std::from_chars(first, last, n);
      if (ec != std::errc() || end != last || n <= 0 || n > kMaxCount) {
        throw InputError({p_.file, 0, 0}, "recsys." + key,
                         fmt::format("expected positive integers such as 512,256, got '{}'", text));
      }
      out.push_back(n);
      start = comma + 1;
    }
    return out;
  }
  std::string word(const std::string& key) {
    if (r_.has(key)) return to_lower(r_.string_or(key, "", ""));
    return to_lower(profile_text(p_, key, d_, key));
  }

  ArgReader& r_;
  const FrameworkProfile& p_;
  JobDraft& d_;
};

void read_tables(DlrmReader& x, RecommendationSpec& m) {
  ArgReader& r = x.r_;
  const int dim = static_cast<int>(x.positive("embedding_dim", "embedding_dim"));
  std::vector<std::int64_t> rows;
  if (const auto per = int_list(r, "num_embeddings_per_feature", false)) {
    for (std::size_t i = 0; i < per->size(); ++i) {
      if ((*per)[i] <= 0) {
        r.fail("num_embeddings_per_feature",
               fmt::format("table {} has {} rows: table rows must be positive", i, (*per)[i]));
      }
    }
    rows = *per;
  } else {
    const std::int64_t n = x.positive("num_embeddings", "num_embeddings");
    const std::int64_t count = x.positive("num_sparse_features", "sparse_features");
    rows.assign(static_cast<std::size_t>(count), n);
  }
  if (rows.empty()) r.fail("num_embeddings_per_feature", "no tables");
  std::vector<std::int64_t> hot(rows.size(), 1);
  if (const auto mh = int_list(r, "multi_hot_sizes", true)) {
    if (mh->size() != rows.size()) {
      r.fail("multi_hot_sizes", fmt::format("{} pooling factors for {} tables (one per table)",
                                            mh->size(), rows.size()));
    }
    hot = *mh;
  }
  const std::string dtype_text =
      r.has("embedding_dtype") ? r.string_or("embedding_dtype", "", "")
                               : profile_text(x.p_, "embedding_dtype", x.d_, "embedding_dtype");
  const std::optional<Dtype> dtype = parse_dtype(dtype_text);
  if (!dtype || (*dtype != Dtype::kFp32 && *dtype != Dtype::kFp16 && *dtype != Dtype::kBf16 &&
                 *dtype != Dtype::kFp8)) {
    r.fail("embedding_dtype",
           fmt::format("'{}' is not a table dtype (fp32, fp16, bf16, fp8)", dtype_text));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EmbeddingTableSpec t;
    t.name = fmt::format("t_cat_{}", i);  // TR1: f"t_{feature_name}", DEFAULT_CAT_NAMES cat_0..
    t.num_embeddings = rows[i];
    t.embedding_dim = dim;
    t.pooling_factor = static_cast<double>(hot[i]);
    t.dtype = *dtype;
    m.tables.push_back(std::move(t));
  }
}

void read_interaction(DlrmReader& x, RecommendationSpec& m) {
  ArgReader& r = x.r_;
  const std::string kind = x.word("interaction_type");
  const int dim = m.embedding_dim();
  if (kind == "original" || kind == "dot") {
    m.interaction = FeatureInteraction::kDot;
  } else if (kind == "dcn") {
    m.interaction = FeatureInteraction::kDcn;
    m.dcn_num_layers = static_cast<int>(x.positive("dcn_num_layers", "dcn_num_layers"));
    m.dcn_low_rank_dim = static_cast<int>(x.positive("dcn_low_rank_dim", "dcn_low_rank_dim"));
  } else if (kind == "projection") {
    m.interaction = FeatureInteraction::kProjection;
    for (const char* key : {"interaction_branch1_layer_sizes", "interaction_branch2_layer_sizes"}) {
      const std::vector<std::int64_t> s = x.sizes(key);
      if (s.back() % dim != 0) {
        r.fail(key, fmt::format("the last size {} is not a multiple of embedding_dim {} "
                                "(DLRM_Projection reshapes it to [B, -1, D])",
                                s.back(), dim));
      }
      (key[18] == '1' ? m.interaction_branch1 : m.interaction_branch2).layer_sizes = s;
    }
  } else {
    r.fail("interaction_type",
           fmt::format("unknown interaction '{}' (original, dcn, projection)", kind));
  }
}

void read_optimizers(ArgReader& r, JobDraft& d) {
  if (r.has("adagrad")) {
    const bool adagrad = r.as_bool("adagrad", *r.get("adagrad"));
    // TR1: torch.optim.Adagrad for both (the tables' through FBGEMM EXACT_ADAGRAD), else SGD.
    d.recsys.embedding_optimizer = d.recsys.dense_optimizer =
        adagrad ? RecsysOptimizer::kAdagrad : RecsysOptimizer::kSgd;
  }
  for (const char* key : {"embedding_optimizer", "dense_optimizer"}) {
    if (!r.has(key)) continue;
    const std::string name = r.string_or(key, "", "");
    const std::optional<RecsysOptimizer> o = parse_recsys_optimizer(name);
    if (!o) {
      r.fail(key,
             fmt::format("unknown optimizer '{}' (sgd, adagrad, rowwise_adagrad, adam)", name));
    }
    (key[0] == 'e' ? d.recsys.embedding_optimizer : d.recsys.dense_optimizer) = *o;
  }
  if (r.has("allow_tf32")) {
    d.recsys.dense_dtype =
        r.as_bool("allow_tf32", *r.get("allow_tf32")) ? Dtype::kTf32 : Dtype::kFp32;
  }
  if (r.has("dense_dtype")) {
    const std::string name = r.string_or("dense_dtype", "", "");
    const std::optional<Dtype> dt = parse_dtype(name);
    if (!dt) r.fail("dense_dtype", fmt::format("unknown dtype '{}'", name));
    d.recsys.dense_dtype = *dt;
  }
}

}  // namespace

void read_dlrm_main_args(ArgReader& r, const FrameworkProfile& p, JobDraft& d) {
  DlrmReader x(r, p, d);
  RecommendationSpec& m = d.model.recommendation;
  if (r.has("batch_size")) {
    const std::int64_t b = r.as_int("batch_size", *r.get("batch_size"));
    if (b <= 0 || b > kMaxCount) {
      r.fail("batch_size",
             fmt::format("must be a positive integer up to {}, got {}", kMaxCount, b));
    }
    d.micro_batch_size = static_cast<int>(b);
  }
  if (r.has("global_batch_size")) {
    d.global_batch_size =
        static_cast<int>(r.as_int("global_batch_size", *r.get("global_batch_size")));
  }
  m.dense_features = static_cast<int>(x.positive("dense_features", "dense_features"));
  read_tables(x, m);
  m.bottom_mlp.layer_sizes = x.sizes("dense_arch_layer_sizes");
  if (m.bottom_mlp.layer_sizes.back() != m.embedding_dim()) {
    r.fail("dense_arch_layer_sizes",
           fmt::format("the last size {} must equal embedding_dim {} (TorchRec's DLRM checks it)",
                       m.bottom_mlp.layer_sizes.back(), m.embedding_dim()));
  }
  m.top_mlp.layer_sizes = x.sizes("over_arch_layer_sizes");
  read_interaction(x, m);
  read_optimizers(r, d);
}

}  // namespace projector::frontend_detail
