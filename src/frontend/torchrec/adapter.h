// The TorchRec DLRM back-end adapter (`framework: torchrec_dlrm`, aliases torchrec, dlrm, dlrm_v4):
// a recommendation model and its training settings from either TorchRec's dlrm_main.py arguments
// (facebookresearch/dlrm torchrec_dlrm) or Primus' DLRM-v4 / HSTU keys, in a Primus experiment, a
// flat YAML of dlrm_main.py flags, or a dlrm_main.py command line (`command_line:`). Internal to
// the frontend module.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/megatron/arg_reader.h"
#include "projector/frontend/adapter.h"
#include "projector/job/draft.h"

namespace projector::frontend_detail {

class TorchrecAdapter final : public BackendAdapter {
 public:
  std::string_view name() const override { return "torchrec_dlrm"; }
  std::vector<std::string> aliases() const override {
    return {"torchrec", "dlrm", "dlrm_v4", "torchrec-dlrm"};
  }
  std::string_view profile(bool /*primus_experiment*/) const override { return "torchrec"; }
  std::string_view preset_dir() const override { return "torchrec"; }
  KeySchema key_schema(const std::string& data_dir) const override;
  JobDraft normalize(AdapterInput& input) const override;
};

// Canonical spellings (idempotent): leading dashes dropped, '-' -> '_', a `command_line:` string
// (dlrm_main.py's flags) expanded into keys that the file does not already set.
// `expanded` (optional) receives the keys a command line added.
void normalize_torchrec_args(ConfigValue& args, std::vector<std::string>& warnings,
                             std::vector<std::string>* expanded = nullptr);

// Splits a dlrm_main.py command line into (flag, value) pairs: `--key value`, `--key=value`, a
// bare `--flag` (true), and ignores a leading `python dlrm_main.py` / launcher words. An unclosed
// quote throws InputError (key "command_line", no location: the caller adds it).
std::vector<std::pair<std::string, std::string>> split_dlrm_command_line(std::string_view text);

// A list of positive integers written as a YAML list, "512,256,128" or "[512, 256]"; nullopt when
// absent. InputError naming `key` for anything else (or a non-positive entry when `positive`).
std::optional<std::vector<std::int64_t>> int_list(const ArgReader& r, const std::string& key,
                                                  bool positive);

// The model and the stated training settings, in dlrm_main.py's names (torchrec/dlrm_args.cpp)
// or Primus' DLRM-v4 names (torchrec/v4_args.cpp).
void read_dlrm_main_args(ArgReader& r, const FrameworkProfile& profile, JobDraft& d);
void read_dlrm_v4_args(ArgReader& r, const FrameworkProfile& profile, JobDraft& d);
// True when the namespace uses Primus' DLRM-v4 keys.
bool uses_dlrm_v4_keys(const ConfigValue& args);

// Per-table sharding pins (`embedding_sharding`: one name for every table, a list, or a map of
// table name -> name), applied to the model's tables.
void read_sharding_pins(ArgReader& r, ModelSpec& model);

// A profile value the config does not state, recorded with the profile.
std::string profile_text(const FrameworkProfile& p, const std::string& key, JobDraft& d,
                         const std::string& as);
// The integer profile value `key` (refused unless in 0..kMaxCount: no throwing conversion).
std::int64_t profile_integer(const FrameworkProfile& p, const std::string& key, JobDraft& d,
                             const std::string& as);

}  // namespace projector::frontend_detail
