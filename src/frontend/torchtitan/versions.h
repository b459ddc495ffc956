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

struct TitanVersions {
  std::string file;
  std::string current;                                    // v0.2.2
  std::vector<std::pair<std::string, std::string>> tags;  // tag -> date
  std::vector<TitanChange> changes;
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

// The change that introduced `key` when `v` predates it; nullptr otherwise.
const TitanChange* predating_change(const TitanVersions& t, const TitanVersion& v,
                                    std::string_view key);

}  // namespace projector::frontend_detail
