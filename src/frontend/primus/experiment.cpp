// The Primus experiment format -> the trainer namespace of one back-end (Primus' resolution
// order, spec 3.1): module preset, model preset, the module's own keys, `overrides:`, `--set`.
// Environment and CLI overrides apply later, to the neutral draft (primus/overrides.cpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "frontend/primus/preset_names.h"
#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"
#include "projector/util/text.h"

namespace projector {
namespace {

namespace fs = std::filesystem;
using frontend_detail::strip_yaml_suffix;
using frontend_detail::with_yaml_suffix;

std::string primus_path_of(const LoadRequest& request) {
  if (!request.primus_path.empty()) return request.primus_path;
  if (request.env) {
    if (auto p = request.env("PRIMUS_PATH")) return *p;
  }
  return "";
}

std::string data_dir_of(const LoadRequest& request) {
  return request.data_dir.empty() ? default_data_dir() : request.data_dir;
}

const AdapterRegistry& registry_of(const LoadRequest& request) {
  return request.adapters != nullptr ? *request.adapters : builtin_adapters();
}

void collect_keys(const ConfigValue& map, std::vector<std::string>& out) {
  for (const auto& [k, v] : map.entries) out.push_back(k);
}

// The trainer module: modules.pre_trainer, else the first module whose name has "trainer";
// nullptr for a flat argument file.
const ConfigValue* find_trainer(const ConfigValue& experiment, std::string& name) {
  const ConfigValue* modules = experiment.find("modules");
  if (modules == nullptr) return nullptr;
  if (!modules->is_map()) throw InputError(modules->where, "modules", "must be a mapping");
  const ConfigValue* module = modules->find("pre_trainer");
  name = "pre_trainer";
  if (module == nullptr) {
    for (const auto& [k, v] : modules->entries) {
      if (k.find("trainer") != std::string::npos) {
        module = &v;
        name = k;
        break;
      }
    }
  }
  if (module == nullptr) {
    throw InputError(modules->where, "modules", "no trainer module (expected modules.pre_trainer)");
  }
  if (!module->is_map()) throw InputError(module->where, name, "must be a mapping");
  return module;
}

// `framework:` -> a registered back-end adapter; unknown frameworks list the registered ones.
std::string select_framework(const ConfigValue& module, const std::string& prefix,
                             const AdapterRegistry& registry, ResolvedConfig& out) {
  const ConfigValue* fw = module.find("framework");
  if (fw == nullptr || fw->is_null()) {
    out.defaults.push_back({prefix + "framework", "megatron", "not given", ""});
    return "megatron";
  }
  const BackendAdapter* adapter =
      fw->kind == ConfigValue::Kind::kString ? registry.find(fw->s) : nullptr;
  if (adapter == nullptr) {
    throw InputError(fw->where, prefix + "framework",
                     fmt::format("framework '{}' has no back-end adapter (registered: {})",
                                 fw->to_text(), fmt::join(registry.names(), ", ")));
  }
  return std::string(adapter->name());
}

// The module preset (`config:`): from a Primus checkout, else the bundled copy of its
// projection-relevant keys (data/frameworks/primus/modules/<back-end>/), else nothing.
ConfigValue module_preset(const ConfigValue& module, const std::string& prefix,
                          const BackendAdapter& adapter, const LoadRequest& request,
                          ResolvedConfig& out) {
  const ConfigValue* cfg = module.find("config");
  if (cfg == nullptr || cfg->is_null()) return ConfigValue::make_map();
  const std::string file = with_yaml_suffix(cfg->to_text());
  const std::string primus = primus_path_of(request);
  const std::string dir = std::string(adapter.preset_dir());
  std::error_code ec;
  if (!primus.empty()) {
    const fs::path path = fs::path(primus) / "primus/configs/modules" / dir / file;
    if (fs::is_regular_file(path, ec)) {
      out.module_preset_path = path.string();
      return load_yaml_with_extends(path.string(), request.env);
    }
  }
  const std::string why = primus.empty() ? "no Primus checkout (--primus-path or PRIMUS_PATH)"
                                         : fmt::format("not found under {}", primus);
  const fs::path copy = fs::path(data_dir_of(request)) / "frameworks/primus/modules" / dir / file;
  if (!fs::is_regular_file(copy, ec)) {
    // Primus itself would fail to open it; without a checkout it may still exist there, so the
    // projection goes on without its defaults and says so.
    if (!primus.empty()) {
      throw InputError(
          cfg->where, prefix + "config",
          fmt::format("module preset '{}' not found under {}/primus/configs/modules/{}", file,
                      primus, dir));
    }
    out.defaults.push_back({prefix + "config", file, "module preset not read: " + why, ""});
    out.warnings.push_back(fmt::format(
        "{}:{}: {}config: module preset '{}' is not bundled and there is no Primus checkout "
        "(--primus-path or PRIMUS_PATH): its defaults are not applied",
        cfg->where.file, cfg->where.line, prefix, file));
    return ConfigValue::make_map();
  }
  out.defaults.push_back(
      {prefix + "config", file,
       fmt::format("{}; its projection-relevant keys from the bundled copy {}", why, copy.string()),
       ""});
  out.bundled_preset_path = copy.string();
  return parse_yaml_file(copy.string(), EnvLookup{});
}

// The module preset wins over the model preset for keys it defines (a null counts as undefined);
// then the module's own keys and its `overrides:`.
ConfigValue merge_module(const ConfigValue& module, const std::string& prefix, ConfigValue preset,
                         const ConfigValue& model_preset, ResolvedConfig& out) {
  ConfigValue args = std::move(preset);
  for (const auto& [k, v] : model_preset.entries) {
    const ConfigValue* existing = args.find(k);
    if (existing == nullptr || existing->is_null()) args.set(k, v);
  }
  for (const auto& [k, v] : module.entries) {
    if (k == "framework" || k == "config" || k == "model" || k == "overrides") continue;
    ConfigValue top = ConfigValue::make_map();
    top.set(k, v);
    deep_merge(args, top);
    out.user_keys.push_back(k);
  }
  if (const ConfigValue* ov = module.find("overrides"); ov != nullptr && !ov->is_null()) {
    if (!ov->is_map()) throw InputError(ov->where, prefix + "overrides", "must be a mapping");
    deep_merge(args, *ov);
    collect_keys(*ov, out.user_keys);
  }
  return args;
}

void resolve_module(const ConfigValue& module, const std::string& module_name,
                    const LoadRequest& request, ResolvedConfig& out) {
  const std::string prefix = "modules." + module_name + ".";
  const AdapterRegistry& registry = registry_of(request);
  out.framework = select_framework(module, prefix, registry, out);
  out.primus_experiment = true;
  const BackendAdapter& adapter = *registry.find(out.framework);
  ConfigValue preset = module_preset(module, prefix, adapter, request, out);
  ConfigValue model_preset = ConfigValue::make_map();
  if (const ConfigValue* m = module.find("model"); m != nullptr && !m->is_null()) {
    if (m->kind != ConfigValue::Kind::kString) {
      throw InputError(m->where, prefix + "model", "must be a preset name such as llama3_8B.yaml");
    }
    out.model_preset_path = find_model_preset(m->s, data_dir_of(request), primus_path_of(request),
                                              m->where, adapter.preset_dir());
    const std::string primus = primus_path_of(request);
    const bool from_checkout = !primus.empty() && out.model_preset_path.starts_with(primus);
    out.defaults.push_back(
        {prefix + "model", m->s,
         fmt::format("architecture from {} ({})", out.model_preset_path,
                     from_checkout ? "the Primus checkout's preset, as Primus launches it"
                                   : "bundled catalogue"),
         ""});
    model_preset = load_yaml_with_extends(out.model_preset_path, request.env);
  }
  out.args = merge_module(module, prefix, std::move(preset), model_preset, out);
}

// --set key=value (typed like a plain YAML scalar; dotted keys reach into nested maps).
void apply_set_overrides(const LoadRequest& request, ResolvedConfig& out) {
  for (const std::string& kv : request.set_overrides) {
    const std::size_t eq = kv.find('=');
    const SourceLocation where{"--set", 0, 0};
    if (eq == std::string::npos || eq == 0) throw InputError(where, kv, "expected key=value");
    if (!is_valid_utf8(kv)) {  // it can reach a JSON report, and JSON is UTF-8
      throw InputError(where, escape_invalid_utf8(kv), "not valid UTF-8");
    }
    std::string key = kv.substr(0, eq);
    while (key.starts_with("-")) key.erase(0, 1);
    std::replace(key.begin(), key.end(), '-', '_');
    // --set writes the trainer module's arguments; the experiment's structure (modules, the
    // framework that picks the adapter) is read before it and would silently not change.
    if (key == "framework" || key.ends_with(".framework") || key.starts_with("modules.")) {
      throw InputError(where, key,
                       "--set changes the back-end's arguments, not the experiment's structure "
                       "(modules, framework): edit the config file instead");
    }
    const std::string text = kv.substr(eq + 1);
    ConfigValue v = resolve_plain_scalar(text, where);
    if (text.size() >= 2 && ((text.front() == '[' && text.back() == ']') ||
                             (text.front() == '{' && text.back() == '}'))) {
      // A flow list or map; anything else starting with '[' (e.g. "[0]*3+[1]*58") stays a string.
      try {
        v = parse_yaml_text(text, "--set", request.env);
      } catch (const InputError&) {
        v = ConfigValue::make_string(text, where);
      }
    }
    v.where = where;
    set_dotted(out.args, key, v);
    out.user_keys.push_back(key.substr(0, key.find('.')));
  }
}

}  // namespace

ResolvedConfig resolve_config(const LoadRequest& request) {
  ResolvedConfig out;
  out.source = request.config_path;
  if (request.config_path.empty()) {
    throw InputError({}, "--config", "no experiment config given (--config FILE)");
  }
  if (request.config_path.ends_with(".toml")) {
    // A torchtitan job file: its JobConfig sections are the trainer namespace.
    out.args = parse_toml_file(request.config_path);
    collect_keys(out.args, out.user_keys);
    out.framework = "torchtitan";
    if (registry_of(request).find(out.framework) == nullptr) {
      throw InputError({request.config_path, 0, 0}, "framework",
                       fmt::format("a .toml job needs the torchtitan back-end (registered: {})",
                                   fmt::join(registry_of(request).names(), ", ")));
    }
    apply_set_overrides(request, out);
    return out;
  }
  const ConfigValue experiment = load_yaml_with_extends(request.config_path, request.env);
  std::string module_name;
  // A key absent from every file is reported at the trainer module of the experiment (where it
  // would be added), else at the experiment file.
  SourceLocation absent_keys = experiment.where.file == request.config_path
                                   ? experiment.where
                                   : SourceLocation{request.config_path, 0, 0};
  if (const ConfigValue* module = find_trainer(experiment, module_name)) {
    resolve_module(*module, module_name, request, out);
    if (module->where.file == request.config_path) absent_keys = module->where;
  } else {
    // A flat file of one back-end's arguments (no Primus experiment structure): a top-level
    // `framework:` names the back-end, else an adapter that recognizes its format (a MaxText YAML),
    // else Megatron arguments.
    // A Transformer Engine precision config (which layers run in which recipe) sits beside the
    // experiment configs in Primus' folders; it describes no job.
    if (experiment.find("matchers") != nullptr && experiment.find("configs") != nullptr) {
      throw InputError(experiment.where, "matchers",
                       "not a training experiment: a Transformer Engine precision config "
                       "(`configs` and `matchers`), which Megatron reads through "
                       "te_precision_config_file; project the experiment config that names it");
    }
    out.args = experiment;
    for (const char* meta : {"work_group", "user_name", "exp_name", "workspace", "platform"}) {
      out.args.erase(meta);
    }
    out.framework = "megatron";
    if (out.args.find("framework") != nullptr) {
      out.framework = select_framework(out.args, "", registry_of(request), out);
      out.args.erase("framework");
    } else {
      for (const std::string& name : registry_of(request).names()) {
        if (registry_of(request).find(name)->recognizes(experiment)) out.framework = name;
      }
    }
    collect_keys(out.args, out.user_keys);
    out.defaults.push_back(
        {"modules.pre_trainer", "(none)",
         out.framework == "megatron"
             ? "no Primus experiment structure: the file is read as flat Megatron arguments"
             : fmt::format("no Primus experiment structure: the file is read as a {} config",
                           out.framework),
         ""});
  }
  apply_set_overrides(request, out);
  out.args.where = absent_keys;
  // The bundled preset's values that nothing later replaced are defaults of this job.
  for (const auto& [k, v] : out.args.entries) {
    if (!out.bundled_preset_path.empty() && v.where.file == out.bundled_preset_path &&
        !v.is_map()) {  // nested sections: the adapter records the leaves it reads
      out.defaults.push_back({k, v.to_text(), "value of Primus' module preset (bundled copy)", ""});
    }
  }
  return out;
}

}  // namespace projector
