#include "hardware/yaml_read.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "projector/util/input_file.h"
#include "projector/util/text.h"

namespace projector::hw_detail {

namespace {

std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string_view s) {
  return to_lower(s);
}

}  // namespace

SourceLocation location_of(const YamlContext& ctx, const YAML::Node& node,
                           const YAML::Node& fallback) {
  SourceLocation loc;
  loc.file = ctx.file;
  auto mark_of = [](const YAML::Node& n) -> std::optional<YAML::Mark> {
    if (!n.IsDefined()) return std::nullopt;
    const YAML::Mark m = n.Mark();
    if (m.is_null()) return std::nullopt;
    return m;
  };
  std::optional<YAML::Mark> m = mark_of(node);
  if (!m) m = mark_of(fallback);
  if (m) {
    loc.line = m->line + 1;
    loc.column = m->column + 1;
  }
  return loc;
}

YAML::Node load_yaml_file(const std::string& path) {
  const std::string text = read_input_file(path);
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    SourceLocation loc{path, 0, 0};
    if (!e.mark.is_null()) {
      loc.line = e.mark.line + 1;
      loc.column = e.mark.column + 1;
    }
    throw InputError(loc, "", fmt::format("YAML syntax error: {}", e.msg));
  } catch (const YAML::BadFile&) {
    throw InputError(SourceLocation{path, 0, 0}, "", "cannot read file");
  }
}

void fail(const YamlContext& ctx, const YAML::Node& node, const std::string& key,
          const std::string& message) {
  throw InputError(location_of(ctx, node), key, message);
}

bool is_null(const YAML::Node& node) {
  return !node.IsDefined() || node.IsNull();
}

std::optional<double> parse_number(const std::string& text) {
  const std::string t = trim(text);
  if (t.empty()) return std::nullopt;
  const char* begin = t.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end != begin + t.size()) return std::nullopt;
  // strtod accepts "nan"/"inf" and hex; none of them is a sensible hardware parameter.
  if (!std::isfinite(v)) return std::nullopt;
  for (char c : t) {
    if (c == 'x' || c == 'X') return std::nullopt;
  }
  return v;
}

double read_double(const YamlContext& ctx, const YAML::Node& node, const std::string& key) {
  if (!node.IsDefined() || node.IsNull()) fail(ctx, node, key, "a number is required");
  if (!node.IsScalar()) fail(ctx, node, key, "expected a number, found a list or mapping");
  const std::optional<double> v = parse_number(node.Scalar());
  if (!v) fail(ctx, node, key, fmt::format("'{}' is not a number", node.Scalar()));
  return *v;
}

int read_int(const YamlContext& ctx, const YAML::Node& node, const std::string& key) {
  const double v = read_double(ctx, node, key);
  // Primus converts with int(float(x)); we refuse a fraction instead of silently truncating it.
  if (v != std::floor(v)) {
    fail(ctx, node, key, fmt::format("'{}' is not a whole number", node.Scalar()));
  }
  if (std::fabs(v) > 2147483647.0) fail(ctx, node, key, "integer out of range");
  return static_cast<int>(v);
}

bool read_bool(const YamlContext& ctx, const YAML::Node& node, const std::string& key) {
  if (!node.IsDefined() || node.IsNull()) fail(ctx, node, key, "true or false is required");
  if (!node.IsScalar()) fail(ctx, node, key, "expected true or false");
  const std::string t = lower(trim(node.Scalar()));
  if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  fail(ctx, node, key, fmt::format("'{}' is not a boolean (true/false/1/0/yes/no/on/off)", t));
}

std::string read_string(const YamlContext& ctx, const YAML::Node& node, const std::string& key) {
  if (!node.IsDefined() || node.IsNull()) fail(ctx, node, key, "a string is required");
  if (!node.IsScalar()) fail(ctx, node, key, "expected a string, found a list or mapping");
  return node.Scalar();
}

std::optional<double> bytes_per_unit(const std::string& unit) {
  const std::string u = trim(unit);
  if (u == "B" || u == "bytes") return 1.0;
  if (u == "KB") return 1e3;
  if (u == "MB") return 1e6;
  if (u == "GB") return 1e9;
  if (u == "TB") return 1e12;
  if (u == "KiB") return 1024.0;
  if (u == "MiB") return 1024.0 * 1024.0;
  if (u == "GiB") return 1024.0 * 1024.0 * 1024.0;
  if (u == "TiB") return 1024.0 * 1024.0 * 1024.0 * 1024.0;
  return std::nullopt;
}

std::optional<double> bytes_per_s_per_unit(const std::string& unit) {
  const std::string u = trim(unit);
  if (u == "B/s") return 1.0;
  if (u == "MB/s") return 1e6;
  if (u == "GB/s") return 1e9;
  if (u == "TB/s") return 1e12;
  return std::nullopt;
}

}  // namespace projector::hw_detail
