#include "projector/frontend/config_value.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <regex>
#include <set>

namespace projector {
namespace {

namespace fs = std::filesystem;

const std::regex& int_regex() {
  static const std::regex re(
      R"(^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$)");
  return re;
}

const std::regex& float_regex() {
  static const std::regex re(
      R"(^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$)");
  return re;
}

std::string strip_underscores(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != '_') out += c;
  }
  return out;
}

// Sexagesimal (base 60) value of "a:b:c" (YAML 1.1).
double sexagesimal(const std::string& body) {
  double value = 0.0;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = body.find(':', start);
    const std::string part = body.substr(start, colon - start);
    value = value * 60.0 + std::strtod(part.c_str(), nullptr);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return value;
}

bool parse_yaml11_int(const std::string& text, std::int64_t& out) {
  if (!std::regex_match(text, int_regex())) return false;
  std::string s = strip_underscores(text);
  int sign = 1;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    if (s[0] == '-') sign = -1;
    s.erase(0, 1);
  }
  errno = 0;
  if (s.find(':') != std::string::npos) {
    out = sign * static_cast<std::int64_t>(sexagesimal(s));
  } else if (s.rfind("0b", 0) == 0) {
    out = sign * std::strtoll(s.c_str() + 2, nullptr, 2);
  } else if (s.rfind("0x", 0) == 0) {
    out = sign * std::strtoll(s.c_str() + 2, nullptr, 16);
  } else if (s.size() > 1 && s[0] == '0') {
    out = sign * std::strtoll(s.c_str() + 1, nullptr, 8);
  } else {
    out = sign * std::strtoll(s.c_str(), nullptr, 10);
  }
  return errno == 0;
}

bool parse_yaml11_float(const std::string& text, double& out) {
  if (!std::regex_match(text, float_regex())) return false;
  std::string s = strip_underscores(text);
  const bool negative = !s.empty() && s[0] == '-';
  std::string body = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? s.substr(1) : s;
  if (body == ".inf" || body == ".Inf" || body == ".INF") {
    out = negative ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
  } else if (body == ".nan" || body == ".NaN" || body == ".NAN") {
    out = std::numeric_limits<double>::quiet_NaN();
  } else if (body.find(':') != std::string::npos) {
    out = (negative ? -1.0 : 1.0) * sexagesimal(body);
  } else {
    out = (negative ? -1.0 : 1.0) * std::strtod(body.c_str(), nullptr);
  }
  return true;
}

SourceLocation location_of(const YAML::Mark& mark, const std::string& file) {
  SourceLocation where;
  where.file = file;
  if (mark.line >= 0) where.line = mark.line + 1;
  if (mark.column >= 0) where.column = mark.column + 1;
  return where;
}

ConfigValue convert(const YAML::Node& node, const std::string& file, const EnvLookup& env,
                    const std::string& key);

void merge_key_into(ConfigValue& map, const ConfigValue& source) {
  for (const auto& [k, v] : source.entries) {
    if (map.find(k) == nullptr) map.entries.emplace_back(k, v);
  }
}

ConfigValue convert_map(const YAML::Node& node, const std::string& file, const EnvLookup& env,
                        const std::string& key) {
  ConfigValue out = ConfigValue::make_map(location_of(node.Mark(), file));
  std::set<std::string> seen;
  std::vector<ConfigValue> yaml_merges;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node k = it->first;  // a copy: the iterator yields a temporary
    const SourceLocation kloc = location_of(k.Mark(), file);
    if (!k.IsScalar()) throw InputError(kloc, key, "mapping keys must be scalars");
    const std::string name = k.Scalar();
    const std::string full = key.empty() ? name : key + "." + name;
    if (!seen.insert(name).second) {
      throw InputError(kloc, full, "duplicate key in the same mapping");
    }
    ConfigValue value = convert(it->second, file, env, full);
    if (value.where.line == 0) value.where = kloc;  // null values carry no mark of their own
    if (name == "<<" && k.Tag() != "!") {
      // YAML 1.1 merge key (yaml-cpp keeps it as an ordinary key): merge later, own keys win.
      if (value.is_map()) {
        yaml_merges.push_back(value);
      } else if (value.is_list()) {
        for (const ConfigValue& m : value.items) {
          if (!m.is_map()) throw InputError(kloc, full, "a merge key needs mappings");
          yaml_merges.push_back(m);
        }
      } else {
        throw InputError(kloc, full, "a merge key needs a mapping");
      }
      continue;
    }
    // Keys point at the key's line (where a user looks), not the value's.
    value.where = kloc;
    out.entries.emplace_back(name, std::move(value));
  }
  for (const ConfigValue& m : yaml_merges) merge_key_into(out, m);
  return out;
}

ConfigValue convert(const YAML::Node& node, const std::string& file, const EnvLookup& env,
                    const std::string& key) {
  const SourceLocation where = location_of(node.Mark(), file);
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: {
      ConfigValue v;
      v.where = where;
      return v;
    }
    case YAML::NodeType::Sequence: {
      ConfigValue v;
      v.kind = ConfigValue::Kind::kList;
      v.where = where;
      for (std::size_t i = 0; i < node.size(); ++i) {
        v.items.push_back(convert(node[i], file, env, fmt::format("{}[{}]", key, i)));
      }
      return v;
    }
    case YAML::NodeType::Map:
      return convert_map(node, file, env, key);
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& text = node.Scalar();
  const std::string& tag = node.Tag();
  const bool quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
  if (quoted) {
    if (auto sub = substitute_env(text, env, where, key)) return retype_substituted(*sub, where);
    return ConfigValue::make_string(text, where);
  }
  ConfigValue typed = resolve_plain_scalar(text, where);
  if (typed.kind == ConfigValue::Kind::kString) {
    if (auto sub = substitute_env(text, env, where, key)) return retype_substituted(*sub, where);
  }
  return typed;
}

std::string format_double(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v < 0 ? "-.inf" : ".inf";
  std::string s = fmt::format("{}", v);
  return s;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // the one place the process environment is read
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

EnvLookup fixed_environment(std::vector<std::pair<std::string, std::string>> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    for (const auto& [k, v] : vars) {
      if (k == name) return v;
    }
    return std::nullopt;
  };
}

const ConfigValue* ConfigValue::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

ConfigValue* ConfigValue::find(std::string_view key) {
  for (auto& [k, v] : entries) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ConfigValue::set(const std::string& key, ConfigValue value) {
  if (ConfigValue* existing = find(key)) {
    *existing = std::move(value);
  } else {
    entries.emplace_back(key, std::move(value));
  }
}

bool ConfigValue::erase(std::string_view key) {
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (it->first == key) {
      entries.erase(it);
      return true;
    }
  }
  return false;
}

std::string ConfigValue::to_text() const {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return b ? "true" : "false";
    case Kind::kInt:
      return fmt::format("{}", i);
    case Kind::kFloat:
      return format_double(f);
    case Kind::kString:
      return s;
    case Kind::kList: {
      std::string out = "[";
      for (std::size_t k = 0; k < items.size(); ++k) {
        if (k > 0) out += ", ";
        out += items[k].to_text();
      }
      return out + "]";
    }
    case Kind::kMap: {
      std::string out = "{";
      for (std::size_t k = 0; k < entries.size(); ++k) {
        if (k > 0) out += ", ";
        out += entries[k].first + ": " + entries[k].second.to_text();
      }
      return out + "}";
    }
  }
  return "";
}

ConfigValue ConfigValue::make_string(std::string text, SourceLocation where) {
  ConfigValue v;
  v.kind = Kind::kString;
  v.s = std::move(text);
  v.where = std::move(where);
  return v;
}

ConfigValue ConfigValue::make_int(std::int64_t value, SourceLocation where) {
  ConfigValue v;
  v.kind = Kind::kInt;
  v.i = value;
  v.s = fmt::format("{}", value);
  v.where = std::move(where);
  return v;
}

ConfigValue ConfigValue::make_bool(bool value, SourceLocation where) {
  ConfigValue v;
  v.kind = Kind::kBool;
  v.b = value;
  v.s = value ? "true" : "false";
  v.where = std::move(where);
  return v;
}

ConfigValue ConfigValue::make_map(SourceLocation where) {
  ConfigValue v;
  v.kind = Kind::kMap;
  v.where = std::move(where);
  return v;
}

ConfigValue resolve_plain_scalar(const std::string& text, SourceLocation where) {
  ConfigValue v;
  v.where = std::move(where);
  v.s = text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    v.kind = ConfigValue::Kind::kNull;
    return v;
  }
  static const char* const kTrue[] = {"yes",  "Yes", "YES", "true", "True",
                                      "TRUE", "on",  "On",  "ON"};
  static const char* const kFalse[] = {"no",    "No",  "NO",  "false", "False",
                                       "FALSE", "off", "Off", "OFF"};
  for (const char* t : kTrue) {
    if (text == t) {
      v.kind = ConfigValue::Kind::kBool;
      v.b = true;
      return v;
    }
  }
  for (const char* t : kFalse) {
    if (text == t) {
      v.kind = ConfigValue::Kind::kBool;
      v.b = false;
      return v;
    }
  }
  const char c0 = text[0];
  const bool numeric_start = (c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == '+' || c0 == '.';
  if (numeric_start) {
    if (parse_yaml11_int(text, v.i)) {
      v.kind = ConfigValue::Kind::kInt;
      return v;
    }
    if (parse_yaml11_float(text, v.f)) {
      v.kind = ConfigValue::Kind::kFloat;
      return v;
    }
  }
  v.kind = ConfigValue::Kind::kString;
  return v;
}

ConfigValue retype_substituted(const std::string& text, SourceLocation where) {
  ConfigValue v;
  v.where = std::move(where);
  v.s = text;
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "false") {
    v.kind = ConfigValue::Kind::kBool;
    v.b = lower == "true";
    return v;
  }
  static const std::regex int_re(R"(^[-+]?[0-9]+$)");
  static const std::regex float_re(
      R"(^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?$)");
  if (std::regex_match(text, int_re)) {
    errno = 0;
    v.i = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == 0) {
      v.kind = ConfigValue::Kind::kInt;
      return v;
    }
  }
  if (std::regex_match(text, float_re)) {
    v.kind = ConfigValue::Kind::kFloat;
    v.f = std::strtod(text.c_str(), nullptr);
    return v;
  }
  v.kind = ConfigValue::Kind::kString;
  return v;
}

std::optional<std::string> substitute_env(const std::string& text, const EnvLookup& env,
                                          const SourceLocation& where, const std::string& key) {
  if (text.find("${") == std::string::npos) return std::nullopt;
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find("${", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    out.append(text, pos, open - pos);
    const std::size_t close = text.find('}', open + 2);
    if (close == std::string::npos) {
      throw InputError(where, key, fmt::format("unterminated '${{' in \"{}\"", text));
    }
    const std::string body = text.substr(open + 2, close - open - 2);
    const std::size_t colon = body.find(':');
    const std::string name = body.substr(0, colon);
    if (name.empty()) throw InputError(where, key, fmt::format("empty variable in \"{}\"", text));
    std::optional<std::string> value = env ? env(name) : std::nullopt;
    if (!value) {
      if (colon == std::string::npos) {
        throw InputError(where, key,
                         fmt::format("environment variable {} is not set (and ${{{}}} has no "
                                     "default; write ${{{}:value}})",
                                     name, name, name));
      }
      value = body.substr(colon + 1);
    }
    out += *value;
    pos = close + 1;
  }
  return out;
}

ConfigValue parse_yaml_text(const std::string& text, const std::string& name,
                            const EnvLookup& env) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(location_of(e.mark, name), "", fmt::format("malformed YAML: {}", e.msg));
  }
  ConfigValue v = convert(root, name, env, "");
  if (v.is_null()) return ConfigValue::make_map(v.where);  // empty file
  return v;
}

ConfigValue parse_yaml_file(const std::string& path, const EnvLookup& env) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw InputError({path, 0, 0}, "", "file not found");
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError({path, 0, 0}, "", "cannot read file");
  } catch (const YAML::Exception& e) {
    throw InputError(location_of(e.mark, path), "", fmt::format("malformed YAML: {}", e.msg));
  }
  ConfigValue v = convert(root, path, env, "");
  if (v.is_null()) return ConfigValue::make_map(SourceLocation{path, 0, 0});
  if (!v.is_map()) throw InputError(v.where, "", "the top level of a config must be a mapping");
  return v;
}

void deep_merge(ConfigValue& base, const ConfigValue& top) {
  if (!base.is_map() || !top.is_map()) {
    base = top;
    return;
  }
  for (const auto& [k, v] : top.entries) {
    ConfigValue* existing = base.find(k);
    if (existing != nullptr && existing->is_map() && v.is_map()) {
      deep_merge(*existing, v);
    } else if (existing != nullptr) {
      *existing = v;
    } else {
      base.entries.emplace_back(k, v);
    }
  }
}

namespace {

ConfigValue load_chain(const fs::path& path, const EnvLookup& env, std::vector<fs::path>& stack,
                       const SourceLocation& referenced_from, const std::string& ref_key) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw InputError(referenced_from, ref_key, fmt::format("file not found: {}", path.string()));
  }
  const fs::path canonical = fs::weakly_canonical(path, ec);
  for (const fs::path& p : stack) {
    if (p == canonical) {
      throw InputError(referenced_from, ref_key,
                       fmt::format("extends cycle through {}", path.string()));
    }
  }
  stack.push_back(canonical);
  ConfigValue self = parse_yaml_file(path.string(), env);
  ConfigValue merged = ConfigValue::make_map(self.where);
  for (const char* parent_key : {"extends", "bases", "includes"}) {
    const ConfigValue* parents = self.find(parent_key);
    if (parents == nullptr || parents->is_null()) continue;
    std::vector<const ConfigValue*> list;
    if (parents->kind == ConfigValue::Kind::kString) {
      list.push_back(parents);
    } else if (parents->is_list()) {
      for (const ConfigValue& p : parents->items) list.push_back(&p);
    } else {
      throw InputError(parents->where, parent_key, "must be a path or a list of paths");
    }
    for (const ConfigValue* p : list) {
      if (p->kind != ConfigValue::Kind::kString) {
        throw InputError(p->where, parent_key, "must be a path or a list of paths");
      }
      fs::path parent = p->s;
      if (parent.is_relative()) parent = path.parent_path() / parent;
      deep_merge(merged, load_chain(parent, env, stack, p->where, parent_key));
    }
  }
  self.erase("extends");
  self.erase("bases");
  self.erase("includes");
  deep_merge(merged, self);
  stack.pop_back();
  return merged;
}

}  // namespace

ConfigValue load_yaml_with_extends(const std::string& path, const EnvLookup& env) {
  std::vector<fs::path> stack;
  return load_chain(path, env, stack, SourceLocation{path, 0, 0}, "");
}

}  // namespace projector
