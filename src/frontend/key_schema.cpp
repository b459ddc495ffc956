// Key schemas of the back-end adapters (data/frameworks/keys/<name>.txt) and the nearest-key
// suggestion for a misspelt key.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>

#include "projector/frontend/adapter.h"
#include "projector/frontend/loader.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"
#include "projector/util/text.h"

namespace projector {

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

KeySchema::KeySchema(std::vector<std::string> keys) {
  // Sorted first, every add() appends: a sorted insert per key is quadratic in a 1,500-key file.
  std::stable_sort(keys.begin(), keys.end());
  for (std::string& k : keys) add(std::move(k), KeyClass::kModelled);
}

void KeySchema::add(std::string key, KeyClass cls, NotModelledKey info) {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it != keys_.end() && *it == key) return;  // the first class given wins
  const auto at = it - keys_.begin();
  classes_.insert(classes_.begin() + at, cls);
  if (cls == KeyClass::kNotModelled) {
    const auto nm = std::lower_bound(not_modelled_.begin(), not_modelled_.end(), key,
                                     [](const std::pair<std::string, NotModelledKey>& e,
                                        const std::string& k) { return e.first < k; });
    not_modelled_.insert(nm, {key, std::move(info)});
  }
  keys_.insert(it, std::move(key));
}

KeyClass KeySchema::classify(std::string_view key) const {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  if (it == keys_.end() || *it != key) return KeyClass::kUnknown;
  return classes_[static_cast<std::size_t>(it - keys_.begin())];
}

const NotModelledKey* KeySchema::not_modelled(std::string_view key) const {
  const auto it = std::lower_bound(not_modelled_.begin(), not_modelled_.end(), key,
                                   [](const std::pair<std::string, NotModelledKey>& e,
                                      std::string_view k) { return e.first < k; });
  return it != not_modelled_.end() && it->first == key ? &it->second : nullptr;
}

std::string nearest_misspelling(std::string_view key, const std::vector<std::string>& candidates) {
  // Only suggest when the key is plausibly a misspelling (at most a third of it differs); the
  // distance is at least the length difference, so far longer or shorter keys are skipped.
  const int limit = std::max<int>(2, static_cast<int>(std::min<std::size_t>(key.size(), 1024)) / 3);
  if (key.size() > 1024) return "";
  std::string best;
  int best_d = 1 << 30;
  for (const std::string& k : candidates) {
    const auto diff =
        static_cast<int>(k.size() > key.size() ? k.size() - key.size() : key.size() - k.size());
    if (diff > limit) continue;
    const int d = edit_distance(key, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best_d <= limit) return best;
  // A name that extends a candidate by more than that ("llama3.1_8B_typo"): the longest such.
  best.clear();
  const std::string lk = to_lower(key);
  for (const std::string& k : candidates) {
    if (k.size() >= 4 && k.size() > best.size() && lk.starts_with(to_lower(k))) best = k;
  }
  return best;
}

std::string KeySchema::nearest(std::string_view key) const {
  return nearest_misspelling(key, keys_);
}

namespace {

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

// One key of a schema file, in file order.
struct SchemaLine {
  std::string key;
  KeyClass cls = KeyClass::kModelled;
  NotModelledKey info;
};

// `key = inert, values : meaning`
SchemaLine not_modelled_line(const std::string& line, const std::string& path, int line_no) {
  const std::size_t eq = line.find('=');
  const std::size_t colon = line.find(':', eq == std::string::npos ? 0 : eq);
  if (eq == std::string::npos || colon == std::string::npos) {
    throw InputError({path, line_no, 1}, "",
                     "a not_modelled line reads 'key = inert values : meaning'");
  }
  SchemaLine out{trim(line.substr(0, eq)), KeyClass::kNotModelled, {}};
  const std::string values = line.substr(eq + 1, colon - eq - 1);
  std::size_t start = 0;
  while (start <= values.size()) {
    const std::size_t comma = values.find(',', start);
    const std::string v = trim(values.substr(start, comma - start));
    if (!v.empty()) out.info.inert_values.push_back(to_lower(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  out.info.meaning = trim(line.substr(colon + 1));
  return out;
}

}  // namespace
std::string KeySchema::unknown_key_warning(const std::string& key, const SourceLocation& where,
                                           std::string_view noun) const {
  const std::string n = nearest(key);
  const std::string loc = where.file.empty() ? "" : fmt::format("{}:{}: ", where.file, where.line);
  return n.empty()
             ? fmt::format("{}unknown {} '{}' (ignored)", loc, noun, key)
             : fmt::format("{}unknown {} '{}' (ignored); did you mean '{}'?", loc, noun, key, n);
}

JobDraft start_draft(const AdapterInput& in) {
  JobDraft d;
  d.source = in.source;
  d.profile = in.profile;
  d.defaults = in.defaults;
  d.warnings = in.warnings;
  return d;
}

KeySchema load_backend_key_schema(const std::string& data_dir, std::string_view name) {
  return load_key_schema(data_dir + "/frameworks/keys/" + std::string(name) + ".txt");
}

KeySchema load_key_schema(const std::string& path) {
  std::istringstream in(read_input_file(path));
  std::vector<SchemaLine> lines;
  KeyClass section = KeyClass::kModelled;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line == "[modelled]") {
      section = KeyClass::kModelled;
    } else if (line == "[not_modelled]") {
      section = KeyClass::kNotModelled;
    } else if (line == "[known]") {
      section = KeyClass::kKnown;
    } else if (line.front() == '[') {
      throw InputError({path, line_no, 1}, "", "unknown section " + line);
    } else if (section == KeyClass::kNotModelled) {
      lines.push_back(not_modelled_line(line, path, line_no));
    } else {
      lines.push_back({line, section, {}});
    }
  }
  // Sorted (stably: the first class given wins) so that every add() appends; a sorted insert per
  // line is quadratic in the 1,500-key Megatron file, a millisecond of every process start.
  std::vector<std::size_t> order(lines.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lines[a].key < lines[b].key; });
  KeySchema schema;
  for (const std::size_t i : order) {
    schema.add(std::move(lines[i].key), lines[i].cls, std::move(lines[i].info));
  }
  return schema;
}

std::vector<std::string> unknown_key_warnings(const std::vector<std::string>& keys,
                                              const UnknownKeyCheck& check) {
  std::vector<std::string> out;
  std::set<std::string> warned;
  std::size_t more = 0;
  for (const std::string& key : keys) {
    if (check.schema.known(key) || !warned.insert(key).second) continue;
    if (!check.strict && out.size() >= kMaxListedUnknownKeys) {
      ++more;
      continue;
    }
    const SourceLocation where = check.locate(key);
    if (check.strict) {
      const std::string n = check.schema.nearest(key);
      throw InputError(where, key,
                       fmt::format("unknown {} (strict mode){}", check.noun,
                                   n.empty() ? "" : "; did you mean '" + n + "'?"));
    }
    out.push_back(check.schema.unknown_key_warning(key, where, check.noun));
  }
  add_unknown_key_summary(out, more, check.summary_at);
  return out;
}

std::vector<std::string> unknown_key_warnings(const ConfigValue& args,
                                              const std::vector<std::string>& user_keys,
                                              const KeySchema& schema, bool strict) {
  const auto locate = [&args](const std::string& key) {
    const ConfigValue* v = args.find(key);
    return v != nullptr ? v->where : SourceLocation{};
  };
  return unknown_key_warnings(user_keys, {schema, locate, args.where, strict});
}

void add_unknown_key_summary(std::vector<std::string>& warnings, std::size_t more,
                             const SourceLocation& where) {
  if (more == 0) return;
  const std::string loc = where.file.empty() ? "" : fmt::format("{}:{}: ", where.file, where.line);
  warnings.push_back(fmt::format("{}{} more unknown keys (ignored)", loc, more));
}

}  // namespace projector
