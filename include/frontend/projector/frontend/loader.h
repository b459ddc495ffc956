// The front-end: Primus experiment YAML (+ environment, --set, CLI flags) -> JobSpec.
//
//   resolve_config (frontend/primus/)   the experiment, its presets, `--set`: the trainer namespace
//   back-end adapter (frontend/<name>/) selected by modules.<trainer>.framework: -> JobDraft
//   overrides (frontend/primus/)        PRIMUS_* environment, then CLI flags, on the neutral draft
//   finalize_job (job/builder.h)        derive, apply the framework profile, check the rules
//
// Merge order (later wins): module preset (`config:`, from a Primus checkout, else the bundled copy
// in data/frameworks/primus/) with the model preset (`model:`) filling only keys the module preset
// does not define; other keys of the module entry; `overrides:`; `--set key=value`; then, on the
// draft, environment overrides (PRIMUS_TP, ...; a value given with --set wins) and CLI flags.
// A `.toml` config is a torchtitan job file (its JobConfig sections) read by the torchtitan
// adapter with torchtitan's own defaults.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projector/frontend/adapter.h"
#include "projector/frontend/config_value.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

// First-class CLI flags (--tp, --mbs, ...). Unset members leave the config value alone.
struct CliOverrides {
  std::optional<int> tp, pp, vpp, cp, ep, etp;
  std::optional<int> nodes, gpus_per_node;
  std::optional<int> micro_batch_size, global_batch_size, seq_length;
  std::optional<bool> enable_zero_bubble;
  std::optional<bool> enable_deepep;
  std::optional<int> sync_free_stage;
  // Measured routing imbalance: coefficient of variation of the tokens per expert (e.g. from the
  // router's tokens_per_expert counts in a profile); 0 = balanced.
  std::optional<double> moe_expert_load_cv;
  std::optional<std::string> pipeline_schedule;  // auto, 1f1b, interleaved, zerobubble, zbv-*, ...
  // PyTorch allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax ("expandable_segments:True").
  std::optional<std::string> alloc_conf;
};

struct LoadRequest {
  std::string config_path;  // experiment YAML
  std::string data_dir;     // bundled catalogues; empty: default_data_dir()
  std::string primus_path;  // Primus checkout; empty: PRIMUS_PATH from `env`, else none
  // The installed back-end's source (torchtitan: its flavor tables); empty: BACKEND_PATH from
  // `env`, else <Primus>/third_party/<back-end>, else the transcribed tables in data/.
  std::string backend_path;
  // The back-end's version (--framework-version; torchtitan: a tag such as v0.1.0 or the date of a
  // main-branch commit); empty: a version the config states, else the checkout's, else the
  // adapter's current one.
  std::string framework_version;
  EnvLookup env;  // environment; empty: none (tests) — the CLI passes the real one
  std::vector<std::string> set_overrides;  // "key=value" (dotted keys reach into nested maps)
  CliOverrides cli;
  std::string hardware;         // --hardware NAME|FILE or --gpu-arch; empty: PRIMUS_GPU_ARCH
  std::string hardware_config;  // Primus hardware_config YAML (network); empty: accelerator's
  bool allow_tp_beyond_node = false;
  bool strict_keys = false;                   // --strict: an unknown config key is an error
  const AdapterRegistry* adapters = nullptr;  // nullptr: builtin_adapters()
};

// The merged trainer namespace (Megatron arguments for the Megatron back-end), before
// interpretation.
struct ResolvedConfig {
  std::string source;              // the experiment file
  std::string framework;           // the back-end adapter's name (modules.<trainer>.framework)
  bool primus_experiment = false;  // a Primus experiment (modules:), not a flat argument file
  std::string model_preset_path;   // empty when the config names no model preset
  std::string module_preset_path;
  std::string bundled_preset_path;  // the bundled copy read instead of a checkout's preset
  ConfigValue args;                 // a map: argument name -> value (with file:line)
  // Keys the user wrote (experiment file, --set, flags): only these are checked for typos, since
  // presets carry many keys that are irrelevant to a projection.
  std::vector<std::string> user_keys;
  std::vector<AppliedDefault> defaults;
  std::vector<std::string> warnings;
};

// Reads and merges the experiment; no interpretation of values yet. An unknown
// `framework:` is an InputError listing the registered back-ends.
ResolvedConfig resolve_config(const LoadRequest& request);

// A TOML file (torchtitan job configs) as a tree with file:line on every value. InputError naming
// the file and line for malformed TOML.
ConfigValue parse_toml_file(const std::string& path);

// Megatron arguments -> ModelSpec (every default applied is appended to `defaults`).
// `data_dir`: the catalogue (the tokenizer table for presets that name no vocabulary size).
ModelSpec build_model(const ConfigValue& args, const std::string& data_dir,
                      std::vector<AppliedDefault>& defaults, std::vector<std::string>& warnings);

// The neutral draft of a resolved config: its back-end adapter's reading, then the environment
// and CLI overrides.
JobDraft build_job_draft(const ResolvedConfig& config, const LoadRequest& request);

// The whole job (model, parallel, runtime, cluster), derived and checked by the job builder.
// Throws InputError naming file, line and key for inconsistent input. Loads the hardware.
JobSpec build_job_spec(const ResolvedConfig& config, const LoadRequest& request);

// resolve_config + build_job_spec.
JobSpec load_job(const LoadRequest& request);

// Model catalogue (data/models/*.yaml).
std::vector<std::string> list_model_presets(const std::string& data_dir);
// Path of a model preset: <primus>/primus/configs/models/megatron/ first (what Primus launches),
// then the bundled catalogue. `name` may omit ".yaml". Throws InputError (suggesting the nearest
// name) if unknown. Another back-end's presets (`preset_dir` != "megatron", e.g. "maxtext") are
// looked up in <primus>/primus/configs/models/<preset_dir>/, then in the bundled copy
// data/frameworks/primus/models/<preset_dir>/, never in the Megatron catalogue.
std::string find_model_preset(const std::string& name, const std::string& data_dir,
                              const std::string& primus_path, const SourceLocation& where = {},
                              std::string_view preset_dir = "megatron");
// A preset on its own (for `projector models show`).
ModelSpec load_model_preset(const std::string& name, const std::string& data_dir,
                            const std::string& primus_path = "",
                            std::vector<AppliedDefault>* defaults = nullptr);
// The `source:` citation of a bundled preset (empty if none).
std::string model_preset_source(const std::string& name, const std::string& data_dir);

// Levenshtein distance (exposed for tests and for nearest-name suggestions elsewhere).
int edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `name` when it is plausibly a misspelling of it (at most a third of
// the name, and at least 2 characters, differ), else the longest candidate the name extends
// (case-insensitive, 4 characters or more); "" otherwise: a "did you mean" must be close.
std::string nearest_misspelling(std::string_view name, const std::vector<std::string>& candidates);

// The vocabulary of a tokenizer (tokenizer_model, else tokenizer_type) from the table
// data/frameworks/tokenizers/vocab_sizes.yaml of `data_dir`, with the row's source; nullopt if
// unknown.
struct TokenizerVocab {
  std::int64_t vocab_size = 0;
  std::string source;
};
std::optional<TokenizerVocab> tokenizer_vocab_size(const std::string& tokenizer_type,
                                                   const std::string& tokenizer_model,
                                                   const std::string& data_dir);

}  // namespace projector
