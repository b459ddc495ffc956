// TOML files (torchtitan job configs) -> ConfigValue, with toml++ (Debian libtomlplusplus-dev).
// toml++ stays in this one translation unit.
#include <fmt/format.h>
#include <toml++/toml.h>

#include "projector/frontend/loader.h"

namespace projector {
namespace {

SourceLocation location(const toml::node& n, const std::string& path) {
  const toml::source_region& r = n.source();
  return {path, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
}

ConfigValue convert(const toml::node& n, const std::string& path) {
  const SourceLocation where = location(n, path);
  if (const toml::table* t = n.as_table()) {
    ConfigValue m = ConfigValue::make_map(where);
    for (const auto& [k, v] : *t) m.set(std::string(k.str()), convert(v, path));
    return m;
  }
  if (const toml::array* a = n.as_array()) {
    ConfigValue l;
    l.kind = ConfigValue::Kind::kList;
    l.where = where;
    for (const toml::node& item : *a) l.items.push_back(convert(item, path));
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

}  // namespace

ConfigValue parse_toml_file(const std::string& path) {
  try {
    const toml::table table = toml::parse_file(path);
    return convert(table, path);
  } catch (const toml::parse_error& e) {
    throw InputError(
        {path, static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column)},
        "toml", std::string(e.description()));
  }
}

}  // namespace projector
