// Preset file names: "llama3_8B" and "llama3_8B.yaml" name the same preset. Internal to the
// frontend module.
#pragma once

#include <string>

#include "projector/util/error.h"

namespace projector::frontend_detail {

inline std::string with_yaml_suffix(const std::string& name) {
  if (name.ends_with(".yaml") || name.ends_with(".yml")) return name;
  return name + ".yaml";
}

// A model preset of a back-end other than Megatron (torchtitan, ...): a Primus checkout's
// primus/configs/models/<dir>/ first, then the bundled copies in data/frameworks/primus/models/
// <dir>/. InputError naming `where` (with the nearest bundled name) when neither has it.
std::string find_backend_model_preset(const std::string& name, const std::string& dir,
                                      const std::string& data_dir, const std::string& primus_path,
                                      const SourceLocation& where);

inline std::string strip_yaml_suffix(const std::string& name) {
  if (name.ends_with(".yaml")) return name.substr(0, name.size() - 5);
  if (name.ends_with(".yml")) return name.substr(0, name.size() - 4);
  return name;
}

}  // namespace projector::frontend_detail
