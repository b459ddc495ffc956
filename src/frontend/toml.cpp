// TOML files (torchtitan job configs) -> ConfigValue, with toml++ (Debian libtomlplusplus-dev).
// toml++ stays in this one translation unit.
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "projector/frontend/loader.h"
#include "projector/util/input_file.h"

namespace projector {
namespace {

SourceLocation location(const toml::node& n, const std::string& path) {
  const toml::source_region& r = n.source();
  return {path, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

// Deeper than any job config, shallow enough for the stack (YAML documents have the same limit).
constexpr int kMaxDepth = 200;

ConfigValue convert(const toml::node& n, const std::string& path, int depth) {
  const SourceLocation where = location(n, path);
  if ((n.is_table() || n.is_array()) && depth > kMaxDepth) {
    throw InputError(where, "toml", fmt::format("nested deeper than {} levels", kMaxDepth));
  }
  if (const toml::table* t = n.as_table()) {
    ConfigValue m = ConfigValue::make_map(where);
    m.entries.reserve(t->size());
    // toml++ already refused duplicate keys: append without a lookup (linear in the keys).
    for (const auto& [k, v] : *t)
      m.entries.emplace_back(std::string(k.str()), convert(v, path, depth + 1));
    return m;
  }
  if (const toml::array* a = n.as_array()) {
    ConfigValue l;
    l.kind = ConfigValue::Kind::kList;
    l.where = where;
    l.items.reserve(a->size());
    for (const toml::node& item : *a) l.items.push_back(convert(item, path, depth + 1));
    return l;
  }
  if (const auto* s = n.as_string()) return ConfigValue::make_string(s->get(), where);
  if (const auto* i = n.as_integer()) {
    ConfigValue v = ConfigValue::make_int(i->get(), where);
    return v;
  }
  if (const auto* b = n.as_boolean()) return ConfigValue::make_bool(b->get(), where);
  if (const auto* f = n.as_floating_point()) {
    ConfigValue v;
    v.kind = ConfigValue::Kind::kFloat;
    v.f = f->get();
    v.s = fmt::format("{}", v.f);
    v.where = where;
    return v;
  }
  // Dates and times: kept as text (nothing in a job config the projection reads).
  std::string text;
  if (const auto* d = n.as_date())
    text = fmt::format("{}-{}-{}", d->get().year, d->get().month, d->get().day);
  return ConfigValue::make_string(text, where);
}

// toml++ recurses once per component of a dotted key ([a.b.c...], a.b.c = 1, {a.b.c = 1}) and
// overflows the stack on ~10^5 of them before any limit of its own applies, so dotted chains are
// counted first: the dots of a run of bare or quoted key parts (a float or a date has one), lines
// that begin inside a multi-line string excepted.
void check_key_depth(const std::string& text, const std::string& path) {
  std::size_t start = 0;
  bool in_multiline = false;
  for (int line = 1; start < text.size(); ++line) {
    const std::size_t eol = std::min(text.find('\n', start), text.size());
    const std::string_view l(text.data() + start, eol - start);
    start = eol + 1;
    const bool inside = in_multiline;
    for (const std::string_view delim : {std::string_view("\"\"\""), std::string_view("\'\'\'")}) {
      for (std::size_t q = l.find(delim); q != std::string_view::npos; q = l.find(delim, q + 3)) {
        in_multiline = !in_multiline;
      }
    }
    if (inside) continue;
    int dots = 0;
    for (std::size_t i = 0; i < l.size() && l[i] != '#'; ++i) {
      const char c = l[i];
      if (c == '"' || c == '\'') {
        const std::size_t close = l.find(c, i + 1);
        if (close == std::string_view::npos) break;
        i = close;  // a quoted key part (or a string value: what follows it ends the run)
      } else if (c == '.') {
        if (++dots >= kMaxDepth) {
          throw InputError({path, line, 0}, "toml",
                           fmt::format("a dotted key nested deeper than {} levels", kMaxDepth));
        }
      } else if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != ' ' &&
                 c != '\t') {
        dots = 0;  // '=', brackets, braces, commas end a run
      }
    }
  }
}

}  // namespace

ConfigValue parse_toml_file(const std::string& path) {
  // Read with the checks every input gets (a regular file, size cap), then parsed from memory.
  const std::string text = read_input_file(path);
  check_key_depth(text, path);
  try {
    const toml::table table = toml::parse(text, path);
    return convert(table, path, 0);
  } catch (const toml::parse_error& e) {
    throw InputError(
        {path, static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column)},
        "toml", std::string(e.description()));
  }
}

}  // namespace projector
