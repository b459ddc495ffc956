// torchtitan versions (frontend/torchtitan/versions.h).
#include "frontend/torchtitan/versions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "frontend/torchtitan/adapter.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"
#include "projector/util/text.h"

namespace projector::frontend_detail {
namespace {

namespace fs = std::filesystem;

std::string trimmed(std::string_view s) {
  const std::size_t a = s.find_first_not_of(" \t\r\n");
  const std::size_t b = s.find_last_not_of(" \t\r\n");
  return a == std::string_view::npos ? std::string() : std::string(s.substr(a, b - a + 1));
}

bool is_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != 4 && i != 7 && !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// "v0.1.0", "0.1.0" or a date -> the version it names; nullopt when it names none in the table.
std::optional<TitanVersion> named_version(const TitanVersions& t, std::string_view text) {
  const std::string s = to_lower(text);
  if (is_date(s)) return TitanVersion{s, s, ""};
  const std::string tag = s.starts_with("v") ? s : "v" + s;
  for (const auto& [name, date] : t.tags) {
    if (name == tag) return TitanVersion{tag, date, ""};
  }
  return std::nullopt;
}

// Whether a token reads like a version (digits and dots, one dot at least, an optional v) or a
// date, so that an unknown one is reported rather than taken for noise.
bool looks_like_version(std::string_view s) {
  if (is_date(s)) return true;
  if (s.starts_with("v")) s.remove_prefix(1);
  return !s.empty() && s.find('.') != std::string_view::npos &&
         std::isdigit(static_cast<unsigned char>(s.front())) &&
         s.find_first_not_of("0123456789.") == std::string_view::npos;
}

[[noreturn]] void unknown_version(const TitanVersions& t, const SourceLocation& where,
                                  const std::string& key, std::string_view text) {
  std::string tags;
  for (const auto& [name, date] : t.tags) tags += (tags.empty() ? "" : ", ") + name;
  throw InputError(where, key,
                   fmt::format("unknown torchtitan version '{}' (a tag: {}; or a date "
                               "YYYY-MM-DD of a main-branch commit)",
                               text, tags));
}

// A header comment naming torchtitan and a version: "# torchtitan v0.1.0", "# torchtitan @
// 2025-03-10". Only the leading comment block is read.
std::optional<TitanVersion> header_version(const TitanVersions& t, const std::string& path,
                                           std::vector<std::string>& warnings) {
  std::error_code ec;
  if (path.empty() || !fs::is_regular_file(path, ec)) return std::nullopt;
  const std::string text = read_input_file(path);
  std::size_t start = 0;
  for (int line = 1; start < text.size(); ++line) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string l = to_lower(std::string_view(text).substr(start, end - start));
    start = end + 1;
    const std::size_t hash = l.find_first_not_of(" \t");
    if (hash == std::string::npos) continue;
    if (l[hash] != '#') break;
    if (l.find("torchtitan") == std::string::npos) continue;
    std::string token;
    for (std::size_t i = hash; i <= l.size(); ++i) {
      const char c = i < l.size() ? l[i] : ' ';
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') {
        token += c;
        continue;
      }
      if (looks_like_version(token)) {
        if (std::optional<TitanVersion> v = named_version(t, token)) {
          v->origin = fmt::format("{}:{} (the config's header)", path, line);
          return v;
        }
        warnings.push_back(fmt::format(
            "{}:{}: the header names torchtitan '{}', which the version table ({}) does not "
            "list: not used (--framework-version takes a tag or a date)",
            path, line, token, t.file));
      }
      token.clear();
    }
  }
  return std::nullopt;
}

std::vector<std::string> text_list(const ConfigValue* v) {
  std::vector<std::string> out;
  if (v != nullptr) {
    for (const ConfigValue& item : v->items) out.push_back(item.to_text());
  }
  return out;
}

void read_renames(const ConfigValue& doc, TitanVersions& t) {
  const auto need = [&](const ConfigValue& c, const char* key) -> std::string {
    const ConfigValue* v = c.find(key);
    if (v == nullptr || v->is_null()) throw InputError(c.where, key, "missing");
    return v->to_text();
  };
  if (const ConfigValue* list = doc.find("renames"); list != nullptr) {
    for (const ConfigValue& c : list->items) {
      TitanRename r{need(c, "old_key"), need(c, "key"), need(c, "since"),
                    text_list(c.find("when_true")), need(c, "source")};
      if (!is_date(r.since)) throw InputError(c.where, "renames.since", "expected YYYY-MM-DD");
      t.renames.push_back(std::move(r));
    }
  }
  if (const ConfigValue* list = doc.find("removed"); list != nullptr) {
    for (const ConfigValue& c : list->items) {
      TitanRemoved r{need(c, "key"), need(c, "until"), need(c, "source")};
      if (!is_date(r.until)) throw InputError(c.where, "removed.until", "expected YYYY-MM-DD");
      t.removed.push_back(std::move(r));
    }
  }
  if (const ConfigValue* list = doc.find("old_defaults"); list != nullptr) {
    for (const ConfigValue& c : list->items) {
      TitanOldDefault d{need(c, "key"), text_list(c.find("value")), need(c, "until"),
                        need(c, "source")};
      if (!is_date(d.until)) throw InputError(c.where, "old_defaults.until", "expected YYYY-MM-DD");
      t.old_defaults.push_back(std::move(d));
    }
  }
}

ConfigValue string_list(const std::vector<std::string>& items, SourceLocation where) {
  ConfigValue list;
  list.kind = ConfigValue::Kind::kList;
  list.where = where;
  for (const std::string& s : items) list.items.push_back(ConfigValue::make_string(s, where));
  return list;
}

std::string short_source(const std::string& source) {
  return source.substr(0, source.find(':'));
}

// model.norm_type as torchtitan read it before #1115 (norms.py build_norm): rmsnorm is the
// flavors' own norm; fused_rmsnorm a Triton kernel fusing the norm's passes, which the eager norm
// ops do not price (flagged); the LayerNorm variants change the model (refused).
void read_norm_type(const ConfigValue& value, const TitanRemoved& r, const TitanVersion& v,
                    std::vector<TitanReading>& notes, std::vector<std::string>& warnings) {
  const std::string type = value.to_text();
  const std::string origin =
      fmt::format("torchtitan {} before {} ({})", v.label, r.until, short_source(r.source));
  if (type == "rmsnorm") {
    notes.push_back({r.key, type, origin + ": the flavor's RMSNorm"});
  } else if (type == "fused_rmsnorm") {
    notes.push_back({r.key, type, origin});
    warnings.push_back(fmt::format(
        "{}:{}: model.norm_type = fused_rmsnorm (torchtitan's Triton FusedRMSNorm) is not "
        "modelled: the norm is priced as the eager ops unless the model is compiled",
        value.where.file, value.where.line));
  } else {
    throw InputError(value.where, r.key,
                     fmt::format("'{}' (torchtitan {}: layernorm, np_layernorm, rmsnorm, "
                                 "fused_rmsnorm): only the flavors' RMSNorm is modelled",
                                 type, v.label));
  }
}

}  // namespace

void apply_titan_renames(ConfigValue& args, const TitanVersions& t, const TitanVersion& v,
                         std::vector<TitanReading>& notes, std::vector<std::string>& warnings) {
  for (const TitanRename& r : t.renames) {
    ConfigValue* parent = nullptr;
    ConfigValue* old = find_dotted(args, r.old_key, &parent);
    if (old == nullptr) continue;
    const ConfigValue value = *old;
    const std::string leaf = r.old_key.substr(r.old_key.rfind('.') + 1);
    parent->erase(leaf);
    const std::string at =
        value.where.file.empty() ? "" : fmt::format("{}:{}: ", value.where.file, value.where.line);
    if (v.date >= r.since) {
      warnings.push_back(
          fmt::format("{}{}: not read: torchtitan {} (from {}) reads {} instead since {} ({})", at,
                      r.old_key, v.label, v.origin, r.key, r.since, short_source(r.source)));
      continue;
    }
    if (find_dotted(args, r.key, nullptr) != nullptr) {
      throw InputError(value.where, r.old_key,
                       fmt::format("states the same setting as {}, which torchtitan {} does not "
                                   "have yet ({}, {}): state one",
                                   r.key, v.label, short_source(r.source), r.since));
    }
    if (!r.when_true.empty()) {
      if (value.kind != ConfigValue::Kind::kBool) {
        throw InputError(value.where, r.old_key, "expected true or false");
      }
      if (!value.b) continue;
      set_dotted(args, r.key, string_list(r.when_true, value.where));
    } else {
      set_dotted(args, r.key, value);
    }
    notes.push_back({r.key, r.old_key + " = " + value.to_text(),
                     fmt::format("torchtitan {} before {} ({})", v.label, r.since, r.source)});
  }
  for (const TitanRemoved& r : t.removed) {
    ConfigValue* parent = nullptr;
    const ConfigValue* stated = find_dotted(args, r.key, &parent);
    if (stated == nullptr) continue;
    const ConfigValue value = *stated;
    parent->erase(r.key.substr(r.key.rfind('.') + 1));
    if (v.date >= r.until) {
      warnings.push_back(
          fmt::format("{}:{}: {}: not read: torchtitan {} (from {}) removed it on {} "
                      "({})",
                      value.where.file, value.where.line, r.key, v.label, v.origin, r.until,
                      short_source(r.source)));
    } else if (r.key == "model.norm_type") {
      read_norm_type(value, r, v, notes, warnings);
    }
  }
  for (const TitanOldDefault& d : t.old_defaults) {
    if (v.date >= d.until || find_dotted(args, d.key, nullptr) != nullptr) continue;
    set_dotted(args, d.key, string_list(d.value, SourceLocation{t.file, 0, 0}));
    notes.push_back({d.key, string_list(d.value, {}).to_text(),
                     fmt::format("torchtitan {} before {} ({})", v.label, d.until, d.source)});
  }
}

TitanVersions load_titan_versions(const std::string& data_dir) {
  TitanVersions t;
  t.file = (fs::path(data_dir) / "frameworks/torchtitan/versions.yaml").string();
  const ConfigValue doc = parse_yaml_file(t.file, EnvLookup{});
  const auto need = [&](const ConfigValue* v, const char* key) -> const ConfigValue& {
    if (v == nullptr || v->is_null()) throw InputError({t.file, 0, 0}, key, "missing");
    return *v;
  };
  t.current = need(doc.find("current"), "current").to_text();
  for (const auto& [tag, date] : need(doc.find("tags"), "tags").entries) {
    if (!is_date(date.to_text())) throw InputError(date.where, tag, "expected YYYY-MM-DD");
    t.tags.emplace_back(tag, date.to_text());
  }
  for (const ConfigValue& c : need(doc.find("changes"), "changes").items) {
    TitanChange ch;
    ch.key = need(c.find("key"), "changes.key").to_text();
    ch.since = need(c.find("since"), "changes.since").to_text();
    ch.old_key = need(c.find("old_key"), "changes.old_key").to_text();
    ch.before = need(c.find("before"), "changes.before").to_text();
    ch.source = need(c.find("source"), "changes.source").to_text();
    if (const ConfigValue* d = c.find("old_default"); d != nullptr && !d->is_null()) {
      ch.old_default = d->i;
    }
    if (!is_date(ch.since)) throw InputError(c.where, "changes.since", "expected YYYY-MM-DD");
    t.changes.push_back(std::move(ch));
  }
  read_renames(doc, t);
  return t;
}

TitanVersion resolve_titan_version(const AdapterInput& in, const TitanVersions& t,
                                   std::vector<std::string>& warnings) {
  if (!in.framework_version.empty()) {
    std::optional<TitanVersion> v = named_version(t, in.framework_version);
    if (!v)
      unknown_version(t, {"--framework-version", 0, 0}, "--framework-version",
                      in.framework_version);
    v->origin = "--framework-version";
    return *v;
  }
  if (std::optional<TitanVersion> v = header_version(t, in.source, warnings)) return *v;
  std::optional<TitanVersion> current = named_version(t, t.current);
  if (!current) throw InputError({t.file, 0, 0}, "current", "not one of the tags");
  const std::string checkout = torchtitan_checkout(in);
  std::error_code ec;
  const fs::path file = fs::path(checkout) / "assets/version.txt";
  if (!checkout.empty() && fs::is_regular_file(file, ec)) {
    const std::string text = trimmed(read_input_file(file.string()));
    if (std::optional<TitanVersion> v = named_version(t, text)) {
      v->origin = file.string() + " (the installed checkout)";
      return *v;
    }
    current->origin = fmt::format(
        "{} says {}, which the version table ({}) does not list: read "
        "as its current version",
        file.string(), text, t.file);
    return *current;
  }
  current->origin =
      fmt::format("none stated: the version job_config.yaml transcribes ({})", t.file);
  return *current;
}

const TitanChange* predating_change(const TitanVersions& t, const TitanVersion& v,
                                    std::string_view key) {
  for (const TitanChange& c : t.changes) {
    if (c.key == key && v.date < c.since) return &c;
  }
  return nullptr;
}

}  // namespace projector::frontend_detail
