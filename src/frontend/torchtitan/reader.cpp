// torchtitan JobConfig access (frontend/torchtitan/reader.h).
#include "frontend/torchtitan/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace projector::frontend_detail {

const ConfigValue* find_dotted(const ConfigValue& root, const std::string& dotted) {
  const ConfigValue* node = &root;
  std::size_t start = 0;
  while (node != nullptr) {
    const std::size_t dot = dotted.find('.', start);
    const std::string part = dotted.substr(start, dot - start);
    if (!node->is_map()) return nullptr;
    node = node->find(part);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
  return nullptr;
}

TitanDefaults load_titan_defaults(const std::string& data_dir) {
  const std::string path =
      (std::filesystem::path(data_dir) / "frameworks/torchtitan/job_config.yaml").string();
  const ConfigValue doc = parse_yaml_file(path, EnvLookup{});
  TitanDefaults d;
  const ConfigValue* file = doc.find("file");
  const ConfigValue* version = doc.find("version");
  d.file = fmt::format("{} ({})", file != nullptr ? file->to_text() : path,
                       version != nullptr ? version->to_text() : "?");
  const ConfigValue* values = doc.find("defaults");
  if (values == nullptr || !values->is_map()) {
    throw InputError({path, 0, 0}, "defaults", "expected a mapping of dotted keys");
  }
  d.values = *values;
  return d;
}

const ConfigValue* TitanReader::stated(const std::string& dotted) const {
  const ConfigValue* v = find_dotted(args_, dotted);
  return v == nullptr || v->is_null() ? nullptr : v;
}

SourceLocation TitanReader::where(const std::string& dotted) const {
  const ConfigValue* v = find_dotted(args_, dotted);
  return v != nullptr ? v->where : args_.where;
}

void TitanReader::fail(const std::string& dotted, const std::string& message) const {
  throw InputError(where(dotted), dotted, message);
}

void TitanReader::note(const std::string& key, const std::string& value,
                       const std::string& reason) {
  applied_.push_back({key, value, reason, origins_.torchtitan_profile});
}

ConfigValue TitanReader::value(const std::string& dotted) {
  const bool first = std::find(recorded_.begin(), recorded_.end(), dotted) == recorded_.end();
  if (const ConfigValue* v = stated(dotted)) {
    // A value of Primus' module preset (or a file it extends) that nothing replaced is a default
    // of the Primus profile.
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(origins_.module_preset).parent_path();
    const fs::path from = fs::path(v->where.file).parent_path();
    const bool preset = !origins_.module_preset.empty() && !v->where.file.empty() &&
                        (from == dir || from == dir.parent_path());
    if (first && preset && !v->is_map()) {
      recorded_.push_back(dotted);
      applied_.push_back({dotted, v->to_text(),
                          fmt::format("Primus module preset {}:{}", v->where.file, v->where.line),
                          origins_.primus_profile});
    }
    return *v;
  }
  const ConfigValue* d = defaults_.values.find(dotted);
  if (d == nullptr || !d->is_map() || d->find("value") == nullptr) {
    fail(dotted, "required but not set");
  }
  ConfigValue v = *d->find("value");
  if (first) {
    recorded_.push_back(dotted);
    const ConfigValue* line = d->find("line");
    applied_.push_back({dotted, v.is_list() && v.items.empty() ? "[]" : v.to_text(),
                        fmt::format("torchtitan JobConfig default ({}:{})", defaults_.file,
                                    line != nullptr ? line->to_text() : "?"),
                        origins_.torchtitan_profile});
  }
  return v;
}

std::int64_t TitanReader::integer(const std::string& dotted) {
  const ConfigValue v = value(dotted);
  // A TOML string holding an integer (an environment substitution) is typed like YAML's.
  const ConfigValue typed =
      v.kind == ConfigValue::Kind::kString ? resolve_plain_scalar(v.s, v.where) : v;
  std::string error;
  if (const std::optional<std::int64_t> n = bounded_integer(typed, error)) return *n;
  fail(dotted, v.kind == ConfigValue::Kind::kString
                   ? fmt::format("expected an integer, got '{}'", v.to_text())
                   : error);
}

double TitanReader::number(const std::string& dotted) {
  const ConfigValue v = value(dotted);
  if (v.kind == ConfigValue::Kind::kInt) return static_cast<double>(v.i);
  if (v.kind == ConfigValue::Kind::kFloat && std::isfinite(v.f)) return v.f;
  fail(dotted, v.kind == ConfigValue::Kind::kFloat
                   ? fmt::format("must be a finite number, got '{}'", v.to_text())
                   : fmt::format("expected a number, got '{}'", v.to_text()));
}

bool TitanReader::boolean(const std::string& dotted) {
  const ConfigValue v = value(dotted);
  if (v.kind == ConfigValue::Kind::kBool) return v.b;
  fail(dotted, fmt::format("expected true or false, got '{}'", v.to_text()));
}

std::string TitanReader::text(const std::string& dotted) {
  const ConfigValue v = value(dotted);
  if (v.is_null()) return "";
  if (!v.is_scalar()) fail(dotted, fmt::format("expected a single value, got '{}'", v.to_text()));
  return v.kind == ConfigValue::Kind::kString ? v.s : v.to_text();
}

std::vector<std::string> TitanReader::strings(const std::string& dotted) {
  const ConfigValue v = value(dotted);
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_list()) {
    for (const ConfigValue& item : v.items) {
      if (!item.is_scalar()) fail(dotted, "expected a list of names");
      out.push_back(item.kind == ConfigValue::Kind::kString ? item.s : item.to_text());
    }
    return out;
  }
  if (v.kind != ConfigValue::Kind::kString) fail(dotted, "expected a list of names");
  std::size_t start = 0;
  while (start <= v.s.size()) {
    const std::size_t comma = std::min(v.s.find(',', start), v.s.size());
    std::string item = v.s.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace projector::frontend_detail
