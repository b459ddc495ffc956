// torchtitan flavor tables (frontend/torchtitan/flavors.h).
#include "frontend/torchtitan/flavors.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "frontend/torchtitan/python_source.h"
#include "projector/frontend/torchtitan.h"
#include "projector/util/input_file.h"

namespace projector::frontend_detail {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  return read_input_file(p.string());
}

const ConfigValue& require_map(const ConfigValue* v, const std::string& file,
                               const std::string& key) {
  if (v == nullptr || !v->is_map()) throw InputError({file, 0, 0}, key, "expected a mapping");
  return *v;
}

std::string text_of(const ConfigValue* v) {
  return v != nullptr && v->kind == ConfigValue::Kind::kString ? v->s : "";
}

// The file defining class `name` among the Python files of `dir` (recursively), or empty.
fs::path find_class_file(const fs::path& dir, const std::string& name) {
  if (!is_python_identifier(name)) return {};  // never a pattern of its own
  const std::regex header("(^|\\n)class\\s+" + name + "\\b");
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".py") continue;
    if (std::regex_search(read_text(it->path()), header)) return it->path();
  }
  return {};
}

// The MoE args inside a flavor (a call `MoEArgs(...)` read as a map) over their defaults.
ConfigValue resolve_moe(const ConfigValue& defaults, const ConfigValue* stated) {
  ConfigValue out = defaults;
  if (stated != nullptr && stated->is_map()) deep_merge(out, *stated);
  return out;
}

}  // namespace

const ConfigValue* FlavorModel::flavor(const std::string& n) const {
  for (const auto& [k, v] : flavors) {
    if (k == n) return &v;
  }
  return nullptr;
}

std::vector<std::string> FlavorModel::flavor_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : flavors) out.push_back(k);
  return out;
}

const FlavorModel* FlavorCatalog::find(const std::string& n) const {
  for (const FlavorModel& m : models) {
    if (m.name == n) return &m;
  }
  return nullptr;
}

FlavorCatalog load_transcribed_flavors(const std::string& data_dir) {
  const std::string path = (fs::path(data_dir) / "frameworks/torchtitan/flavors.yaml").string();
  const ConfigValue doc = parse_yaml_file(path, EnvLookup{});
  FlavorCatalog c;
  c.origin = fmt::format("the transcribed table {} ({})", path, text_of(doc.find("version")));
  const ConfigValue& classes = require_map(doc.find("classes"), path, "classes");
  const ConfigValue& moe = require_map(classes.find("MoEArgs"), path, "classes.MoEArgs");
  c.moe_defaults = require_map(moe.find("defaults"), path, "classes.MoEArgs.defaults");
  for (const auto& [name, m] : require_map(doc.find("models"), path, "models").entries) {
    FlavorModel fm;
    fm.name = name;
    fm.args_class = text_of(m.find("class"));
    fm.args_source = text_of(m.find("args_source"));
    fm.table_source = text_of(m.find("table_source"));
    fm.defaults = require_map(m.find("defaults"), path, "models." + name + ".defaults");
    for (const auto& [flavor, args] :
         require_map(m.find("flavors"), path, "models." + name + ".flavors").entries) {
      fm.flavors.emplace_back(flavor, args);
    }
    c.models.push_back(std::move(fm));
  }
  return c;
}

std::string torchtitan_package_dir(const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p / "torchtitan" / "models", ec)) return (p / "torchtitan").string();
  if (fs::is_directory(p / "models", ec) && p.filename() == "torchtitan") return p.string();
  return "";
}

FlavorCatalog read_checkout_flavors(const std::string& package_dir,
                                    const std::vector<std::string>& names) {
  FlavorCatalog c;
  c.origin = "the torchtitan checkout " + package_dir;
  const fs::path models = fs::path(package_dir) / "models";
  const fs::path moe_file = find_class_file(models, "MoEArgs");
  if (!moe_file.empty()) {
    c.moe_defaults = python_dataclass_defaults(read_text(moe_file), moe_file.string(), "MoEArgs");
  }
  if (!c.moe_defaults.is_map()) c.moe_defaults = ConfigValue::make_map();
  for (const std::string& name : names) {
    const fs::path init = models / name / "__init__.py";
    std::error_code ec;
    if (!fs::is_regular_file(init, ec)) continue;
    const std::string src = read_text(init);
    // The table the train spec registers: `model_args=<table>` (older releases: `config=`).
    std::smatch m;
    const std::regex spec("(model_args|config)\\s*=\\s*([A-Za-z_][A-Za-z0-9_]*)");
    if (!std::regex_search(src, m, spec)) {
      throw InputError({init.string(), 0, 0}, "torchtitan source", "no model_args= table found");
    }
    FlavorModel fm;
    fm.name = name;
    fm.table_source = init.string();
    const ConfigValue table = python_dict_assignment(src, init.string(), m[2].str());
    if (!table.is_map()) {
      throw InputError({init.string(), 0, 0}, "torchtitan source",
                       fmt::format("no dict literal '{}' found", m[2].str()));
    }
    for (const auto& [flavor, args] : table.entries) {
      if (fm.args_class.empty()) fm.args_class = args.s;
      fm.flavors.emplace_back(flavor, args);
    }
    const fs::path args_file = find_class_file(models / name, fm.args_class);
    if (args_file.empty()) {
      throw InputError(
          {init.string(), 0, 0}, "torchtitan source",
          fmt::format("class {} not found under {}", fm.args_class, (models / name).string()));
    }
    fm.args_source = args_file.string();
    fm.defaults =
        python_dataclass_defaults(read_text(args_file), args_file.string(), fm.args_class);
    c.models.push_back(std::move(fm));
  }
  return c;
}

ConfigValue resolve_flavor(const FlavorCatalog& catalog, const FlavorModel& model,
                           const ConfigValue& stated) {
  ConfigValue out = model.defaults;
  for (const auto& [k, v] : stated.entries) {
    if (k != "moe_args") out.set(k, v);
  }
  out.set("moe_args", resolve_moe(catalog.moe_defaults, stated.find("moe_args")));
  return out;
}

}  // namespace projector::frontend_detail

namespace projector {

std::optional<TorchtitanFlavorMatch> match_torchtitan_flavor(const std::string& data_dir,
                                                             const std::string& model_name,
                                                             const TorchtitanArchitecture& arch) {
  using frontend_detail::FlavorCatalog;
  using frontend_detail::FlavorModel;
  const FlavorCatalog catalog = frontend_detail::load_transcribed_flavors(data_dir);
  const FlavorModel* model = catalog.find(model_name);
  if (model == nullptr) return std::nullopt;
  auto integer = [](const ConfigValue& args, const char* key, std::int64_t fallback) {
    const ConfigValue* v = args.find(key);
    return v != nullptr && v->kind == ConfigValue::Kind::kInt ? v->i : fallback;
  };
  for (const auto& [name, stated] : model->flavors) {
    const ConfigValue args = frontend_detail::resolve_flavor(catalog, *model, stated);
    const std::int64_t heads = integer(args, "n_heads", 0);
    const std::int64_t kv = integer(args, "n_kv_heads", heads);
    const ConfigValue* moe = args.find("moe_args");
    const bool has_moe = model_name == "llama4" || model_name == "deepseek_v3" ||
                         model_name == "gpt_oss" ||
                         (args.find("moe_enabled") != nullptr && args.find("moe_enabled")->b);
    const std::int64_t experts = has_moe && moe != nullptr ? integer(*moe, "num_experts", 0) : 0;
    if (integer(args, "dim", 0) != arch.hidden_size || heads != arch.num_heads) continue;
    if (arch.num_kv_heads > 0 && kv != arch.num_kv_heads) continue;
    if (experts != arch.num_experts) continue;
    if (name.find("flex") != std::string::npos || name.find("varlen") != std::string::npos ||
        name.find("irope") != std::string::npos) {
      continue;  // attention variants of a base flavor: the base flavor is the match
    }
    return TorchtitanFlavorMatch{name, static_cast<int>(integer(args, "n_layers", 0)),
                                 integer(args, "vocab_size", 0)};
  }
  return std::nullopt;
}

}  // namespace projector
