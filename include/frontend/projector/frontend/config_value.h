// A parsed configuration tree that remembers where every value came from (file:line), so that
// errors found long after parsing can still name the file, the line and the key.
//
// Scalars are typed with YAML 1.1 rules exactly as PyYAML resolves them (what Primus sees):
// `1e-5` (no dot) stays a string, yes/no/on/off are booleans, `017` is octal, `0x1F` hex, `1_000`
// an int, `.inf`/`.nan` floats, `~` null; quoted scalars are always strings.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "projector/util/error.h"

namespace projector {

// Environment lookup, injected so the library never reads the process environment itself.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// An EnvLookup over the real process environment (for the CLI; tests pass a fake).
EnvLookup process_environment();
// An EnvLookup over a fixed list of NAME=value pairs.
EnvLookup fixed_environment(std::vector<std::pair<std::string, std::string>> vars);

struct ConfigValue {
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kList, kMap };

  Kind kind = Kind::kNull;
  bool b = false;
  std::int64_t i = 0;
  double f = 0.0;
  std::string s;  // kString: the text; other scalars: the text as written (for messages)
  std::vector<ConfigValue> items;                            // kList
  std::vector<std::pair<std::string, ConfigValue>> entries;  // kMap, in file order
  SourceLocation where;

  // Defined out of line: the members hold ConfigValue itself, which is complete only there
  // (clang with libstdc++ rejects the implicit ones inside the class).
  ConfigValue();
  ConfigValue(const ConfigValue&);
  ConfigValue(ConfigValue&&) noexcept;
  ConfigValue& operator=(const ConfigValue&);
  ConfigValue& operator=(ConfigValue&&) noexcept;
  ~ConfigValue();

  bool is_null() const { return kind == Kind::kNull; }
  bool is_map() const { return kind == Kind::kMap; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_scalar() const { return kind != Kind::kList && kind != Kind::kMap; }

  const ConfigValue* find(std::string_view key) const;
  ConfigValue* find(std::string_view key);
  // Replaces the value of `key` (keeping its position) or appends it.
  void set(const std::string& key, ConfigValue value);
  bool erase(std::string_view key);

  // Compact single-line rendering: scalars as YAML would print them, lists as [a, b], maps as
  // {k: v}.
  std::string to_text() const;

  static ConfigValue make_string(std::string text, SourceLocation where = {});
  static ConfigValue make_int(std::int64_t value, SourceLocation where = {});
  static ConfigValue make_bool(bool value, SourceLocation where = {});
  static ConfigValue make_map(SourceLocation where = {});
};

// The value at a dotted key (a.b.c) of nested maps, nullptr when absent; `parent` (optional)
// receives the map that holds it.
ConfigValue* find_dotted(ConfigValue& root, std::string_view dotted,
                         ConfigValue** parent = nullptr);
// Sets a dotted key, creating (or replacing non-map values with) maps on the way.
void set_dotted(ConfigValue& root, std::string_view dotted, ConfigValue value);

// Types a plain (unquoted) scalar with PyYAML's YAML 1.1 resolver. An integer beyond int64 (PyYAML
// would give a Python int of any size) becomes a float with its value, never a wrapped integer.
ConfigValue resolve_plain_scalar(const std::string& text, SourceLocation where);
// True when `text` is a YAML 1.1 integer literal (decimal, 0b, 0x, octal or sexagesimal), whatever
// its size: lets a reader say "out of range" rather than "not an integer".
bool is_integer_literal(std::string_view text);
// The integer a value states (an int, an integral float, or an integer literal beyond int64 that
// arrived as a float) when it is at most kMaxCount (util/bounds.h) in magnitude, so narrowing it
// to int is exact. Otherwise nullopt, and `error` says why ("expected an integer, got 'x'" or
// "integer N is out of range ...").
std::optional<std::int64_t> bounded_integer(const ConfigValue& v, std::string& error);
// Re-types a string after environment substitution (Primus' rule: true/false -> bool, integer ->
// int, float -> float, else string).
ConfigValue retype_substituted(const std::string& text, SourceLocation where);

// Replaces `${VAR}` (error if unset) and `${VAR:default}` in `text`. Returns nullopt when `text`
// contains no substitution. `key` and `where` name the value in errors.
std::optional<std::string> substitute_env(const std::string& text, const EnvLookup& env,
                                          const SourceLocation& where, const std::string& key);

// Parses one YAML document (a file) into a tree. Env substitution is applied to string scalars;
// duplicate keys in a mapping and malformed YAML are InputErrors naming file and line.
ConfigValue parse_yaml_file(const std::string& path, const EnvLookup& env);
// Same, from text; `name` is used as the file name in locations and errors.
ConfigValue parse_yaml_text(const std::string& text, const std::string& name, const EnvLookup& env);

// Deep merge: nested maps merge recursively; scalars and lists in `top` replace those in `base`.
void deep_merge(ConfigValue& base, const ConfigValue& top);

// Loads a YAML file and resolves its `extends:` / `bases:` / `includes:` chain (string or list of
// paths relative to the file): parents are merged left to right, then the file itself on top.
ConfigValue load_yaml_with_extends(const std::string& path, const EnvLookup& env);

}  // namespace projector
