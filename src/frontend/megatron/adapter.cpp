// The Megatron back-end adapter (frontend/megatron/adapter.h).
#include "frontend/megatron/adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "projector/frontend/loader.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

// Megatron accepts several spellings of a few arguments; the adapter keeps one.
struct Alias {
  const char* from;
  const char* to;
};
constexpr Alias kAliases[] = {
    {"virtual_pipeline_model_parallel_size", "num_virtual_stages_per_pipeline_rank"},
    {"use_custom_fsdp", "use_megatron_fsdp"},
};

std::string location(const SourceLocation& where) {
  return where.file.empty() ? "" : fmt::format("{}:{}: ", where.file, where.line);
}

// Environment-variable names some Primus experiments carry among their overrides (e.g.
// GPU_MAX_HW_QUEUES): Megatron keeps them as unused attributes, so they are known and ignored.
bool environment_name(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Primus' SFT trainer `lora:` block (PR1 modules/megatron/sft_trainer.yaml: enabled false by
// default): with `enabled: true` only the low-rank adapters train, the base weights are frozen.
// The projection does not model that and counts a full fine-tune, so it says so.
void flag_lora(const ConfigValue& args, JobDraft& d) {
  const ConfigValue* lora = args.find("lora");
  if (lora == nullptr || !lora->is_map()) return;
  const ConfigValue* enabled = lora->find("enabled");
  if (enabled == nullptr || enabled->kind != ConfigValue::Kind::kBool || !enabled->b) return;
  d.warnings.push_back(fmt::format(
      "{}lora.enabled = true is not modelled: projected as full fine-tuning, so the frozen base "
      "weights are counted with gradients, optimizer state and weight-gradient GEMMs; a LoRA "
      "job needs less memory and time than shown",
      location(enabled->where)));
}

// Unknown keys the user wrote: a warning naming the nearest known key, or an error in strict
// mode. Not-modelled keys anywhere in the namespace (presets included) whose value changes the
// job: a warning saying what ignoring them means. Modelled and known keys: nothing.
void check_keys(const AdapterInput& in, const KeySchema& schema, JobDraft& d) {
  std::vector<std::string> keys;
  for (const std::string& key : in.user_keys) {
    if (!environment_name(key)) keys.push_back(key);
  }
  for (std::string& w : unknown_key_warnings(in.args, keys, schema, in.strict_keys)) {
    d.warnings.push_back(std::move(w));
  }
  for (const auto& [key, value] : in.args.entries) {
    const NotModelledKey* nm = schema.not_modelled(key);
    if (nm == nullptr || value.is_null()) continue;
    const std::string text = to_lower(value.to_text());
    if (std::find(nm->inert_values.begin(), nm->inert_values.end(), text) !=
        nm->inert_values.end()) {
      continue;
    }
    d.warnings.push_back(fmt::format("{}{} = {} is not modelled: {}", location(value.where), key,
                                     value.to_text(), nm->meaning));
  }
  flag_lora(in.args, d);
}

void name_model_fields(const ArgReader& r, JobDraft& d) {
  const std::pair<DraftField, const char*> keys[] = {
      {DraftField::kAttentionDropout, "attention_dropout"},
      {DraftField::kHiddenDropout, "hidden_dropout"},
      {DraftField::kVocabPadding, "make_vocab_size_divisible_by"},
      {DraftField::kLossGradInPlace, "loss_grad_in_place"},
      {DraftField::kModel, "num_layers"},
      {DraftField::kHardware, "hardware"},
      {DraftField::kNodes, "nodes"},
      {DraftField::kGpusPerNode, "gpus_per_node"}};
  for (const auto& [field, key] : keys) {
    d.set_origin(field, key, r.has(key) ? r.where(key) : SourceLocation{});
  }
  if (r.has("attention_dropout")) d.attention_dropout = d.model.attention_dropout;
  if (r.has("hidden_dropout")) d.hidden_dropout = d.model.hidden_dropout;
  if (r.has("padded_vocab_size") || r.has("make_vocab_size_divisible_by")) {
    d.vocab_padding = d.model.make_vocab_size_divisible_by;
  }
}

// The model keys' locations for the job builder's range checks (JobDraft::model_origin): model
// fields are named after Megatron's arguments, so the lookup is by name, a padded vocabulary
// standing for the vocabulary.
void locate_model_keys(const ConfigValue& args, JobDraft& d) {
  auto located = std::make_shared<std::vector<std::pair<std::string, SourceLocation>>>();
  for (const auto& [k, v] : args.entries) {
    if (!v.is_null()) located->emplace_back(k, v.where);
  }
  d.model_origin = [located](std::string_view key) -> std::optional<FieldOrigin> {
    for (const std::string_view name :
         {key == "vocab_size" ? std::string_view("padded_vocab_size") : key, key}) {
      for (const auto& [k, where] : *located) {
        if (k == name) return FieldOrigin{k, where};
      }
    }
    return std::nullopt;
  };
}

}  // namespace

void normalize_megatron_args(ConfigValue& args) {
  for (const Alias& a : kAliases) {
    ConfigValue* from = args.find(a.from);
    if (from == nullptr) continue;
    const ConfigValue* to = args.find(a.to);
    if (to == nullptr || to->is_null()) args.set(a.to, *from);
    args.erase(a.from);
  }
  // share_embeddings_and_output_weights is the negation of untie_embeddings_and_output_weights.
  if (const ConfigValue* share = args.find("share_embeddings_and_output_weights");
      share != nullptr && share->kind == ConfigValue::Kind::kBool) {
    args.set("untie_embeddings_and_output_weights",
             ConfigValue::make_bool(!share->b, share->where));
    args.erase("share_embeddings_and_output_weights");
  }
}

KeySchema MegatronAdapter::key_schema(const std::string& data_dir) const {
  return load_backend_key_schema(data_dir, name());
}

JobDraft MegatronAdapter::normalize(AdapterInput& in) const {
  normalize_megatron_args(in.args);
  JobDraft d = start_draft(in);
  check_keys(in, key_schema(in.data_dir), d);
  d.model = build_model(in.args, in.data_dir, d.defaults, d.warnings);
  d.model.name = in.model_name;
  ArgReader r(in.args, d.defaults);
  name_model_fields(r, d);
  locate_model_keys(in.args, d);
  read_parallel(r, d.model, d);
  // The layouts a model cannot run (TP / CP / PP over GDN, KDA, short conv, DeepSeek-V4 or Flux)
  // are rules of the job builder (job/rules.h), so --tp / PRIMUS_CP / the sweep obey them too.
  check_kimi_k3_parallel(r, d.model, d);
  if (d.model.diffusion.enabled()) d.vocab_padding = 1;  // proj_out's width is not padded
  read_runtime(r, d.model, d);
  read_primus_fused_loss(r, in.env, d);
  return d;
}

}  // namespace projector::frontend_detail
