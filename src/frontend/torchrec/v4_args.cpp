// Primus' DLRM-v4 / HSTU keys (PRD: primus/core/projection/training_config.py ModelConfig,
// module_profilers/dlrm.py, hstu.py, sparse_embedding.py) -> the recommendation model: sparse
// tables, a bottom MLP over dense_input_dim features, num_layers HSTU blocks, an over MLP on the
// concatenated (tables + 1) x D features.
#include <fmt/format.h>

#include "frontend/torchrec/adapter.h"

namespace projector::frontend_detail {
namespace {

constexpr const char* kV4Keys[] = {"num_embedding_tables",
                                   "embedding_table_rows",
                                   "embedding_total_rows",
                                   "embedding_pooling_factor",
                                   "embedding_default_pooling_factor",
                                   "embedding_param_bytes",
                                   "embedding_hbm_fraction",
                                   "hstu_num_heads",
                                   "hstu_qk_dim",
                                   "hstu_v_dim",
                                   "hstu_max_seq_len",
                                   "hstu_fill_factor",
                                   "dlrm_bottom_mlp",
                                   "dlrm_over_mlp",
                                   "dense_input_dim"};

std::int64_t positive_int(ArgReader& r, const std::string& key) {
  const std::int64_t v = r.as_int(key, *r.get(key));
  if (v <= 0) r.fail(key, fmt::format("must be a positive integer, got {}", v));
  return v;
}

std::vector<std::int64_t> table_rows(ArgReader& r) {
  std::optional<std::int64_t> count;
  if (r.has("num_embedding_tables")) {
    count = r.as_int("num_embedding_tables", *r.get("num_embedding_tables"));
    if (*count < 0) r.fail("num_embedding_tables", "must not be negative");
  }
  if (const auto rows = int_list(r, "embedding_table_rows", false)) {
    for (std::size_t i = 0; i < rows->size(); ++i) {
      if ((*rows)[i] <= 0) {
        r.fail("embedding_table_rows",
               fmt::format("table {} has {} rows: table rows must be positive", i, (*rows)[i]));
      }
    }
    if (count && static_cast<std::size_t>(*count) != rows->size()) {
      r.fail("embedding_table_rows",
             fmt::format("{} row counts for num_embedding_tables {}", rows->size(), *count));
    }
    return *rows;
  }
  if (r.has("embedding_total_rows")) {
    const std::int64_t total = r.as_int("embedding_total_rows", *r.get("embedding_total_rows"));
    if (total <= 0) r.fail("embedding_total_rows", "table rows must be positive");
    if (!count || *count == 0) {
      r.fail("num_embedding_tables", "needed to split embedding_total_rows over the tables");
    }
    // PRD sparse_embedding.py: split evenly over the tables.
    return std::vector<std::int64_t>(static_cast<std::size_t>(*count), total / *count);
  }
  if (count && *count > 0) {
    r.fail("embedding_table_rows", "required with num_embedding_tables (or embedding_total_rows)");
  }
  return {};
}

std::vector<double> pooling(ArgReader& r, const FrameworkProfile& p, JobDraft& d,
                            std::size_t tables) {
  const std::string key = "embedding_pooling_factor";
  const ConfigValue* v = r.get(key);
  if (v != nullptr && (v->kind == ConfigValue::Kind::kFloat)) {
    if (v->f <= 0.0) r.fail(key, "must be positive");
    return std::vector<double>(tables, v->f);
  }
  if (const auto list = int_list(r, key, true)) {
    if (list->size() == 1) return std::vector<double>(tables, static_cast<double>(list->front()));
    if (list->size() != tables) {
      r.fail(key, fmt::format("{} pooling factors for {} tables (one per table, or one for all)",
                              list->size(), tables));
    }
    return std::vector<double>(list->begin(), list->end());
  }
  double def = 0.0;
  if (r.has("embedding_default_pooling_factor")) {
    def = r.float_or("embedding_default_pooling_factor", 1.0, "");
  } else {
    def = std::stod(profile_text(p, "v4_pooling_factor", d, "embedding_default_pooling_factor"));
  }
  if (def <= 0.0) r.fail("embedding_default_pooling_factor", "must be positive");
  return std::vector<double>(tables, def);
}

void read_hstu(ArgReader& r, const FrameworkProfile& p, JobDraft& d, int dim) {
  HstuSpec& h = d.model.recommendation.hstu;
  bool any = r.has("num_layers");
  for (const char* k : {"hstu_num_heads", "hstu_qk_dim", "hstu_v_dim", "hstu_max_seq_len"}) {
    any = any || r.has(k);
  }
  if (!any) return;
  h.num_layers = r.has("num_layers") ? static_cast<int>(positive_int(r, "num_layers")) : 1;
  h.hidden_size = dim;
  h.num_heads = r.has("hstu_num_heads") ? static_cast<int>(positive_int(r, "hstu_num_heads"))
                : r.has("num_attention_heads")
                    ? static_cast<int>(positive_int(r, "num_attention_heads"))
                    : 1;
  h.qk_dim = r.has("hstu_qk_dim")   ? static_cast<int>(positive_int(r, "hstu_qk_dim"))
             : r.has("kv_channels") ? static_cast<int>(positive_int(r, "kv_channels"))
                                    : std::max(1, dim / h.num_heads);
  h.v_dim = r.has("hstu_v_dim") ? static_cast<int>(positive_int(r, "hstu_v_dim")) : h.qk_dim;
  const char* seq_key = r.has("hstu_max_seq_len") ? "hstu_max_seq_len"
                        : r.has("seq_length")     ? "seq_length"
                                                  : "sequence_length";
  if (!r.has(seq_key)) r.fail("hstu_max_seq_len", "required for HSTU blocks");
  h.max_seq_len = static_cast<int>(positive_int(r, seq_key));
  if (r.has("hstu_fill_factor")) {
    h.fill_factor = r.float_or("hstu_fill_factor", 1.0, "");
  } else {
    h.fill_factor = std::stod(profile_text(p, "v4_hstu_fill_factor", d, "hstu_fill_factor"));
  }
  if (h.fill_factor <= 0.0 || h.fill_factor > 1.0) r.fail("hstu_fill_factor", "must be in (0, 1]");
}

}  // namespace

bool uses_dlrm_v4_keys(const ConfigValue& args) {
  for (const char* k : kV4Keys) {
    if (args.find(k) != nullptr) return true;
  }
  return false;
}

void read_dlrm_v4_args(ArgReader& r, const FrameworkProfile& p, JobDraft& d) {
  d.recsys.primus_v4 = true;
  RecommendationSpec& m = d.model.recommendation;
  // PRD: embedding_dim defaults to hidden_size and vice versa.
  const char* dim_key = r.has("embedding_dim") ? "embedding_dim" : "hidden_size";
  if (!r.has(dim_key)) r.fail("embedding_dim", "required (or hidden_size)");
  const int dim = static_cast<int>(positive_int(r, dim_key));
  const std::vector<std::int64_t> rows = table_rows(r);
  const std::vector<double> pool = pooling(r, p, d, rows.size());
  const std::int64_t param_bytes =
      r.has("embedding_param_bytes")
          ? r.as_int("embedding_param_bytes", *r.get("embedding_param_bytes"))
          : profile_integer(p, "v4_embedding_param_bytes", d, "embedding_param_bytes");
  Dtype dtype = Dtype::kFp32;
  switch (param_bytes) {
    case 4:
      break;
    case 2:
      dtype = Dtype::kFp16;
      break;
    case 1:
      dtype = Dtype::kFp8;
      break;
    default:
      r.fail("embedding_param_bytes",
             fmt::format("{} bytes is not a table dtype (4, 2 or 1)", param_bytes));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    m.tables.push_back({fmt::format("table_{}", i), rows[i], dim, pool[i], EmbeddingPooling::kSum,
                        dtype, EmbeddingSharding::kAuto});
  }
  if (r.has("embedding_hbm_fraction") && r.float_or("embedding_hbm_fraction", 1.0, "") < 1.0) {
    d.warnings.push_back(
        "embedding_hbm_fraction below 1 is not projected as stated: the planner places tables in "
        "HBM or host memory (UVM caching) by capacity");
  }
  m.dense_features =
      r.has("dense_input_dim") ? static_cast<int>(positive_int(r, "dense_input_dim")) : 0;
  if (const auto b = int_list(r, "dlrm_bottom_mlp", true)) m.bottom_mlp.layer_sizes = *b;
  if (m.dense_features == 0) m.bottom_mlp.layer_sizes.clear();
  if (const auto o = int_list(r, "dlrm_over_mlp", true)) m.top_mlp.layer_sizes = *o;
  m.interaction = FeatureInteraction::kConcat;
  read_hstu(r, p, d, dim);
  if (r.has("micro_batch_size")) {
    d.micro_batch_size = static_cast<int>(positive_int(r, "micro_batch_size"));
  }
  if (r.has("global_batch_size")) {
    d.global_batch_size = static_cast<int>(positive_int(r, "global_batch_size"));
  }
  for (const char* key : {"embedding_optimizer", "dense_optimizer"}) {
    if (!r.has(key)) continue;
    const std::string name = r.string_or(key, "", "");
    const std::optional<RecsysOptimizer> o = parse_recsys_optimizer(name);
    if (!o) r.fail(key, fmt::format("unknown optimizer '{}'", name));
    (key[0] == 'e' ? d.recsys.embedding_optimizer : d.recsys.dense_optimizer) = *o;
  }
}

}  // namespace projector::frontend_detail
