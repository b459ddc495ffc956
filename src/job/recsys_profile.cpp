// The recommendation-family block of framework profiles (job/recsys_profile.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "job/recsys_profile_read.h"
#include "projector/util/error.h"

namespace projector {

const std::vector<std::string_view>& recsys_profile_keys() {
  static const std::vector<std::string_view> kKeys = {
      // dlrm_main.py argument defaults and the Criteo feature counts.
      "batch_size", "num_embeddings", "embedding_dim", "dense_arch_layer_sizes",
      "over_arch_layer_sizes", "interaction_type", "dcn_num_layers", "dcn_low_rank_dim",
      "interaction_branch1_layer_sizes", "interaction_branch2_layer_sizes", "learning_rate",
      "dense_features", "sparse_features", "allow_tf32",
      // What runs when the config does not say.
      "embedding_optimizer", "dense_optimizer", "dense_dtype", "embedding_dtype", "pipelined_input",
      "index_bytes", "ddp_bucket_mib",
      // Primus' DLRM-v4 / HSTU keys (project_dlrm.py, dlrm.py).
      "v4_embedding_param_bytes", "v4_pooling_factor", "v4_hstu_fill_factor",
      "v4_embedding_optimizer", "v4_dense_optimizer", "v4_dense_dtype",
      // Host-side costs of the framework's training loop.
      "host_step_ms", "host_per_sample_us", "uvm_cache_hit_rate", "host_link_gib_per_s",
      // The sharding planner.
      "planner_hbm_cap_gib", "planner_reservation", "planner_dense_multiplier",
      "planner_kjt_copies", "planner_pooling_factor", "planner_hbm_gib_per_s",
      "planner_hbm_to_ddr_gib_per_s", "planner_intra_node_gib_per_s",
      "planner_inter_node_gib_per_s", "planner_uvm_caching_ratio", "planner_bwd_multiplier",
      "planner_batched_copy_factor", "planner_dp_elementwise_factor", "planner_min_cw_dim"};
  return kKeys;
}

const RecsysProfileValue* RecsysProfile::find(std::string_view key) const {
  for (const RecsysProfileValue& v : values_) {
    if (v.key == key) return &v;
  }
  return nullptr;
}

std::optional<double> RecsysProfile::number(std::string_view key) const {
  const RecsysProfileValue* v = find(key);
  if (v == nullptr || v->text.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v->text.c_str(), &end);
  if (end == v->text.c_str() || *end != '\0') return std::nullopt;
  return d;
}

std::optional<std::vector<std::int64_t>> RecsysProfile::int_list(std::string_view key) const {
  const RecsysProfileValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= v->text.size()) {
    const std::size_t comma = std::min(v->text.find(',', start), v->text.size());
    const std::string item = v->text.substr(start, comma - start);
    char* end = nullptr;
    const long long n = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') return std::nullopt;
    out.push_back(n);
    start = comma + 1;
  }
  return out;
}

std::string RecsysProfile::text(std::string_view key) const {
  const RecsysProfileValue* v = find(key);
  return v == nullptr ? std::string() : v->text;
}

std::string RecsysProfile::source(std::string_view key) const {
  const RecsysProfileValue* v = find(key);
  return v == nullptr ? std::string() : v->source;
}

void RecsysProfile::set(RecsysProfileValue v) {
  for (RecsysProfileValue& old : values_) {
    if (old.key == v.key) {
      old = std::move(v);
      return;
    }
  }
  values_.push_back(std::move(v));
}

namespace job_detail {
namespace {

[[noreturn]] void fail(const std::string& file, const YAML::Node& n, const std::string& key,
                       const std::string& message) {
  const int line = n.IsDefined() && n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
  throw InputError({file, line, 0}, key, message);
}

std::string scalar_text(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return n.Scalar();
  if (!n.IsSequence()) fail(file, n, key, "expected a scalar or a list of scalars");
  std::string out;
  for (const YAML::Node& item : n) {
    if (!item.IsScalar()) fail(file, item, key, "expected a list of scalars");
    out += (out.empty() ? "" : ",") + item.Scalar();
  }
  return out;
}

}  // namespace

void read_recsys_profile(const std::string& file, const YAML::Node& block, RecsysProfile& out) {
  if (!block.IsMap()) fail(file, block, "recsys", "expected a mapping of {value, source} entries");
  const std::vector<std::string_view>& known = recsys_profile_keys();
  for (const auto& kv : block) {
    const std::string key = kv.first.Scalar();
    const std::string path = "recsys." + key;
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail(file, kv.first, path, "unknown recsys profile value");
    }
    const YAML::Node& e = kv.second;
    if (!e.IsMap()) fail(file, e, path, "expected {value: ..., source: ...}");
    for (const auto& sub : e) {
      const std::string k = sub.first.Scalar();
      if (k != "value" && k != "source") fail(file, sub.first, path + "." + k, "unknown key");
    }
    const YAML::Node source = e["source"];
    if (!source.IsDefined() || !source.IsScalar() || source.Scalar().empty()) {
      fail(file, e, path + ".source", "every profile value needs a source");
    }
    const YAML::Node value = e["value"];
    if (!value.IsDefined() || value.IsNull()) fail(file, e, path + ".value", "missing");
    const int line = e.Mark().line >= 0 ? e.Mark().line + 1 : 0;
    out.set({key, scalar_text(file, value, path + ".value"), source.Scalar(), line});
  }
}

}  // namespace job_detail
}  // namespace projector
