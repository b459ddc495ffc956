// Model presets: the bundled catalogue (data/models/) and a Primus checkout's model presets.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "frontend/primus/preset_names.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

namespace fs = std::filesystem;
using frontend_detail::strip_yaml_suffix;
using frontend_detail::with_yaml_suffix;

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

namespace {

// A preset of another back-end: the Primus checkout's, else the bundled copy.
std::string find_backend_preset(const std::string& file, const std::string& data_dir,
                                const std::string& primus_path, const SourceLocation& where,
                                std::string_view dir) {
  std::error_code ec;
  const fs::path sub = fs::path("primus/configs/models") / std::string(dir) / file;
  if (!primus_path.empty() && fs::is_regular_file(fs::path(primus_path) / sub, ec)) {
    return (fs::path(primus_path) / sub).string();
  }
  const fs::path bundled =
      fs::path(data_dir) / "frameworks/primus/models" / std::string(dir) / file;
  if (fs::is_regular_file(bundled, ec)) return bundled.string();
  throw InputError(
      where, "model",
      fmt::format(
          "unknown {} model preset '{}' (not in {}{})", dir, file, bundled.parent_path().string(),
          primus_path.empty() ? "; no Primus checkout given: --primus-path or PRIMUS_PATH"
                              : " nor " + (fs::path(primus_path) / sub).parent_path().string()));
}

}  // namespace

std::string find_model_preset(const std::string& name, const std::string& data_dir,
                              const std::string& primus_path, const SourceLocation& where,
                              std::string_view preset_dir) {
  std::error_code ec;
  const std::string file = with_yaml_suffix(name);
  // An explicit path (relative to the experiment file, or absolute).
  if (!where.file.empty() && fs::path(name).has_parent_path()) {
    fs::path p = name;
    if (p.is_relative()) p = fs::path(where.file).parent_path() / p;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  if (fs::path(name).is_absolute() && fs::is_regular_file(name, ec)) return name;
  if (preset_dir != "megatron") {
    return find_backend_preset(file, data_dir, primus_path, where, preset_dir);
  }
  const fs::path bundled = fs::path(data_dir) / "models" / file;
  if (fs::is_regular_file(bundled, ec)) return bundled.string();
  if (!primus_path.empty()) {
    const fs::path primus = fs::path(primus_path) / "primus/configs/models/megatron" / file;
    if (fs::is_regular_file(primus, ec)) return primus.string();
  }
  std::string nearest;
  int best = 1 << 30;
  for (const std::string& candidate : list_model_presets(data_dir)) {
    const int d = edit_distance(strip_yaml_suffix(name), candidate);
    if (d < best) {
      best = d;
      nearest = candidate;
    }
  }
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
  ModelSpec model = build_model(args, defaults != nullptr ? *defaults : local_defaults, warnings);
  model.name = strip_yaml_suffix(fs::path(path).filename().string());
  return model;
}

}  // namespace projector
