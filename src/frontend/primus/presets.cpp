// Model presets: the bundled catalogue (data/models/) and a Primus checkout's model presets.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "frontend/primus/preset_names.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/job/spec.h"

namespace projector {
namespace {

namespace fs = std::filesystem;
using frontend_detail::strip_yaml_suffix;
using frontend_detail::with_yaml_suffix;

// A preset named by path (relative to the experiment file, or absolute); empty when not one.
std::string explicit_preset_path(const std::string& name, const SourceLocation& where) {
  std::error_code ec;
  if (!where.file.empty() && fs::path(name).has_parent_path()) {
    fs::path p = name;
    if (p.is_relative()) p = fs::path(where.file).parent_path() / p;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  if (fs::path(name).is_absolute() && fs::is_regular_file(name, ec)) return name;
  return "";
}

// The candidate `name` plausibly misspells; empty when none is close (loader.h).
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  return nearest_misspelling(strip_yaml_suffix(name), candidates);
}

}  // namespace

std::vector<std::string> list_model_presets(const std::string& data_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  const fs::path dir = fs::path(data_dir) / "models";
  if (!fs::is_directory(dir, ec)) return names;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().filename().string();
    if (!file.ends_with(".yaml") || file.starts_with("_")) continue;
    names.push_back(strip_yaml_suffix(file));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string find_model_preset(const std::string& name, const std::string& data_dir,
                              const std::string& primus_path, const SourceLocation& where,
                              std::string_view preset_dir) {
  std::error_code ec;
  const std::string file = with_yaml_suffix(name);
  if (std::string p = explicit_preset_path(name, where); !p.empty()) return p;
  if (preset_dir != "megatron") {
    return frontend_detail::find_backend_model_preset(name, std::string(preset_dir), data_dir,
                                                      primus_path, where);
  }
  // A Primus checkout's preset is the architecture Primus launches: it wins over a bundled preset
  // of the same name (the bundled catalogue may differ, e.g. in tying or biases).
  if (!primus_path.empty()) {
    const fs::path primus = fs::path(primus_path) / "primus/configs/models/megatron" / file;
    if (fs::is_regular_file(primus, ec)) return primus.string();
  }
  const fs::path bundled = fs::path(data_dir) / "models" / file;
  if (fs::is_regular_file(bundled, ec)) return bundled.string();
  // A template's placeholder (Primus ships `<YOUR_MODEL_YAML>` templates beside its configs).
  if (name.size() > 2 && name.front() == '<' && name.back() == '>') {
    throw InputError(where, "model",
                     fmt::format("'{}' is a template placeholder: fill in a model preset "
                                 "(projector models list)",
                                 name));
  }
  const std::string nearest = nearest_name(name, list_model_presets(data_dir));
  std::string msg = fmt::format("unknown model preset '{}' (not in {}/models", name, data_dir);
  msg += primus_path.empty() ? "; no Primus checkout given: --primus-path or PRIMUS_PATH)"
                             : fmt::format(" nor {}/primus/configs/models/megatron)", primus_path);
  if (!nearest.empty()) msg += fmt::format("; did you mean '{}'?", nearest);
  throw InputError(where, "model", msg);
}

std::string model_preset_source(const std::string& name, const std::string& data_dir) {
  const std::string path = find_model_preset(name, data_dir, "");
  const ConfigValue v = parse_yaml_file(path, EnvLookup{});
  const ConfigValue* s = v.find("source");
  return s != nullptr && !s->is_null() ? s->to_text() : "";
}

ModelSpec load_model_preset(const std::string& name, const std::string& data_dir,
                            const std::string& primus_path, std::vector<AppliedDefault>* defaults) {
  const std::string path = find_model_preset(name, data_dir, primus_path);
  const ConfigValue args = load_yaml_with_extends(path, EnvLookup{});
  std::vector<AppliedDefault> local_defaults;
  std::vector<std::string> warnings;
  ModelSpec model =
      build_model(args, data_dir, defaults != nullptr ? *defaults : local_defaults, warnings);
  model.name = strip_yaml_suffix(fs::path(path).filename().string());
  return model;
}

namespace frontend_detail {

std::string find_backend_model_preset(const std::string& name, const std::string& dir,
                                      const std::string& data_dir, const std::string& primus_path,
                                      const SourceLocation& where) {
  std::error_code ec;
  const std::string file = with_yaml_suffix(name);
  if (std::string p = explicit_preset_path(name, where); !p.empty()) return p;
  if (!primus_path.empty()) {
    const fs::path p = fs::path(primus_path) / "primus/configs/models" / dir / file;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  const fs::path bundled = fs::path(data_dir) / "frameworks/primus/models" / dir;
  if (fs::is_regular_file(bundled / file, ec)) return (bundled / file).string();
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(bundled, ec)) {
    names.push_back(strip_yaml_suffix(entry.path().filename().string()));
  }
  const std::string nearest = nearest_name(name, names);
  std::string msg =
      fmt::format("unknown {} model preset '{}' (not in {}", dir, name, bundled.string());
  if (!primus_path.empty())
    msg += fmt::format(" nor {}/primus/configs/models/{}", primus_path, dir);
  msg += ")";
  if (!nearest.empty()) msg += fmt::format("; did you mean '{}'?", nearest);
  throw InputError(where, "model", msg);
}

}  // namespace frontend_detail
}  // namespace projector
