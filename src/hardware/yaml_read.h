// Small helpers for reading hardware YAML files with errors that name file, line and key.
// Internal to the hardware module.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "projector/util/error.h"

namespace projector::hw_detail {

// The file being read, for error locations.
struct YamlContext {
  std::string file;
};

// Location of `node` (1-based), or of `fallback` when `node` has no mark (a missing key).
SourceLocation location_of(const YamlContext& ctx, const YAML::Node& node,
                           const YAML::Node& fallback = YAML::Node());

// Parses a whole file; a syntax error becomes an InputError at its line.
YAML::Node load_yaml_file(const std::string& path);

[[noreturn]] void fail(const YamlContext& ctx, const YAML::Node& node, const std::string& key,
                       const std::string& message);

bool is_null(const YAML::Node& node);

// Scalar readers: `key` is the dotted path used in messages. Strings such as "1e6" are coerced
// like Primus does; anything that is not a number (or bool) is an InputError.
double read_double(const YamlContext& ctx, const YAML::Node& node, const std::string& key);
int read_int(const YamlContext& ctx, const YAML::Node& node, const std::string& key);
bool read_bool(const YamlContext& ctx, const YAML::Node& node, const std::string& key);
std::string read_string(const YamlContext& ctx, const YAML::Node& node, const std::string& key);

// Parses a number from text the way the readers above do; nullopt if it is not one.
std::optional<double> parse_number(const std::string& text);

// Multipliers for the `unit:` of a capacity (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB) and of a
// bandwidth (B/s, MB/s, GB/s, TB/s; decimal). nullopt for an unknown unit.
std::optional<double> bytes_per_unit(const std::string& unit);
std::optional<double> bytes_per_s_per_unit(const std::string& unit);

}  // namespace projector::hw_detail
