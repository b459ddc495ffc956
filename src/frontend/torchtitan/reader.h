// Typed access to a torchtitan JobConfig namespace (dotted keys: `training.local_batch_size`),
// falling back to torchtitan's own JobConfig defaults (data/frameworks/torchtitan/job_config.yaml)
// and recording every default with the profile it belongs to: the torchtitan profile for a
// JobConfig default, the Primus profile for a value of Primus' module preset. Internal to the
// torchtitan adapter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "projector/frontend/config_value.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector::frontend_detail {

// torchtitan's JobConfig defaults, one per dotted key, with the source line of each.
struct TitanDefaults {
  std::string file;    // torchtitan/config/job_config.py (v0.2.2)
  ConfigValue values;  // map: dotted key -> {value, line}
};
TitanDefaults load_titan_defaults(const std::string& data_dir);

// Where the values of a resolved namespace came from, for attributing defaults.
struct TitanOrigins {
  std::string torchtitan_profile;  // "torchtitan"
  std::string primus_profile;      // "primus-torchtitan" (empty for a job TOML)
  std::string module_preset;       // the Primus module preset file (checkout or bundled copy)
};

class TitanReader {
 public:
  TitanReader(const ConfigValue& args, const TitanDefaults& defaults, TitanOrigins origins,
              std::vector<AppliedDefault>& applied)
      : args_(args), defaults_(defaults), origins_(std::move(origins)), applied_(applied) {}

  // The stated value at `dotted` (experiment, TOML, presets), or nullptr (null counts as absent).
  const ConfigValue* stated(const std::string& dotted) const;
  // The stated value, else torchtitan's default (recorded); a key without a default that is not
  // stated is an InputError naming the key.
  ConfigValue value(const std::string& dotted);
  SourceLocation where(const std::string& dotted) const;

  std::int64_t integer(const std::string& dotted);
  double number(const std::string& dotted);
  bool boolean(const std::string& dotted);
  std::string text(const std::string& dotted);
  // A list of strings (a comma-separated string is split, as torchtitan's CLI does).
  std::vector<std::string> strings(const std::string& dotted);

  [[noreturn]] void fail(const std::string& dotted, const std::string& message) const;
  // Records a value chosen by the adapter itself (a derived setting), attributed to torchtitan.
  void note(const std::string& key, const std::string& value, const std::string& reason);
  const ConfigValue& args() const { return args_; }

 private:
  const ConfigValue& args_;
  const TitanDefaults& defaults_;
  TitanOrigins origins_;
  std::vector<AppliedDefault>& applied_;
  std::vector<std::string> recorded_;  // keys already recorded (each default once)
};

// `dotted` in a nested map (`a.b.c`); nullptr when absent.
const ConfigValue* find_dotted(const ConfigValue& root, const std::string& dotted);

}  // namespace projector::frontend_detail
