// The MaxText back-end adapter (frontend/maxtext/adapter.h): MaxText's configuration merge and
// typed reading with base.yml's defaults.
#include "frontend/maxtext/adapter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "projector/frontend/loader.h"

namespace projector::frontend_detail {
namespace {

namespace fs = std::filesystem;

// MaxText's configs directory in a checkout: the src/maxtext layout (2026), src/MaxText (2025) or
// MaxText/ (2023-2024).
std::string checkout_configs(const std::string& root) {
  std::error_code ec;
  for (const char* sub :
       {"src/maxtext/configs", "src/MaxText/configs", "MaxText/configs", "configs"}) {
    const fs::path dir = fs::path(root) / sub;
    if (fs::is_regular_file(dir / "base.yml", ec)) return dir.string();
  }
  return "";
}

// PRIMUS_MAXTEXT_PATH, else the MaxText submodule of the Primus checkout.
std::string find_checkout(const AdapterInput& in, JobDraft& d) {
  if (in.env) {
    if (const auto p = in.env("PRIMUS_MAXTEXT_PATH"); p && !p->empty()) {
      const std::string dir = checkout_configs(*p);
      if (dir.empty()) {
        d.warnings.push_back(fmt::format(
            "PRIMUS_MAXTEXT_PATH={}: no MaxText configs/base.yml found there; using the bundled "
            "transcription (data/frameworks/maxtext)",
            *p));
      }
      return dir;
    }
  }
  if (!in.primus_path.empty()) return checkout_configs(in.primus_path + "/third_party/maxtext");
  return "";
}

std::string model_file(const std::string& configs, const std::string& data_dir,
                       const std::string& name) {
  std::error_code ec;
  if (!configs.empty()) {
    const fs::path p = fs::path(configs) / "models" / (name + ".yml");
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  const fs::path bundled = fs::path(data_dir) / "frameworks/maxtext/models" / (name + ".yml");
  return fs::is_regular_file(bundled, ec) ? bundled.string() : "";
}

std::vector<std::string> bundled_models(const std::string& data_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e :
       fs::directory_iterator(fs::path(data_dir) / "frameworks/maxtext/models", ec)) {
    if (e.path().extension() == ".yml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_none(const ConfigValue* v) {
  return v == nullptr || v->is_null() ||
         (v->kind == ConfigValue::Kind::kString && (v->s == "None" || v->s == "none"));
}

bool same_value(const ConfigValue& a, const ConfigValue& b) {
  return a.to_text() == b.to_text();
}

// The command-line overrides: `--set` values and Primus' override_model.* (both kwargs to
// pyconfig.initialize, which beat the model config).
ConfigValue overrides_of(const ConfigValue& args) {
  ConfigValue out = ConfigValue::make_map();
  for (const auto& [k, v] : args.entries) {
    if (v.where.file == "--set" && k != "override_model") out.set(k, v);
  }
  if (const ConfigValue* om = args.find("override_model"); om != nullptr && om->is_map()) {
    for (const auto& [k, v] : om->entries) out.set(k, v);
  }
  return out;
}

void warn_unknown(const AdapterInput& in, const KeySchema& schema, JobDraft& d) {
  const auto locate = [&in](const std::string& key) {
    const ConfigValue* v = in.args.find(key);
    return v != nullptr ? v->where : SourceLocation{};
  };
  const UnknownKeyCheck check{schema, locate, in.args.where, in.strict_keys, "MaxText key"};
  for (std::string& w : unknown_key_warnings(in.user_keys, check)) {
    d.warnings.push_back(std::move(w));
  }
}

void name_fields(JobDraft& d, MaxTextReader& r) {
  const std::pair<DraftField, const char*> keys[] = {
      {DraftField::kModel, "model_name"},
      {DraftField::kTp, "ici_tensor_parallelism"},
      {DraftField::kPp, "ici_pipeline_parallelism"},
      {DraftField::kCp, "ici_context_parallelism"},
      {DraftField::kEp, "ici_expert_parallelism"},
      {DraftField::kEtp, "ici_tensor_parallelism"},
      {DraftField::kFsdp, "ici_fsdp_parallelism"},
      {DraftField::kSequenceParallel, "ici_tensor_parallelism"},
      {DraftField::kMicroBatchSize, "per_device_batch_size"},
      {DraftField::kGlobalBatchSize, "per_device_batch_size"},
      {DraftField::kSeqLength, "max_target_length"},
      {DraftField::kFlashAttention, "attention"},
      {DraftField::kFp8Recipe, "quantization"},
      {DraftField::kGradReduceDtype, "grad_dtype"},
      {DraftField::kAttentionDropout, "dropout_rate"},
      {DraftField::kHiddenDropout, "dropout_rate"},
      {DraftField::kVocabPadding, "vocab_size"},
      {DraftField::kRecompute, "remat_policy"},
      {DraftField::kRecomputeModules, "remat_policy"},
      {DraftField::kLossGradInPlace, "loss_grad_in_place"},
      {DraftField::kSchedule, "num_pipeline_microbatches"},
      {DraftField::kHardware, "hardware"},
      {DraftField::kNodes, "nodes"},
      {DraftField::kGpusPerNode, "gpus_per_node"},
      {DraftField::kMesh, "ici_fsdp_parallelism"},
      {DraftField::kLayerSplit, "num_layers_per_pipeline_stage"},
      {DraftField::kDistributedOptimizer, "shard_optimizer_over_data"}};
  for (const auto& [field, key] : keys) {
    d.set_origin(field, key, r.stated(key) ? r.where(key) : SourceLocation{});
  }
}

}  // namespace

KeySchema MaxTextAdapter::key_schema(const std::string& data_dir) const {
  return load_key_schema((fs::path(data_dir) / "frameworks" / "keys" / "maxtext.txt").string());
}

bool MaxTextAdapter::recognizes(const ConfigValue& flat) const {
  if (!flat.is_map()) return false;
  for (const char* key : {"base_config", "per_device_batch_size", "model_name", "decoder_block",
                          "remat_policy", "base_emb_dim"}) {
    if (flat.find(key) != nullptr) return true;
  }
  for (const auto& [k, v] : flat.entries) {
    if (maxtext::parse_mesh_key(k)) return true;
  }
  return false;
}

namespace {

// MaxText before 975c3e83 ("Unified Attention", 2023-12-22) stated one head count, base_num_heads,
// for queries and keys / values alike (MX1 base.yml:48 at 76bd53b0f); it became
// base_num_query_heads and base_num_kv_heads. A config of that era is read as MaxText read it.
void read_head_count_of_2023(AdapterInput& in, JobDraft& d) {
  ConfigValue& args = in.args;
  const ConfigValue* old = args.find("base_num_heads");
  if (old == nullptr) return;
  const ConfigValue heads = *old;
  if (args.find("base_num_query_heads") != nullptr) {
    throw InputError(heads.where, "base_num_heads",
                     "MaxText's head count before 975c3e83 (2023-12-22), stated beside "
                     "base_num_query_heads, its later name: state one");
  }
  args.erase("base_num_heads");
  std::erase(in.user_keys, "base_num_heads");  // read, not unknown
  const std::string why =
      "base_num_heads = " + heads.to_text() +
      ": MaxText's one head count for queries and keys / values before 975c3e83 (2023-12-22)";
  args.set("base_num_query_heads", heads);
  d.defaults.push_back({"base_num_query_heads", heads.to_text(), why, ""});
  if (args.find("base_num_kv_heads") == nullptr) {
    args.set("base_num_kv_heads", heads);
    d.defaults.push_back({"base_num_kv_heads", heads.to_text(), why, ""});
  }
}

}  // namespace

MaxTextConfig merge_maxtext_config(AdapterInput& in, JobDraft& d) {
  MaxTextConfig cfg;
  const std::string configs = find_checkout(in, d);
  cfg.from_checkout = !configs.empty();
  cfg.base_file = cfg.from_checkout
                      ? configs + "/base.yml"
                      : (fs::path(in.data_dir) / "frameworks/maxtext/base.yml").string();
  cfg.base = parse_yaml_file(cfg.base_file, EnvLookup{});
  const ConfigValue* name_v = in.args.find("model_name");
  if (is_none(name_v)) name_v = cfg.base.find("model_name");
  std::string name = name_v != nullptr && name_v->is_scalar() ? name_v->to_text() : "default";
  if (const std::size_t i = name.find("-Instruct"); i != std::string::npos) name.erase(i, 9);
  const ConfigValue overrides = overrides_of(in.args);
  if (name != "default") {
    cfg.model_file = model_file(configs, in.data_dir, name);
    if (cfg.model_file.empty()) {
      throw InputError(name_v != nullptr ? name_v->where : SourceLocation{in.source, 0, 0},
                       "model_name",
                       fmt::format("no MaxText model config '{}' ({}bundled: {})", name,
                                   configs.empty() ? "no MaxText checkout (PRIMUS_MAXTEXT_PATH); "
                                                   : "not in " + configs + "/models; ",
                                   fmt::join(bundled_models(in.data_dir), ", ")));
    }
    const ConfigValue model = parse_yaml_file(cfg.model_file, EnvLookup{});
    const ConfigValue* omc = in.args.find("override_model_config");
    const bool override_ok = omc != nullptr && omc->kind == ConfigValue::Kind::kBool && omc->b;
    for (const auto& [k, v] : model.entries) {
      if (const ConfigValue* o = overrides.find(k)) {
        if (!override_ok && !same_value(*o, v)) {
          throw InputError(o->where, k,
                           fmt::format("overridden by both the model config {} and the command "
                                       "line with different values; MaxText allows it only with "
                                       "override_model_config: true",
                                       cfg.model_file));
        }
        continue;
      }
      in.args.set(k, v);  // the model config beats the config file (pyconfig.py merge order)
    }
  }
  for (const auto& [k, v] : overrides.entries) in.args.set(k, v);
  read_head_count_of_2023(in, d);
  return cfg;
}

const ConfigValue* MaxTextReader::get(const std::string& key) {
  const ConfigValue* v = args_.find(key);
  if (!is_none(v)) return v;
  if (v != nullptr && !v->is_null()) return nullptr;  // stated "None"
  const ConfigValue* b = cfg_.base.find(key);
  if (is_none(b)) return nullptr;
  if (recorded_.insert(key).second) {
    d_.defaults.push_back(
        {key, b->to_text(),
         fmt::format("MaxText base.yml default ({}:{})", b->where.file, b->where.line), ""});
  }
  return b;
}

const ConfigValue* MaxTextReader::base_value(const std::string& key) const {
  const ConfigValue* b = cfg_.base.find(key);
  return is_none(b) ? nullptr : b;
}

bool MaxTextReader::stated(const std::string& key) const {
  return !is_none(args_.find(key));
}

SourceLocation MaxTextReader::where(const std::string& key) const {
  if (const ConfigValue* v = args_.find(key)) return v->where;
  if (const ConfigValue* b = cfg_.base.find(key)) return b->where;
  return args_.where;
}

void MaxTextReader::fail(const std::string& key, const std::string& message) const {
  throw InputError(where(key), key, message);
}

std::int64_t MaxTextReader::integer(const std::string& key, std::int64_t fallback) {
  const ConfigValue* v = get(key);
  if (v == nullptr) return fallback;
  std::string error;
  if (const std::optional<std::int64_t> n = bounded_integer(*v, error)) return *n;
  fail(key, error);
}

double MaxTextReader::number(const std::string& key, double fallback) {
  const ConfigValue* v = get(key);
  if (v == nullptr) return fallback;
  if (v->kind == ConfigValue::Kind::kFloat && std::isfinite(v->f)) return v->f;
  if (v->kind == ConfigValue::Kind::kInt) return static_cast<double>(v->i);
  if (v->kind == ConfigValue::Kind::kString) {
    char* end = nullptr;
    const double x = std::strtod(v->s.c_str(), &end);
    if (end != v->s.c_str() && *end == '\0' && std::isfinite(x)) return x;
  }
  fail(key, fmt::format("expected a finite number, got '{}'", v->to_text()));
}

bool MaxTextReader::boolean(const std::string& key, bool fallback) {
  const ConfigValue* v = get(key);
  if (v == nullptr) return fallback;
  if (v->kind == ConfigValue::Kind::kBool) return v->b;
  if (v->kind == ConfigValue::Kind::kString) {
    if (v->s == "True" || v->s == "true") return true;
    if (v->s == "False" || v->s == "false") return false;
  }
  if (v->kind == ConfigValue::Kind::kInt && (v->i == 0 || v->i == 1)) return v->i == 1;
  fail(key, fmt::format("expected true or false, got '{}'", v->to_text()));
}

std::string MaxTextReader::text(const std::string& key, const std::string& fallback) {
  const ConfigValue* v = get(key);
  if (v == nullptr) return fallback;
  if (!v->is_scalar()) fail(key, fmt::format("expected a single value, got '{}'", v->to_text()));
  return v->kind == ConfigValue::Kind::kString ? v->s : v->to_text();
}

std::vector<std::string> MaxTextReader::list(const std::string& key) {
  const ConfigValue* v = get(key);
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (v->is_scalar()) {
    out.push_back(v->kind == ConfigValue::Kind::kString ? v->s : v->to_text());
    return out;
  }
  if (!v->is_list()) fail(key, "expected a list");
  for (const ConfigValue& item : v->items) {
    if (!item.is_scalar()) fail(key, "expected a list of names");
    out.push_back(item.kind == ConfigValue::Kind::kString ? item.s : item.to_text());
  }
  return out;
}

JobDraft MaxTextAdapter::normalize(AdapterInput& in) const {
  JobDraft d;
  d.source = in.source;
  d.profile = in.profile;
  d.defaults = in.defaults;
  d.warnings = in.warnings;
  const MaxTextConfig cfg = merge_maxtext_config(in, d);
  warn_unknown(in, key_schema(in.data_dir), d);
  MaxTextReader r(in.args, cfg, d);
  name_fields(d, r);
  read_maxtext_model(r, d);
  if (!cfg.model_file.empty()) {
    d.defaults.push_back({"model_name", d.model.name,
                          "architecture from the MaxText model config " + cfg.model_file +
                              (cfg.from_checkout ? " (checkout)" : " (bundled transcription)"),
                          ""});
  } else if (d.model.name.empty() || d.model.name == "default") {
    d.model.name = in.model_name;
  }
  read_maxtext_mesh(r, d);
  read_maxtext_runtime(r, d);
  return d;
}

}  // namespace projector::frontend_detail

namespace projector::maxtext {

ModelSpec model_from_config(const std::string& model_name, const std::string& data_dir,
                            const std::string& maxtext_path) {
  AdapterInput in;
  in.args = ConfigValue::make_map();
  in.args.set("model_name", ConfigValue::make_string(model_name));
  in.data_dir = data_dir;
  in.source = "model_name " + model_name;
  if (!maxtext_path.empty()) {
    in.env = fixed_environment({{"PRIMUS_MAXTEXT_PATH", maxtext_path}});
  }
  JobDraft d;
  const frontend_detail::MaxTextConfig cfg = frontend_detail::merge_maxtext_config(in, d);
  frontend_detail::MaxTextReader r(in.args, cfg, d);
  frontend_detail::read_maxtext_model(r, d);
  return d.model;
}

}  // namespace projector::maxtext
