// Back-end adapters and their registry. A back-end adapter reads one training framework's
// configuration namespace (Megatron arguments, torchtitan's JobConfig; MaxText and TorchRec next)
// and turns it into the neutral JobDraft that the job builder finalizes (job/builder.h). The
// experiment format in front of it (Primus' modules / presets / overrides, frontend/primus/) and
// the overrides after it (PRIMUS_* environment, CLI flags) are shared by every back-end.
//
// Adding a back-end: one adapter (a BackendAdapter subclass registered below), its key schema
// (data/frameworks/keys/<name>.txt), its framework profile (data/frameworks/<name>.yaml), tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "projector/frontend/config_value.h"
#include "projector/job/draft.h"
#include "projector/job/spec.h"

namespace projector {

// The keys of a back-end, in three classes (issue 12): modelled (the adapter reads them, or the
// projection already assumes what they select: silent), not modelled (legal, and they change the
// job, but the projection ignores them: a warning saying what that means, unless the value is one
// that changes nothing) and known (legal and irrelevant to memory and time: logging, data,
// checkpoints, ...: silent). Anything else is unknown: a warning with the nearest known key, or an
// error in strict mode.
enum class KeyClass : std::uint8_t { kUnknown, kModelled, kNotModelled, kKnown };

struct NotModelledKey {
  std::vector<std::string> inert_values;  // lower-case texts that change nothing ("false", "1")
  std::string meaning;                    // what ignoring the key means for the result
};

class KeySchema {
 public:
  KeySchema() = default;
  // Every key modelled (a plain list, as a schema file without sections gives).
  explicit KeySchema(std::vector<std::string> keys);
  KeyClass classify(std::string_view key) const;
  bool known(std::string_view key) const { return classify(key) != KeyClass::kUnknown; }
  // The inert values and the meaning of a not-modelled key; nullptr for other classes.
  const NotModelledKey* not_modelled(std::string_view key) const;
  // The known key nearest by edit distance, when the key is plausibly a misspelling of it (at
  // most a third of it differs); empty otherwise.
  std::string nearest(std::string_view key) const;
  // "file:line: unknown key 'k' (ignored)[; did you mean 'n'?]" for a key the schema lacks.
  // `noun` names the key kind ("key", "MaxText key").
  std::string unknown_key_warning(const std::string& key, const SourceLocation& where,
                                  std::string_view noun = "key") const;
  const std::vector<std::string>& keys() const { return keys_; }  // every known key, sorted

  void add(std::string key, KeyClass cls, NotModelledKey info = {});

 private:
  std::vector<std::string> keys_;                                     // sorted, unique
  std::vector<KeyClass> classes_;                                     // parallel to keys_
  std::vector<std::pair<std::string, NotModelledKey>> not_modelled_;  // sorted by key
};
// One key per line, '#' comments; `[modelled]`, `[not_modelled]` and `[known]` start sections
// (keys before any section are modelled). A not-modelled line reads
// `key = inert, values : what ignoring it means`. A key listed in several sections keeps the
// first class. InputError when the file cannot be read or a line is malformed.
KeySchema load_key_schema(const std::string& path);
// The schema of back-end `name`: <data_dir>/frameworks/keys/<name>.txt.
KeySchema load_backend_key_schema(const std::string& data_dir, std::string_view name);

// The one unknown-key check of every adapter: each key of `keys` (once) that `schema` does not
// know gives "file:line: unknown <noun> 'k' (ignored); did you mean 'n'?"; past
// kMaxListedUnknownKeys they are only counted (one summary line at `summary_at`), so a file of
// thousands of unknown keys costs no location lookup or suggestion search per key. With `strict`
// (--strict) the first unknown key is an InputError at its location instead.
struct UnknownKeyCheck {
  const KeySchema& schema;
  std::function<SourceLocation(const std::string&)> locate;  // where the user wrote a key
  SourceLocation summary_at;
  bool strict = false;
  std::string_view noun = "key";
};
std::vector<std::string> unknown_key_warnings(const std::vector<std::string>& keys,
                                              const UnknownKeyCheck& check);
// The same with the locations read from `args`.
std::vector<std::string> unknown_key_warnings(const ConfigValue& args,
                                              const std::vector<std::string>& user_keys,
                                              const KeySchema& schema, bool strict = false);
// Unknown-key warnings are listed up to this many (real Primus configs have up to 34); the rest
// are counted (a file of thousands of unknown keys gets one summary line, and no suggestion search
// per key).
inline constexpr std::size_t kMaxListedUnknownKeys = 100;
// "<where>: N more unknown keys (ignored)" when `more` > 0.
void add_unknown_key_summary(std::vector<std::string>& warnings, std::size_t more,
                             const SourceLocation& where);

// What a back-end adapter reads: the trainer namespace the experiment format resolved.
struct AdapterInput {
  ConfigValue args;  // a map: the back-end's keys -> values (file:line kept); normalized in place
  std::vector<std::string> user_keys;  // keys the user wrote (the only ones checked for typos)
  std::string source;                  // the experiment file
  std::string model_name;              // the model preset's name, or "(inline)"
  FrameworkProfile profile;            // the framework whose defaults apply
  std::string data_dir;                // catalogues (key schemas, presets)
  // The installed back-end to read tables from (--backend-path, else BACKEND_PATH; empty: none)
  // and the Primus checkout (--primus-path / PRIMUS_PATH; empty: none).
  std::string backend_path;
  std::string primus_path;
  std::string framework_version;  // --framework-version (LoadRequest); empty: not given
  std::string module_preset;      // the module preset file read (checkout or bundled copy), if any
  EnvLookup env;                  // environment (PRIMUS_MAXTEXT_PATH, ...); empty: none
  std::vector<AppliedDefault> defaults;
  std::vector<std::string> warnings;
  bool strict_keys = false;  // an unknown key is an InputError instead of a warning
};

// The draft every adapter's normalize starts from: the input's source, profile, defaults and
// warnings.
JobDraft start_draft(const AdapterInput& in);

class BackendAdapter {
 public:
  virtual ~BackendAdapter() = default;
  // The `framework:` value that selects it ("megatron") and its other spellings.
  virtual std::string_view name() const = 0;
  virtual std::vector<std::string> aliases() const = 0;
  // The profile of this back-end's defaults: for a Primus experiment or for its own config files.
  virtual std::string_view profile(bool primus_experiment) const = 0;
  // Where a Primus checkout keeps this back-end's presets: primus/configs/{modules,models}/<dir>.
  virtual std::string_view preset_dir() const = 0;
  virtual KeySchema key_schema(const std::string& data_dir) const = 0;
  // Whether a flat configuration file (no Primus `modules:`) is this back-end's own format, e.g.
  // a MaxText YAML; flat files nobody claims are read as Megatron arguments.
  virtual bool recognizes(const ConfigValue& /*flat_config*/) const { return false; }
  // Whether `projector sweep` explores this back-end's own FSDP2 layout space (dp_shard x
  // dp_replicate, its pipeline schedules and AC modes) rather than Megatron's (DP with the
  // distributed optimizer, interleaved VPP, selective recompute modules).
  virtual bool sweeps_fsdp2_layouts() const { return false; }
  // Rewrites `input.args` into the adapter's canonical keys (aliases folded) and reads the draft
  // from them. Idempotent: normalizing an already normalized input changes nothing and gives the
  // same draft, so a caller may rewrite the normalized namespace and normalize again. Throws
  // InputError naming the key and file:line of a bad value.
  virtual JobDraft normalize(AdapterInput& input) const = 0;
};

// Adapters by name and alias. Immutable once built; no process-wide mutable state.
class AdapterRegistry {
 public:
  // InputError when the name or an alias is taken.
  void add(std::shared_ptr<const BackendAdapter> adapter);
  // By name or alias (case-insensitive); nullptr when none.
  const BackendAdapter* find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::shared_ptr<const BackendAdapter>> adapters_;
};

void register_backend_adapter(AdapterRegistry& registry,
                              std::shared_ptr<const BackendAdapter> adapter);

// The adapters that ship with projector (Megatron). Out-of-tree code copies it, registers its own
// adapter and passes the copy in LoadRequest::adapters.
const AdapterRegistry& builtin_adapters();

}  // namespace projector
