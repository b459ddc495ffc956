// Typed access to the merged Megatron arguments, recording every default it applies.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "projector/frontend/config_value.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/util/bounds.h"

namespace projector::frontend_detail {

class ArgReader {
 public:
  ArgReader(const ConfigValue& args, std::vector<AppliedDefault>& defaults)
      : args_(args), defaults_(defaults) {}

  // The value of `key`, or nullptr when absent or null.
  const ConfigValue* get(const std::string& key) const {
    const ConfigValue* v = args_.find(key);
    return (v == nullptr || v->is_null()) ? nullptr : v;
  }
  bool has(const std::string& key) const { return get(key) != nullptr; }
  SourceLocation where(const std::string& key) const {
    const ConfigValue* v = args_.find(key);
    return v != nullptr ? v->where : args_.where;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(where(key), key, message);
  }

  // Every integer is at most kMaxCount in magnitude (util/bounds.h), so narrowing it to int is
  // exact; a larger one is refused, never wrapped or truncated.
  std::int64_t as_int(const std::string& key, const ConfigValue& v) const {
    std::string error;
    const std::optional<std::int64_t> n = bounded_integer(v, error);
    if (!n) fail(key, error);
    return *n;
  }

  std::int64_t require_int(const std::string& key) const {
    const ConfigValue* v = get(key);
    if (v == nullptr) fail(key, "required but not set (model preset or overrides)");
    return as_int(key, *v);
  }

  std::int64_t int_or(const std::string& key, std::int64_t fallback, const std::string& reason) {
    const ConfigValue* v = get(key);
    if (v == nullptr) {
      note(key, fmt::format("{}", fallback), reason);
      return fallback;
    }
    return as_int(key, *v);
  }
  // No record (for values whose absence is the normal case, e.g. optional features).
  std::int64_t int_quiet(const std::string& key, std::int64_t fallback) const {
    const ConfigValue* v = get(key);
    return v == nullptr ? fallback : as_int(key, *v);
  }

  double float_or(const std::string& key, double fallback, const std::string& reason) {
    const ConfigValue* v = get(key);
    if (v == nullptr) {
      if (!reason.empty()) note(key, fmt::format("{}", fallback), reason);
      return fallback;
    }
    double d = 0.0;
    if (v->kind == ConfigValue::Kind::kFloat) {
      d = v->f;
    } else if (v->kind == ConfigValue::Kind::kInt) {
      d = static_cast<double>(v->i);
    } else if (!parse_number_text(*v, d)) {
      fail(key, fmt::format("expected a number, got '{}'", v->to_text()));
    }
    if (!std::isfinite(d)) fail(key, fmt::format("must be a finite number, got '{}'", v->s));
    return d;
  }

  // PyYAML leaves "1e-5" a string; Megatron's argparse would still read it as a number.
  static bool parse_number_text(const ConfigValue& v, double& out) {
    if (v.kind != ConfigValue::Kind::kString || v.s.empty()) return false;
    char* end = nullptr;
    out = std::strtod(v.s.c_str(), &end);
    return end != v.s.c_str() && *end == '\0';
  }

  bool as_bool(const std::string& key, const ConfigValue& v) const {
    if (v.kind == ConfigValue::Kind::kBool) return v.b;
    if (v.kind == ConfigValue::Kind::kInt && (v.i == 0 || v.i == 1)) return v.i == 1;
    fail(key, fmt::format("expected true or false, got '{}'", v.to_text()));
  }
  bool bool_or(const std::string& key, bool fallback, const std::string& reason) {
    const ConfigValue* v = get(key);
    if (v == nullptr) {
      if (!reason.empty()) note(key, fallback ? "true" : "false", reason);
      return fallback;
    }
    return as_bool(key, *v);
  }
  bool bool_quiet(const std::string& key, bool fallback) const {
    const ConfigValue* v = get(key);
    return v == nullptr ? fallback : as_bool(key, *v);
  }

  std::string string_or(const std::string& key, const std::string& fallback,
                        const std::string& reason) {
    const ConfigValue* v = get(key);
    if (v == nullptr) {
      if (!reason.empty()) note(key, fallback, reason);
      return fallback;
    }
    if (!v->is_scalar()) fail(key, fmt::format("expected a single value, got '{}'", v->to_text()));
    return v->kind == ConfigValue::Kind::kString ? v->s : v->to_text();
  }

  void note(const std::string& key, const std::string& value, const std::string& reason) {
    defaults_.push_back({key, value, reason});
  }

  const ConfigValue& args() const { return args_; }

 private:
  const ConfigValue& args_;
  std::vector<AppliedDefault>& defaults_;
};

}  // namespace projector::frontend_detail
