// torchtitan's version as a job is read: keys whose meaning or default changed between versions
// (data/frameworks/torchtitan/versions.yaml, each with its pull request) and the version of one
// job, from --framework-version, the config's header comment, the installed checkout or the
// table's current version. Internal to the torchtitan adapter.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "projector/frontend/adapter.h"

namespace projector::frontend_detail {

struct TitanChange {
  std::string key;      // the key as of `since` (training.local_batch_size)
  std::string since;    // merge date on main, YYYY-MM-DD
  std::string old_key;  // its name before (training.batch_size)
  std::optional<std::int64_t> old_default;
  std::string before;  // what the old key meant
  std::string source;
};

// A key that moved: before `since` the job states `old_key` where later versions state `key`.
// `when_true`: the old key was a switch; true means `key` = that list (float8.enable_float8_linear
// -> model.converters [float8]), false means nothing.
struct TitanRename {
  std::string old_key;
  std::string key;
  std::string since;
  std::vector<std::string> when_true;
  std::string source;
};

// A default of a key that differed before `until` (compile.components was [model] before the loss
// was compiled too).
struct TitanOldDefault {
  std::string key;
  std::vector<std::string> value;
  std::string until;
  std::string source;
};

// A key that existed until `until` (model.norm_type).
struct TitanRemoved {
  std::string key;
  std::string until;
  std::string source;
};

struct TitanVersions {
  std::string file;
  std::string current;                                    // v0.2.2
  std::vector<std::pair<std::string, std::string>> tags;  // tag -> date
  std::vector<TitanChange> changes;
  std::vector<TitanRename> renames;
  std::vector<TitanOldDefault> old_defaults;
  std::vector<TitanRemoved> removed;
};
TitanVersions load_titan_versions(const std::string& data_dir);

struct TitanVersion {
  std::string label;   // v0.1.0, 2025-03-10
  std::string date;    // the date it stands for
  std::string origin;  // --framework-version, file:line of the header, the checkout, the table
};
// The version of the job `in` describes. An unknown --framework-version is an InputError; an
// unknown version in the header comment is a warning (added to `warnings`) and not used.
TitanVersion resolve_titan_version(const AdapterInput& in, const TitanVersions& t,
                                   std::vector<std::string>& warnings);

// Reads the keys of `args` as of version `v`: an old key stated on a version before its rename is
// moved to the new key (recorded in `notes` as key -> how it was read); an old key stated on a
// later version is removed with a warning naming the change (the version does not read it); an
// old default applies where the key is unstated. A job stating both the old and the new key is an
// InputError.
struct TitanReading {
  std::string key;
  std::string value;
  std::string origin;
};
void apply_titan_renames(ConfigValue& args, const TitanVersions& t, const TitanVersion& v,
                         std::vector<TitanReading>& notes, std::vector<std::string>& warnings);

// The change that introduced `key` when `v` predates it; nullptr otherwise.
const TitanChange* predating_change(const TitanVersions& t, const TitanVersion& v,
                                    std::string_view key);

}  // namespace projector::frontend_detail
