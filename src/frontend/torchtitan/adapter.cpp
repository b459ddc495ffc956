// The torchtitan back-end adapter (frontend/torchtitan/adapter.h).
#include "frontend/torchtitan/adapter.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

namespace projector::frontend_detail {
namespace {

// Sections whose keys the projection never reads (logging, data, checkpoints, ...).
bool ignored_leaf(const KeySchema& schema, const std::string& dotted) {
  if (schema.known(dotted)) return true;
  for (std::size_t dot = dotted.find('.'); dot != std::string::npos;
       dot = dotted.find('.', dot + 1)) {
    if (schema.known(dotted.substr(0, dot) + ".*")) return true;
  }
  return false;
}

// Dotted keys of the leaves the user wrote (the experiment file or --set; not the presets).
void user_leaves(const ConfigValue& v, const std::string& prefix, const AdapterInput& in,
                 std::vector<std::pair<std::string, SourceLocation>>& out) {
  if (v.is_map()) {
    for (const auto& [k, child] : v.entries) {
      user_leaves(child, prefix.empty() ? k : prefix + "." + k, in, out);
    }
    return;
  }
  if (v.where.file == in.source || v.where.file == "--set") out.emplace_back(prefix, v.where);
}

void warn_unknown_keys(const AdapterInput& in, const KeySchema& schema, JobDraft& d) {
  std::vector<std::pair<std::string, SourceLocation>> leaves;
  user_leaves(in.args, "", in, leaves);
  std::vector<std::string> keys;
  std::map<std::string, SourceLocation> where;
  for (const auto& [key, loc] : leaves) {
    // Architecture keys under `model:` are checked against the flavor's arguments (model.cpp).
    if (key.starts_with("model.") || ignored_leaf(schema, key)) continue;
    keys.push_back(key);
    where.emplace(key, loc);
  }
  const auto locate = [&where](const std::string& key) { return where.at(key); };
  const UnknownKeyCheck check{schema, locate, SourceLocation{in.source, 0, 0}, in.strict_keys};
  for (std::string& w : unknown_key_warnings(keys, check)) d.warnings.push_back(std::move(w));
}

void name_fields(const TitanReader& r, JobDraft& d) {
  const std::pair<DraftField, const char*> keys[] = {
      {DraftField::kModel, "model.flavor"},
      {DraftField::kTp, "parallelism.tensor_parallel_degree"},
      {DraftField::kPp, "parallelism.pipeline_parallel_degree"},
      {DraftField::kVpp, "parallelism.pipeline_parallel_layers_per_stage"},
      {DraftField::kCp, "parallelism.context_parallel_degree"},
      {DraftField::kEp, "parallelism.expert_parallel_degree"},
      {DraftField::kEtp, "parallelism.expert_tensor_parallel_degree"},
      {DraftField::kLayerSplit, "parallelism.pipeline_parallel_degree"},
      {DraftField::kDistributedOptimizer, "parallelism.data_parallel_shard_degree"},
      {DraftField::kTpCommOverlap, "parallelism.enable_async_tensor_parallel"},
      {DraftField::kFsdp, "parallelism.data_parallel_shard_degree"},
      {DraftField::kMicroBatchSize, "training.local_batch_size"},
      {DraftField::kGlobalBatchSize, "training.global_batch_size"},
      {DraftField::kSeqLength, "training.seq_len"},
      {DraftField::kFlashAttention, "model.flavor"},
      {DraftField::kFp8Recipe, "quantize.linear.float8.recipe_name"},
      {DraftField::kGradReduceDtype, "training.mixed_precision_reduce"},
      {DraftField::kAttentionDropout, "model.flavor"},
      {DraftField::kHiddenDropout, "model.flavor"},
      {DraftField::kVocabPadding, "model.flavor"},
      {DraftField::kRecompute, "activation_checkpoint.mode"},
      {DraftField::kRecomputeModules, "activation_checkpoint.selective_ac_option"},
      {DraftField::kSchedule, "parallelism.pipeline_parallel_schedule"},
      {DraftField::kHardware, "hardware"},
      {DraftField::kNodes, "nodes"},
      {DraftField::kGpusPerNode, "gpus_per_node"},
      {DraftField::kDp, "parallelism.data_parallel_shard_degree"}};
  for (const auto& [field, key] : keys) {
    d.set_origin(field, key, r.stated(key) != nullptr ? r.where(key) : SourceLocation{});
  }
}

// Moves `from` (a legacy section) under `to` when `to` is not stated.
void fold_section(ConfigValue& args, const char* from, const char* section, const char* leaf) {
  ConfigValue* old = args.find(from);
  if (old == nullptr || !old->is_map()) return;
  ConfigValue moved = *old;
  args.erase(from);
  ConfigValue* q = args.find(section);
  if (q == nullptr || !q->is_map()) {
    args.set(section, ConfigValue::make_map(moved.where));
    q = args.find(section);
  }
  ConfigValue* lin = q->find("linear");
  if (lin == nullptr || !lin->is_map()) {
    q->set("linear", ConfigValue::make_map(moved.where));
    lin = q->find("linear");
  }
  if (ConfigValue* existing = lin->find(leaf); existing != nullptr && existing->is_map()) {
    ConfigValue merged = moved;
    deep_merge(merged, *existing);  // the v0.2.x spelling wins
    lin->set(leaf, merged);
  } else {
    lin->set(leaf, moved);
  }
}

}  // namespace

void normalize_torchtitan_args(ConfigValue& args) {
  fold_section(args, "float8", "quantize", "float8");
  fold_section(args, "mx", "quantize", "mx");
  ConfigValue* model = args.find("model");
  if (model == nullptr || !model->is_map()) return;
  ConfigValue* conv = model->find("converters");
  if (conv == nullptr) return;
  auto rename = [](ConfigValue& item) {
    if (item.kind != ConfigValue::Kind::kString) return;
    if (item.s == "float8") item.s = "quantize.linear.float8";
    if (item.s == "mx") item.s = "quantize.linear.mx";
  };
  if (conv->is_list()) {
    for (ConfigValue& item : conv->items) rename(item);
  } else if (conv->kind == ConfigValue::Kind::kString && !conv->s.empty()) {
    // torchtitan's CLI form "a,b": a list.
    ConfigValue list;
    list.kind = ConfigValue::Kind::kList;
    list.where = conv->where;
    std::size_t start = 0;
    while (start <= conv->s.size()) {
      const std::size_t comma = std::min(conv->s.find(',', start), conv->s.size());
      std::string item = conv->s.substr(start, comma - start);
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (!item.empty()) list.items.push_back(ConfigValue::make_string(item, conv->where));
      start = comma + 1;
    }
    for (ConfigValue& item : list.items) rename(item);
    *conv = list;
  }
}

std::string torchtitan_checkout(const AdapterInput& in) {
  for (const std::string& p :
       {in.backend_path,
        in.primus_path.empty()
            ? std::string()
            : (std::filesystem::path(in.primus_path) / "third_party" / "torchtitan").string()}) {
    const std::string pkg = torchtitan_package_dir(p);
    if (!pkg.empty()) return pkg;
  }
  return "";
}

KeySchema TorchtitanAdapter::key_schema(const std::string& data_dir) const {
  return load_backend_key_schema(data_dir, name());
}

JobDraft TorchtitanAdapter::normalize(AdapterInput& in) const {
  // The version the job is read as: keys that moved are read where that version had them, and
  // keys whose meaning changed as that version meant them.
  std::vector<std::string> version_warnings;
  const TitanVersions versions = load_titan_versions(in.data_dir);
  const TitanVersion version = resolve_titan_version(in, versions, version_warnings);
  std::vector<TitanReading> renamed;
  apply_titan_renames(in.args, versions, version, renamed, version_warnings);
  normalize_torchtitan_args(in.args);
  JobDraft d = start_draft(in);
  for (std::string& w : version_warnings) d.warnings.push_back(std::move(w));
  warn_unknown_keys(in, key_schema(in.data_dir), d);
  const TitanDefaults defaults = load_titan_defaults(in.data_dir);
  TitanOrigins origins;
  origins.torchtitan_profile = "torchtitan";
  if (in.profile.name != "torchtitan") {
    origins.primus_profile = in.profile.name;
    origins.module_preset = in.module_preset;
  }
  TitanReader r(in.args, defaults, origins, d.defaults);
  name_fields(r, d);
  r.note("framework_version", "torchtitan " + version.label, version.origin);
  for (const TitanReading& n : renamed) r.note(n.key, n.value, n.origin);
  TitanModelFacts facts;
  d.model = read_torchtitan_model(r, in, d, facts);
  read_torchtitan_parallel(r, facts, TitanKeyVersion{versions, version}, d);
  read_torchtitan_runtime(r, facts, d);
  return d;
}

}  // namespace projector::frontend_detail
