#include "projector/frontend/config_value.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "projector/util/bounds.h"
#include "projector/util/input_file.h"
#include "projector/util/text.h"

namespace projector {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ YAML 1.1 scalar typing
// PyYAML's resolver regexes, matched by hand: linear time and constant stack for any length
// (std::regex recurses once per character and overflows the stack on long digit strings).
//   int:   [-+]?0b[0-1_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+
//          | [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+
//   float: [-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)? | \.[0-9][0-9_]*([eE][-+][0-9]+)?
//          | [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]* | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Every character of `s` satisfies `ok`.
template <typename Pred>
bool all_chars(std::string_view s, Pred ok) {
  for (const char c : s) {
    if (!ok(c)) return false;
  }
  return true;
}

// Consumes `[0-9_]*` from s[i].
std::size_t skip_digits(std::string_view s, std::size_t i) {
  while (i < s.size() && (is_digit(s[i]) || s[i] == '_')) ++i;
  return i;
}

// Consumes `(:[0-5]?[0-9])+` from s[i]; returns npos when there is no such group at s[i].
std::size_t skip_sexagesimal(std::string_view s, std::size_t i) {
  std::size_t groups = 0;
  while (i < s.size() && s[i] == ':') {
    if (i + 1 >= s.size() || !is_digit(s[i + 1])) return std::string_view::npos;
    const char first = s[i + 1];
    i += 2;
    if (i < s.size() && is_digit(s[i]) && first <= '5') ++i;  // greedy is exact here
    ++groups;
  }
  return groups > 0 ? i : std::string_view::npos;
}

// Consumes `([eE][-+][0-9]+)?` from s[i]; npos when an exponent starts but is malformed.
std::size_t skip_exponent(std::string_view s, std::size_t i) {
  if (i >= s.size() || (s[i] != 'e' && s[i] != 'E')) return i;
  if (i + 2 >= s.size() || (s[i + 1] != '-' && s[i + 1] != '+') || !is_digit(s[i + 2])) {
    return std::string_view::npos;
  }
  i += 2;
  while (i < s.size() && is_digit(s[i])) ++i;
  return i;
}

std::string_view unsigned_part(std::string_view s, bool& has_sign) {
  has_sign = !s.empty() && (s[0] == '-' || s[0] == '+');
  return has_sign ? s.substr(1) : s;
}

bool matches_yaml11_int(std::string_view text) {
  bool sign = false;
  const std::string_view b = unsigned_part(text, sign);
  if (b.empty()) return false;
  auto bin = [](char c) { return c == '0' || c == '1' || c == '_'; };
  auto oct = [](char c) { return (c >= '0' && c <= '7') || c == '_'; };
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  if (b.starts_with("0b")) return b.size() > 2 && all_chars(b.substr(2), bin);
  if (b.starts_with("0x")) return b.size() > 2 && all_chars(b.substr(2), hex);
  if (b[0] == '0') return all_chars(b.substr(1), oct);
  if (!is_digit(b[0])) return false;
  const std::size_t i = skip_digits(b, 1);
  return i == b.size() || skip_sexagesimal(b, i) == b.size();
}

bool matches_yaml11_float(std::string_view text) {
  if (text == ".nan" || text == ".NaN" || text == ".NAN") return true;
  bool sign = false;
  const std::string_view b = unsigned_part(text, sign);
  if (b == ".inf" || b == ".Inf" || b == ".INF") return true;
  if (b.empty()) return false;
  if (b[0] == '.') {  // unsigned only
    if (sign || b.size() < 2 || !is_digit(b[1])) return false;
    return skip_exponent(b, skip_digits(b, 2)) == b.size();
  }
  if (!is_digit(b[0])) return false;
  std::size_t i = skip_digits(b, 1);
  if (i < b.size() && b[i] == ':') {  // sexagesimal float: no exponent
    i = skip_sexagesimal(b, i);
    if (i == std::string_view::npos || i >= b.size() || b[i] != '.') return false;
    return skip_digits(b, i + 1) == b.size();
  }
  if (i >= b.size() || b[i] != '.') return false;
  return skip_exponent(b, skip_digits(b, i + 1)) == b.size();
}

std::string strip_underscores(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != '_') out += c;
  }
  return out;
}

// Sexagesimal (base 60) value of "a:b:c" (YAML 1.1), as a double.
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

// Magnitude of the digits (no sign, no underscores) in `base`; false when it exceeds 2^64 - 1.
bool parse_magnitude(std::string_view digits, int base, std::uint64_t& out) {
  out = 0;
  if (digits.empty()) return true;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out, base);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

// Sexagesimal "a:b:c" as an exact integer magnitude; false on overflow.
bool sexagesimal_magnitude(const std::string& body, std::uint64_t& out) {
  out = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = body.find(':', start);
    std::uint64_t part = 0;
    if (!parse_magnitude(std::string_view(body).substr(start, colon - start), 10, part)) {
      return false;
    }
    if (__builtin_mul_overflow(out, std::uint64_t{60}, &out) ||
        __builtin_add_overflow(out, part, &out)) {
      return false;
    }
    if (colon == std::string::npos) return true;
    start = colon + 1;
  }
}

enum class IntParse { kNotInt, kInt, kOutOfRange };

// A YAML 1.1 integer in int64; kOutOfRange for one that does not fit (PyYAML would give a
// Python int of any size: the caller keeps it as a float, never a wrapped value).
IntParse parse_yaml11_int(const std::string& text, std::int64_t& out) {
  if (!matches_yaml11_int(text)) return IntParse::kNotInt;
  bool sign = false;
  const std::string s = strip_underscores(unsigned_part(text, sign));
  const bool negative = sign && text[0] == '-';
  std::uint64_t mag = 0;
  bool ok = false;
  if (s.find(':') != std::string::npos) {
    ok = sexagesimal_magnitude(s, mag);
  } else if (s.starts_with("0b")) {
    ok = parse_magnitude(std::string_view(s).substr(2), 2, mag);
  } else if (s.starts_with("0x")) {
    ok = parse_magnitude(std::string_view(s).substr(2), 16, mag);
  } else if (s.size() > 1 && s[0] == '0') {
    ok = parse_magnitude(std::string_view(s).substr(1), 8, mag);
  } else {
    ok = parse_magnitude(s, 10, mag);
  }
  constexpr std::uint64_t kMaxPositive = std::numeric_limits<std::int64_t>::max();
  if (!ok || mag > kMaxPositive + (negative ? 1 : 0)) return IntParse::kOutOfRange;
  out = negative ? static_cast<std::int64_t>(0 - mag) : static_cast<std::int64_t>(mag);
  return IntParse::kInt;
}

// The value of an integer literal too large for int64, as a double.
double huge_int_value(const std::string& text) {
  bool sign = false;
  const std::string s = strip_underscores(unsigned_part(text, sign));
  double magnitude = 0.0;
  if (s.find(':') != std::string::npos) {
    magnitude = sexagesimal(s);
  } else {
    const int base = s.starts_with("0b") ? 2 : s.starts_with("0x") ? 16 : s[0] == '0' ? 8 : 10;
    for (std::size_t i = base == 2 || base == 16 ? 2 : 0; i < s.size(); ++i) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
      magnitude = magnitude * base + (is_digit(c) ? c - '0' : c - 'a' + 10);
    }
  }
  return sign && text[0] == '-' ? -magnitude : magnitude;
}

// ([0-9]+.[0-9]*|.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)? (Python's float() of an environment value).
bool matches_plain_float(std::string_view b) {
  std::size_t i = 0;
  while (i < b.size() && is_digit(b[i])) ++i;
  const std::size_t int_digits = i;
  std::size_t frac_digits = 0;
  if (i < b.size() && b[i] == '.') {
    ++i;
    while (i < b.size() && is_digit(b[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < b.size() && (b[i] == 'e' || b[i] == 'E')) {
    ++i;
    if (i < b.size() && (b[i] == '-' || b[i] == '+')) ++i;
    if (i >= b.size() || !is_digit(b[i])) return false;
    while (i < b.size() && is_digit(b[i])) ++i;
  }
  return i == b.size();
}

bool parse_yaml11_float(const std::string& text, double& out) {
  if (!matches_yaml11_float(text)) return false;
  const std::string s = strip_underscores(text);
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

// Keys of a map -> their index, for merges that would otherwise search linearly per key.
class KeyIndex {
 public:
  explicit KeyIndex(const ConfigValue& map) {
    for (std::size_t i = 0; i < map.entries.size(); ++i) index_.emplace(map.entries[i].first, i);
  }
  ConfigValue* find(ConfigValue& map, const std::string& key) const {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &map.entries[it->second].second;
  }
  void append(ConfigValue& map, const std::string& key, const ConfigValue& value) {
    index_.emplace(key, map.entries.size());
    map.entries.emplace_back(key, value);
  }

 private:
  std::map<std::string, std::size_t, std::less<>> index_;
};

// YAML -> ConfigValue. Aliases are shared nodes in yaml-cpp but copies here, so a small file can
// expand exponentially ("billion laughs"): the conversion has a budget of values and text bytes,
// and a nesting limit (yaml-cpp bounds its own parser's depth).
class Converter {
 public:
  static constexpr std::size_t kMaxValues = std::size_t{1} << 20;
  static constexpr std::size_t kMaxTextBytes = std::size_t{64} << 20;
  static constexpr int kMaxDepth = 200;

  Converter(const std::string& file, const EnvLookup& env) : file_(file), env_(env) {}

  ConfigValue convert(const YAML::Node& node, const std::string& key, int depth) {
    const SourceLocation where = location_of(node.Mark(), file_);
    charge(where, key, node.IsScalar() ? node.Scalar().size() : 0);
    if (depth > kMaxDepth) {
      throw InputError(where, key, fmt::format("nested more than {} levels deep", kMaxDepth));
    }
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
        std::size_t i = 0;
        for (const YAML::Node& item : node) {
          v.items.push_back(convert(item, fmt::format("{}[{}]", key, i++), depth + 1));
        }
        return v;
      }
      case YAML::NodeType::Map:
        return convert_map(node, key, depth);
      case YAML::NodeType::Scalar:
        break;
    }
    return scalar(node, where, key);
  }

 private:
  void charge(const SourceLocation& where, const std::string& key, std::size_t bytes) {
    ++values_;
    text_bytes_ += bytes;
    if (values_ > kMaxValues || text_bytes_ > kMaxTextBytes) {
      throw InputError(where, key,
                       fmt::format("the document expands to more than {} values or {} MiB of "
                                   "text (aliases are copied on use)",
                                   kMaxValues, kMaxTextBytes >> 20));
    }
  }

  ConfigValue scalar(const YAML::Node& node, const SourceLocation& where, const std::string& key) {
    const std::string& text = node.Scalar();
    // Every value can reach a JSON report, and JSON is UTF-8.
    if (!is_valid_utf8(text)) {
      throw InputError(where, escape_invalid_utf8(key),
                       "the value is not valid UTF-8 (save the file as UTF-8)");
    }
    const std::string& tag = node.Tag();
    const bool quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
    if (quoted) {
      if (auto sub = substitute_env(text, env_, where, key)) return retype_substituted(*sub, where);
      return ConfigValue::make_string(text, where);
    }
    ConfigValue typed = resolve_plain_scalar(text, where);
    if (typed.kind == ConfigValue::Kind::kString) {
      if (auto sub = substitute_env(text, env_, where, key)) return retype_substituted(*sub, where);
    }
    return typed;
  }

  // YAML 1.1 merge keys (yaml-cpp keeps `<<` as an ordinary key): merged last, own keys win.
  void collect_merge(const ConfigValue& value, const SourceLocation& kloc, const std::string& full,
                     std::vector<ConfigValue>& merges) {
    if (value.is_map()) {
      merges.push_back(value);
    } else if (value.is_list()) {
      for (const ConfigValue& m : value.items) {
        if (!m.is_map()) throw InputError(kloc, full, "a merge key needs mappings");
        merges.push_back(m);
      }
    } else {
      throw InputError(kloc, full, "a merge key needs a mapping");
    }
  }

  ConfigValue convert_map(const YAML::Node& node, const std::string& key, int depth) {
    ConfigValue out = ConfigValue::make_map(location_of(node.Mark(), file_));
    std::set<std::string, std::less<>> seen;
    std::vector<ConfigValue> yaml_merges;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node k = it->first;  // a copy: the iterator yields a temporary
      const SourceLocation kloc = location_of(k.Mark(), file_);
      if (!k.IsScalar()) throw InputError(kloc, key, "mapping keys must be scalars");
      const std::string name = k.Scalar();
      if (!is_valid_utf8(name)) {
        throw InputError(kloc, escape_invalid_utf8(key.empty() ? name : key + "." + name),
                         "the key is not valid UTF-8 (save the file as UTF-8)");
      }
      const std::string full = key.empty() ? name : key + "." + name;
      if (!seen.insert(name).second) {
        throw InputError(kloc, full, "duplicate key in the same mapping");
      }
      ConfigValue value = convert(it->second, full, depth + 1);
      if (name == "<<" && k.Tag() != "!") {
        if (value.where.line == 0) value.where = kloc;
        collect_merge(value, kloc, full, yaml_merges);
        continue;
      }
      // Keys point at the key's line (where a user looks), not the value's.
      value.where = kloc;
      out.entries.emplace_back(name, std::move(value));
    }
    if (!yaml_merges.empty()) {
      KeyIndex index(out);
      for (const ConfigValue& m : yaml_merges) {
        for (const auto& [k, v] : m.entries) {
          if (index.find(out, k) == nullptr) index.append(out, k, v);
        }
      }
    }
    return out;
  }

  const std::string& file_;
  const EnvLookup& env_;
  std::size_t values_ = 0;
  std::size_t text_bytes_ = 0;
};

ConfigValue convert_document(const YAML::Node& root, const std::string& file,
                             const EnvLookup& env) {
  Converter c(file, env);
  return c.convert(root, "", 0);
}

// Where each document of a YAML stream starts and where its content starts (the events
// themselves are not kept).
class DocumentStarts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;    // document starts
  std::vector<YAML::Mark> content;  // each document's first node (its start when empty)
  void OnDocumentStart(const YAML::Mark& mark) override {
    marks.push_back(mark);
    content.push_back(mark);
    fresh_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (fresh_) content.back() = m;
    fresh_ = false;
  }
  bool fresh_ = false;
};

// The documents are counted first, by hand: yaml-cpp 0.7 never consumes a ',' outside a flow
// collection, so its LoadAll returns an empty document at that place for ever (a hang found by
// the fuzzer). A document that starts where the previous one did is that case, refused.
YAML::Node load_yaml(const std::string& text, const std::string& name) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentStarts docs;
    while (parser.HandleNextDocument(docs)) {
      const std::size_t n = docs.marks.size();
      if (n >= 2 && docs.marks[n - 1].pos == docs.marks[n - 2].pos) {
        throw InputError(location_of(docs.marks[n - 1], name), "",
                         "malformed YAML: a ',' outside a flow collection ([...] or {...})");
      }
    }
    // A second document (after `---`) would be ignored by a one-document load: refuse it.
    if (docs.marks.size() > 1) {
      throw InputError(location_of(docs.content[1], name), "",
                       fmt::format("the file holds {} YAML documents (separated by '---'); a "
                                   "config is one document",
                                   docs.marks.size()));
    }
    return docs.marks.empty() ? YAML::Node() : YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(location_of(e.mark, name), "", fmt::format("malformed YAML: {}", e.msg));
  }
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

ConfigValue::ConfigValue() = default;
ConfigValue::ConfigValue(const ConfigValue&) = default;
ConfigValue::ConfigValue(ConfigValue&&) noexcept = default;
ConfigValue& ConfigValue::operator=(const ConfigValue&) = default;
ConfigValue& ConfigValue::operator=(ConfigValue&&) noexcept = default;
ConfigValue::~ConfigValue() = default;

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

bool is_integer_literal(std::string_view text) {
  return matches_yaml11_int(text);
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
    switch (parse_yaml11_int(text, v.i)) {
      case IntParse::kInt:
        v.kind = ConfigValue::Kind::kInt;
        return v;
      case IntParse::kOutOfRange:  // beyond int64: its value as a float, never a wrapped int
        v.kind = ConfigValue::Kind::kFloat;
        v.f = huge_int_value(text);
        return v;
      case IntParse::kNotInt:
        break;
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
  // Integer: [-+]?[0-9]+; float: [-+]?([0-9]+.[0-9]*|.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?
  bool sign = false;
  const std::string_view b = unsigned_part(text, sign);
  const std::size_t int_end = skip_digits(b, 0);
  const bool has_underscore = b.find('_') != std::string_view::npos;
  if (!b.empty() && int_end == b.size() && !has_underscore) {
    std::uint64_t mag = 0;
    const bool negative = sign && text[0] == '-';
    constexpr std::uint64_t kMaxPositive = std::numeric_limits<std::int64_t>::max();
    if (parse_magnitude(b, 10, mag) && mag <= kMaxPositive + (negative ? 1 : 0)) {
      v.kind = ConfigValue::Kind::kInt;
      v.i = negative ? static_cast<std::int64_t>(0 - mag) : static_cast<std::int64_t>(mag);
      return v;
    }
  }
  if (!has_underscore && matches_plain_float(b)) {
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
  ConfigValue v = convert_document(load_yaml(text, name), name, env);
  if (v.is_null()) return ConfigValue::make_map(v.where);  // empty file
  return v;
}

ConfigValue parse_yaml_file(const std::string& path, const EnvLookup& env) {
  const std::string text = read_input_file(path);
  ConfigValue v = convert_document(load_yaml(text, path), path, env);
  if (v.is_null()) return ConfigValue::make_map(SourceLocation{path, 0, 0});
  if (!v.is_map()) throw InputError(v.where, "", "the top level of a config must be a mapping");
  return v;
}

void deep_merge(ConfigValue& base, const ConfigValue& top) {
  if (!base.is_map() || !top.is_map()) {
    base = top;
    return;
  }
  // Small merges (the common case) search linearly; large ones index the base's keys once, so
  // merging n keys into m costs O((n + m) log m) instead of O(n m).
  std::optional<KeyIndex> index;
  if (base.entries.size() * top.entries.size() > 1024) index.emplace(base);
  for (const auto& [k, v] : top.entries) {
    ConfigValue* existing = index ? index->find(base, k) : base.find(k);
    if (existing != nullptr && existing->is_map() && v.is_map()) {
      deep_merge(*existing, v);
    } else if (existing != nullptr) {
      *existing = v;
    } else if (index) {
      index->append(base, k, v);
    } else {
      base.entries.emplace_back(k, v);
    }
  }
}

namespace {

constexpr std::size_t kMaxExtendsDepth = 64;
constexpr std::size_t kMaxExtendsFiles = 1024;

// Resolves `extends:` chains. Each file is loaded and resolved once per chain (memoised by its
// canonical path): a file included twice on every level is not loaded 2^depth times.
class ExtendsLoader {
 public:
  explicit ExtendsLoader(const EnvLookup& env) : env_(env) {}

  ConfigValue load(const fs::path& path, const SourceLocation& referenced_from,
                   const std::string& ref_key) {
    check_input_file(path.string(), kMaxInputFileBytes, referenced_from, ref_key);
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    for (const std::string& p : stack_) {
      if (p == canonical) {
        throw InputError(referenced_from, ref_key,
                         fmt::format("extends cycle through {}", path.string()));
      }
    }
    if (const auto it = done_.find(canonical); it != done_.end()) return it->second;
    // Primus chains are a handful of files deep; thousands of levels (each merge copies the map
    // below it) would take minutes and gigabytes.
    if (stack_.size() >= kMaxExtendsDepth || done_.size() >= kMaxExtendsFiles) {
      throw InputError(referenced_from, ref_key,
                       fmt::format("extends chains are limited to {} levels and {} files; {} "
                                   "goes past that",
                                   kMaxExtendsDepth, kMaxExtendsFiles, path.string()));
    }
    stack_.push_back(canonical);
    ConfigValue merged = resolve(path);
    stack_.pop_back();
    done_.emplace(canonical, merged);
    return merged;
  }

 private:
  ConfigValue resolve(const fs::path& path) {
    ConfigValue self = parse_yaml_file(path.string(), env_);
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
        deep_merge(merged, load(parent, p->where, parent_key));
      }
    }
    self.erase("extends");
    self.erase("bases");
    self.erase("includes");
    deep_merge(merged, self);
    return merged;
  }

  const EnvLookup& env_;
  std::vector<std::string> stack_;
  std::map<std::string, ConfigValue> done_;
};

}  // namespace

ConfigValue load_yaml_with_extends(const std::string& path, const EnvLookup& env) {
  ExtendsLoader loader(env);
  return loader.load(path, SourceLocation{}, "");
}

std::optional<std::int64_t> bounded_integer(const ConfigValue& v, std::string& error) {
  const bool integral_float =
      v.kind == ConfigValue::Kind::kFloat &&
      ((std::isfinite(v.f) && v.f == std::trunc(v.f)) || is_integer_literal(v.s));
  if (v.kind != ConfigValue::Kind::kInt && !integral_float) {
    error = fmt::format("expected an integer, got '{}'", v.to_text());
    return std::nullopt;
  }
  const bool in_range = v.kind == ConfigValue::Kind::kInt
                            ? v.i >= -kMaxCount && v.i <= kMaxCount
                            : std::isfinite(v.f) && std::fabs(v.f) <= kMaxCount;
  if (!in_range) {
    const std::string text = v.s.empty() ? v.to_text() : v.s;
    error = fmt::format("integer {} is out of range (at most {} in magnitude)",
                        text.size() <= 40
                            ? text
                            : fmt::format("{}... ({} characters)", text.substr(0, 24), text.size()),
                        kMaxCount);
    return std::nullopt;
  }
  return v.kind == ConfigValue::Kind::kInt ? v.i : static_cast<std::int64_t>(v.f);
}

ConfigValue* find_dotted(ConfigValue& root, std::string_view dotted, ConfigValue** parent) {
  ConfigValue* at = &root;
  std::size_t start = 0;
  while (at->is_map()) {
    const std::size_t dot = dotted.find('.', start);
    ConfigValue* next = at->find(dotted.substr(start, dot - start));
    if (next == nullptr) return nullptr;
    if (dot == std::string_view::npos) {
      if (parent != nullptr) *parent = at;
      return next;
    }
    at = next;
    start = dot + 1;
  }
  return nullptr;
}

void set_dotted(ConfigValue& root, std::string_view dotted, ConfigValue value) {
  ConfigValue* node = &root;
  std::size_t start = 0;
  for (std::size_t dot = dotted.find('.'); dot != std::string_view::npos;
       dot = dotted.find('.', start)) {
    const std::string part(dotted.substr(start, dot - start));
    ConfigValue* child = node->find(part);
    if (child == nullptr || !child->is_map()) {
      node->set(part, ConfigValue::make_map(value.where));
      child = node->find(part);
    }
    node = child;
    start = dot + 1;
  }
  node->set(std::string(dotted.substr(start)), std::move(value));
}

}  // namespace projector
