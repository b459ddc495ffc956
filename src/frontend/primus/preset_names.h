// Preset file names: "llama3_8B" and "llama3_8B.yaml" name the same preset. Internal to the
// frontend module.
#pragma once

#include <string>

namespace projector::frontend_detail {

inline std::string with_yaml_suffix(const std::string& name) {
  if (name.ends_with(".yaml") || name.ends_with(".yml")) return name;
  return name + ".yaml";
}

inline std::string strip_yaml_suffix(const std::string& name) {
  if (name.ends_with(".yaml")) return name.substr(0, name.size() - 5);
  if (name.ends_with(".yml")) return name.substr(0, name.size() - 4);
  return name;
}

}  // namespace projector::frontend_detail
