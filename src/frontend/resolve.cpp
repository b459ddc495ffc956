// Experiment YAML -> merged Megatron argument namespace (Primus' resolution order, spec 3.1).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "projector/frontend/loader.h"
#include "projector/hardware/catalog.h"

namespace projector {
namespace {

namespace fs = std::filesystem;

std::string with_yaml_suffix(const std::string& name) {
  if (name.size() >= 5 && (name.ends_with(".yaml") || name.ends_with(".yml"))) return name;
  return name + ".yaml";
}

std::string strip_yaml_suffix(const std::string& name) {
  if (name.ends_with(".yaml")) return name.substr(0, name.size() - 5);
  if (name.ends_with(".yml")) return name.substr(0, name.size() - 4);
  return name;
}

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

// Keys in `value` (a map), with dotted paths for nested maps below the top level kept as one key.
void collect_keys(const ConfigValue& map, std::vector<std::string>& out) {
  for (const auto& [k, v] : map.entries) out.push_back(k);
}

// Sets `dotted` (a.b.c) in `root`, creating maps on the way.
void set_dotted(ConfigValue& root, const std::string& dotted, ConfigValue value) {
  ConfigValue* node = &root;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', start);
    const std::string part = dotted.substr(start, dot - start);
    if (dot == std::string::npos) {
      node->set(part, std::move(value));
      return;
    }
    ConfigValue* child = node->find(part);
    if (child == nullptr || !child->is_map()) {
      node->set(part, ConfigValue::make_map(value.where));
      child = node->find(part);
    }
    node = child;
    start = dot + 1;
  }
}

// Built-in copy of the keys of Primus' modules/megatron/pre_trainer.yaml that change a projection
// (spec 3.1), used only when the experiment names that preset and no checkout is available.
// enable_zero_bubble (also true there) is deliberately left out: the runtime ignores it unless
// patch_zero_bubble is set (spec 12.2 #19).
struct PresetDefault {
  const char* key;
  bool value;
};
constexpr PresetDefault kPrimusPreTrainerDefaults[] = {
    {"use_distributed_optimizer", true},
    {"use_flash_attn", true},
    {"bf16", true},
};

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
                              const std::string& primus_path, const SourceLocation& where) {
  std::error_code ec;
  const std::string file = with_yaml_suffix(name);
  // An explicit path (relative to the experiment file, or absolute).
  if (!where.file.empty() && fs::path(name).has_parent_path()) {
    fs::path p = name;
    if (p.is_relative()) p = fs::path(where.file).parent_path() / p;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  if (fs::path(name).is_absolute() && fs::is_regular_file(name, ec)) return name;
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

ResolvedConfig resolve_config(const LoadRequest& request) {
  ResolvedConfig out;
  out.source = request.config_path;
  const std::string data_dir = data_dir_of(request);
  const std::string primus = primus_path_of(request);
  if (request.config_path.empty()) {
    throw InputError({}, "--config", "no experiment config given (--config FILE)");
  }
  const ConfigValue experiment = load_yaml_with_extends(request.config_path, request.env);

  // The trainer module: modules.pre_trainer, else the first module whose name has "trainer".
  const ConfigValue* module = nullptr;
  std::string module_name;
  if (const ConfigValue* modules = experiment.find("modules")) {
    if (!modules->is_map()) throw InputError(modules->where, "modules", "must be a mapping");
    if ((module = modules->find("pre_trainer")) != nullptr) {
      module_name = "pre_trainer";
    } else {
      for (const auto& [k, v] : modules->entries) {
        if (k.find("trainer") != std::string::npos) {
          module = &v;
          module_name = k;
          break;
        }
      }
    }
    if (module == nullptr) {
      throw InputError(modules->where, "modules",
                       "no trainer module (expected modules.pre_trainer)");
    }
    if (!module->is_map()) throw InputError(module->where, module_name, "must be a mapping");
  }

  ConfigValue args = ConfigValue::make_map(SourceLocation{request.config_path, 0, 0});
  if (module == nullptr) {
    // A flat file of Megatron arguments (no Primus experiment structure).
    args = experiment;
    for (const char* meta : {"work_group", "user_name", "exp_name", "workspace", "platform"}) {
      args.erase(meta);
    }
    collect_keys(args, out.user_keys);
    out.defaults.push_back({"modules.pre_trainer", "(none)",
                            "no Primus experiment structure: the file is read as flat Megatron "
                            "arguments"});
  } else {
    const std::string prefix = "modules." + module_name + ".";
    if (const ConfigValue* fw = module->find("framework")) {
      if (fw->kind != ConfigValue::Kind::kString || fw->s != "megatron") {
        throw InputError(
            fw->where, prefix + "framework",
            fmt::format("framework '{}' is not supported (only megatron)", fw->to_text()));
      }
    } else {
      out.defaults.push_back({prefix + "framework", "megatron", "not given"});
    }

    // Module preset (config:), from a Primus checkout when one is available.
    ConfigValue module_preset = ConfigValue::make_map();
    if (const ConfigValue* cfg = module->find("config"); cfg != nullptr && !cfg->is_null()) {
      const std::string file = with_yaml_suffix(cfg->to_text());
      std::error_code ec;
      const fs::path path =
          primus.empty() ? fs::path() : fs::path(primus) / "primus/configs/modules/megatron" / file;
      if (!primus.empty() && fs::is_regular_file(path, ec)) {
        module_preset = load_yaml_with_extends(path.string(), request.env);
        out.module_preset_path = path.string();
      } else {
        const bool is_pre_trainer = file == "pre_trainer.yaml";
        out.defaults.push_back(
            {prefix + "config", file,
             primus.empty() ? "module preset not read: no Primus checkout (--primus-path or "
                              "PRIMUS_PATH)"
                            : fmt::format("module preset not found under {}", primus)});
        if (is_pre_trainer) {
          for (const PresetDefault& d : kPrimusPreTrainerDefaults) {
            module_preset.set(d.key, ConfigValue::make_bool(d.value, cfg->where));
            out.defaults.push_back({d.key, d.value ? "true" : "false",
                                    "value of Primus' pre_trainer.yaml (built-in copy)"});
          }
        }
      }
    }

    // Model preset (model:): bundled catalogue first, then the Primus checkout.
    ConfigValue model_preset = ConfigValue::make_map();
    if (const ConfigValue* m = module->find("model"); m != nullptr && !m->is_null()) {
      if (m->kind != ConfigValue::Kind::kString) {
        throw InputError(m->where, prefix + "model",
                         "must be a preset name such as llama3_8B.yaml");
      }
      out.model_preset_path = find_model_preset(m->s, data_dir, primus, m->where);
      model_preset = load_yaml_with_extends(out.model_preset_path, request.env);
    }

    // Module preset wins over the model preset for keys it defines (a null counts as undefined).
    args = module_preset;
    for (const auto& [k, v] : model_preset.entries) {
      const ConfigValue* existing = args.find(k);
      if (existing == nullptr || existing->is_null()) args.set(k, v);
    }
    // Other keys of the module entry are arguments too (a flattened module).
    for (const auto& [k, v] : module->entries) {
      if (k == "framework" || k == "config" || k == "model" || k == "overrides") continue;
      ConfigValue top = ConfigValue::make_map();
      top.set(k, v);
      deep_merge(args, top);
      out.user_keys.push_back(k);
    }
    if (const ConfigValue* ov = module->find("overrides"); ov != nullptr && !ov->is_null()) {
      if (!ov->is_map()) throw InputError(ov->where, prefix + "overrides", "must be a mapping");
      deep_merge(args, *ov);
      collect_keys(*ov, out.user_keys);
    }
  }

  // Environment overrides (CLI beats env beats file).
  struct EnvKey {
    const char* var;
    const char* key;
  };
  static constexpr EnvKey kEnvKeys[] = {
      {"PRIMUS_TP", "tensor_model_parallel_size"},
      {"PRIMUS_PP", "pipeline_model_parallel_size"},
      {"PRIMUS_EP", "expert_model_parallel_size"},
      {"PRIMUS_CP", "context_parallel_size"},
      {"PRIMUS_VPP", "num_virtual_stages_per_pipeline_rank"},
      {"PRIMUS_ETP", "expert_tensor_parallel_size"},
  };
  for (const EnvKey& e : kEnvKeys) {
    if (!request.env) break;
    const std::optional<std::string> value = request.env(e.var);
    if (!value || value->empty()) continue;
    const SourceLocation where{fmt::format("environment {}", e.var), 0, 0};
    ConfigValue v = resolve_plain_scalar(*value, where);
    if (v.kind != ConfigValue::Kind::kInt) {
      throw InputError(where, e.key, fmt::format("expected an integer, got '{}'", *value));
    }
    if (const ConfigValue* old = args.find(e.key);
        old != nullptr && !old->is_null() && old->to_text() != v.to_text()) {
      out.warnings.push_back(fmt::format("{}={} overrides {}: {} ({}:{})", e.var, *value, e.key,
                                         old->to_text(), old->where.file, old->where.line));
    }
    if (std::string(e.key) == "num_virtual_stages_per_pipeline_rank") {
      args.erase("num_layers_per_virtual_pipeline_stage");
      args.erase("virtual_pipeline_model_parallel_size");
    }
    args.set(e.key, v);
  }

  // --set key=value (typed like a plain YAML scalar; dotted keys reach into nested maps).
  for (const std::string& kv : request.set_overrides) {
    const std::size_t eq = kv.find('=');
    const SourceLocation where{"--set", 0, 0};
    if (eq == std::string::npos || eq == 0) {
      throw InputError(where, kv, "expected key=value");
    }
    std::string key = kv.substr(0, eq);
    while (key.starts_with("-")) key.erase(0, 1);
    std::replace(key.begin(), key.end(), '-', '_');
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
    set_dotted(args, key, v);
    out.user_keys.push_back(key.substr(0, key.find('.')));
  }

  // First-class CLI flags.
  const CliOverrides& c = request.cli;
  auto set_int = [&](const std::optional<int>& v, const char* flag, const char* key) {
    if (!v) return;
    args.set(key, ConfigValue::make_int(*v, SourceLocation{flag, 0, 0}));
  };
  set_int(c.tp, "--tp", "tensor_model_parallel_size");
  set_int(c.pp, "--pp", "pipeline_model_parallel_size");
  set_int(c.cp, "--cp", "context_parallel_size");
  set_int(c.ep, "--ep", "expert_model_parallel_size");
  set_int(c.etp, "--etp", "expert_tensor_parallel_size");
  if (c.vpp) {
    args.erase("num_layers_per_virtual_pipeline_stage");
    args.erase("virtual_pipeline_model_parallel_size");
    set_int(c.vpp, "--vpp", "num_virtual_stages_per_pipeline_rank");
  }
  set_int(c.micro_batch_size, "--mbs", "micro_batch_size");
  set_int(c.global_batch_size, "--gbs", "global_batch_size");
  set_int(c.seq_length, "--seq", "seq_length");
  if (c.enable_zero_bubble) {
    args.set("enable_zero_bubble",
             ConfigValue::make_bool(*c.enable_zero_bubble, {"--enable-zero-bubble", 0, 0}));
    // The flag asks for the schedule itself, i.e. also Primus' patch that makes it take effect.
    args.set("patch_zero_bubble",
             ConfigValue::make_bool(*c.enable_zero_bubble, {"--enable-zero-bubble", 0, 0}));
  }
  if (c.enable_deepep) {
    args.set("use_turbo_deepep",
             ConfigValue::make_bool(*c.enable_deepep, {"--enable-deepep", 0, 0}));
  }
  if (c.sync_free_stage) {
    set_int(c.sync_free_stage, "--sync-free-stage", "turbo_sync_free_moe_stage");
    if (*c.sync_free_stage > 0) {
      args.set("use_turbo_deepep", ConfigValue::make_bool(true, {"--sync-free-stage", 0, 0}));
    }
  }
  if (c.pipeline_schedule) {
    args.set(
        "pipeline_schedule_algorithm",
        ConfigValue::make_string(*c.pipeline_schedule, {"--pipeline-schedule-algorithm", 0, 0}));
  }
  out.args = std::move(args);
  return out;
}

JobSpec load_job(const LoadRequest& request) {
  return build_job_spec(resolve_config(request), request);
}

}  // namespace projector
