// torchtitan's model flavor tables (`model.name` -> `model.flavor` -> model args), from an
// installed torchtitan's source or from the transcription in
// data/frameworks/torchtitan/flavors.yaml. Internal to the torchtitan adapter; the transcription
// test re-checks one against the other.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "projector/frontend/config_value.h"

namespace projector::frontend_detail {

struct FlavorModel {
  std::string name;          // model.name: llama3, llama4, deepseek_v3, qwen3, gpt_oss
  std::string args_class;    // TransformerModelArgs, DeepSeekV3ModelArgs, ...
  std::string args_source;   // where the class defaults are (file:lines)
  std::string table_source;  // where the flavor table is
  ConfigValue defaults;      // map: field -> default
  std::vector<std::pair<std::string, ConfigValue>> flavors;  // flavor -> map of its stated args

  const ConfigValue* flavor(const std::string& name) const;
  std::vector<std::string> flavor_names() const;
};

struct FlavorCatalog {
  std::string origin;        // "transcription (v0.2.2)" or "torchtitan checkout <root>"
  ConfigValue moe_defaults;  // MoEArgs field defaults
  std::vector<FlavorModel> models;

  const FlavorModel* find(const std::string& name) const;
};

// data/frameworks/torchtitan/flavors.yaml. InputError naming the file when malformed.
FlavorCatalog load_transcribed_flavors(const std::string& data_dir);

// The torchtitan source tree of an installed checkout: `path` may be the repository root (with
// torchtitan/models/) or the package directory itself. Empty when neither.
std::string torchtitan_package_dir(const std::string& path);

// Reads model `name`'s table and args defaults from a checkout's package directory (see
// torchtitan_package_dir), with the MoEArgs defaults. The model is absent from the result when
// the checkout has no such model; InputError when its source cannot be read as expected.
FlavorCatalog read_checkout_flavors(const std::string& package_dir,
                                    const std::vector<std::string>& names);

// A flavor's arguments resolved: the class defaults, then the flavor's stated arguments;
// `moe_args` resolved over the MoEArgs defaults.
ConfigValue resolve_flavor(const FlavorCatalog& catalog, const FlavorModel& model,
                           const ConfigValue& stated);

}  // namespace projector::frontend_detail
