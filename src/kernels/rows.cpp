// Reading data/kernels/*.yaml: one list of rows per file, every field checked with its location.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "projector/kernels/kernels.h"
#include "projector/util/error.h"
#include "projector/util/input_file.h"

namespace projector {

namespace {

struct Reader {
  std::string file;

  SourceLocation at(const YAML::Node& n, int fallback_line) const {
    const YAML::Mark m = n.Mark();
    if (m.line >= 0 && m.pos >= 0) return {file, m.line + 1, m.column + 1};
    return {file, fallback_line, 0};
  }
  [[noreturn]] void fail(const YAML::Node& n, int line, const std::string& key,
                         const std::string& msg) const {
    throw InputError(at(n, line), key, msg);
  }
  std::string text(const YAML::Node& map, const char* key, int line, bool required) const {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
      if (required) fail(map, line, key, "missing");
      return {};
    }
    if (!v.IsScalar()) fail(v, line, key, "expected a text value");
    return v.Scalar();
  }
  double number(const YAML::Node& v, int line, const std::string& key) const {
    if (!v.IsScalar()) fail(v, line, key, "expected a number");
    try {
      std::size_t used = 0;
      const double d = std::stod(v.Scalar(), &used);
      if (used == v.Scalar().size() && std::isfinite(d)) return d;
    } catch (const std::exception&) {
    }
    fail(v, line, key, "expected a number, got '" + v.Scalar() + "'");
  }
  // A positive count (a shape dimension); absent keys keep their default.
  void count(const YAML::Node& map, const char* key, std::int64_t& out, int line) const {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) return;
    const double d = number(v, line, std::string("shape.") + key);
    if (d < 0.0 || d > 9.0e15 || d != std::floor(d)) {
      fail(v, line, std::string("shape.") + key, "expected a non-negative whole number");
    }
    out = static_cast<std::int64_t>(d);
  }
  void count(const YAML::Node& map, const char* key, int& out, int line) const {
    std::int64_t v = out;
    count(map, key, v, line);
    if (v > 1'000'000'000) fail(map[key], line, std::string("shape.") + key, "out of range");
    out = static_cast<int>(v);
  }
};

KernelClass parse_class(const Reader& r, const YAML::Node& n, int line) {
  static const std::pair<const char*, KernelClass> kNames[] = {
      {"gemm", KernelClass::kGemm},
      {"grouped_gemm", KernelClass::kGroupedGemm},
      {"attention", KernelClass::kAttention},
      {"memory", KernelClass::kMemory},
      {"permute", KernelClass::kPermute},
      {"ep_dispatch", KernelClass::kEpDispatch},
      {"collective", KernelClass::kCollective},
      {"linear_attention", KernelClass::kLinearAttention}};
  const std::string s = r.text(n, "op_class", line, true);
  for (const auto& [name, c] : kNames) {
    if (s == name) return c;
  }
  r.fail(n["op_class"], line, "op_class", "unknown op class '" + s + "'");
}

// nvfp4 / mxfp4 are priced in the fp4 format; the written name is kept for the reports.
Dtype parse_row_dtype(const Reader& r, const YAML::Node& n, int line, std::string& name) {
  name = r.text(n, "dtype", line, false);
  if (name.empty()) name = "bf16";
  if (name == "nvfp4" || name == "mxfp4") return Dtype::kFp4;
  // STREAM runs in double precision; only its bandwidth is used (memory rows priced by bytes).
  if (name == "fp64" && r.text(n, "op_class", line, true) == "memory") return Dtype::kFp32;
  if (const auto d = parse_dtype(name)) return *d;
  r.fail(n["dtype"], line, "dtype", "unknown dtype '" + name + "'");
}

// shape.m_per_group: each group's rows; groups and m, when also stated, must agree with it.
void read_group_sizes(const Reader& r, const YAML::Node& s, int line, KernelShape& out) {
  const YAML::Node list = s["m_per_group"];
  if (!list.IsDefined() || list.IsNull()) return;
  if (!list.IsSequence() || list.size() == 0) {
    r.fail(list, line, "shape.m_per_group", "expected a non-empty list of row counts");
  }
  std::int64_t total = 0;
  for (const YAML::Node& v : list) {
    const double d = r.number(v, line, "shape.m_per_group");
    if (d < 0.0 || d > 1.0e12 || d != std::floor(d)) {
      r.fail(v, line, "shape.m_per_group", "expected non-negative whole numbers");
    }
    out.m_per_group.push_back(static_cast<std::int64_t>(d));
    total += out.m_per_group.back();
  }
  const auto groups = static_cast<std::int64_t>(out.m_per_group.size());
  if ((s["groups"].IsDefined() && out.groups != groups) || (s["m"].IsDefined() && out.m != total)) {
    r.fail(list, line, "shape.m_per_group",
           fmt::format("{} groups of {} rows in all disagree with shape.groups {} / shape.m {}",
                       groups, total, out.groups, out.m));
  }
  out.groups = groups;
  out.m = total;
}

void read_shape(const Reader& r, const YAML::Node& s, int line, KernelShape& out) {
  if (!s.IsDefined() || s.IsNull()) r.fail(s, line, "shape", "missing");
  if (!s.IsMap()) r.fail(s, line, "shape", "expected a mapping");
  r.count(s, "m", out.m, line);
  r.count(s, "n", out.n, line);
  r.count(s, "k", out.k, line);
  r.count(s, "batch", out.batch, line);
  r.count(s, "groups", out.groups, line);
  read_group_sizes(r, s, line, out);
  r.count(s, "seq_q", out.seq_q, line);
  r.count(s, "seq_kv", out.seq_kv, line);
  r.count(s, "window", out.window, line);
  r.count(s, "heads_q", out.heads_q, line);
  r.count(s, "heads_kv", out.heads_kv, line);
  r.count(s, "head_dim", out.head_dim, line);
  r.count(s, "head_dim_v", out.head_dim_v, line);
  r.count(s, "state_dim", out.state_dim, line);
  r.count(s, "chunk", out.chunk, line);
  r.count(s, "tokens", out.tokens, line);
  r.count(s, "hidden", out.hidden, line);
  r.count(s, "topk", out.topk, line);
  r.count(s, "experts", out.experts, line);
  r.count(s, "router_groups", out.router_groups, line);
  r.count(s, "group_topk", out.group_topk, line);
  r.count(s, "ep", out.ep, line);
  r.count(s, "nodes", out.nodes, line);
  r.count(s, "ranks", out.ranks, line);
  r.count(s, "gpus_per_node", out.gpus_per_node, line);
  r.count(s, "sms", out.sms, line);
  r.count(s, "rows", out.rows, line);
  r.count(s, "cols", out.cols, line);
  if (const YAML::Node b = s["bytes"]; b.IsDefined() && !b.IsNull()) {
    out.bytes = r.number(b, line, "shape.bytes");
    if (out.bytes <= 0.0) r.fail(b, line, "shape.bytes", "expected a positive size");
  }
  if (const YAML::Node c = s["causal"]; c.IsDefined() && !c.IsNull()) {
    if (!c.IsScalar() || (c.Scalar() != "true" && c.Scalar() != "false")) {
      r.fail(c, line, "shape.causal", "expected true or false");
    }
    out.causal = c.Scalar() == "true";
  }
  out.pass = r.text(s, "pass", line, false);
  out.backend = r.text(s, "backend", line, false);
  out.kind = r.text(s, "kind", line, false);
  out.impl = r.text(s, "impl", line, false);
  out.direction = r.text(s, "direction", line, false);
  out.op = r.text(s, "op", line, false);
  if (out.seq_kv == 0) out.seq_kv = out.seq_q;
  if (out.heads_kv == 0) out.heads_kv = out.heads_q;
  if (out.head_dim_v == 0) out.head_dim_v = out.head_dim;
}

void read_measured(const Reader& r, const YAML::Node& m, int line, KernelRow& row) {
  static const std::pair<const char*, KernelMeasure> kKeys[] = {
      {"tflops", KernelMeasure::kTflops},
      {"time_us", KernelMeasure::kTimeUs},
      {"gb_per_s", KernelMeasure::kGbPerS},
      {"busbw_gb_per_s", KernelMeasure::kBusBwGbPerS},
      {"algbw_gb_per_s", KernelMeasure::kAlgBwGbPerS}};
  if (!m.IsMap()) r.fail(m, line, "measured", "expected a mapping with one measurement");
  int found = 0;
  for (const auto& [key, kind] : kKeys) {
    const YAML::Node v = m[key];
    if (!v.IsDefined() || v.IsNull()) continue;
    ++found;
    row.measure = kind;
    row.measured_value = r.number(v, line, std::string("measured.") + key);
    if (row.measured_value <= 0.0) {
      r.fail(v, line, std::string("measured.") + key, "expected a positive value");
    }
  }
  if (found != 1) {
    r.fail(m, line, "measured",
           "expected exactly one of tflops, time_us, gb_per_s, busbw_gb_per_s, algbw_gb_per_s");
  }
}

KernelRow read_row(const Reader& r, const YAML::Node& n) {
  KernelRow row;
  row.file = r.file;
  row.line = n.Mark().line + 1;
  if (!n.IsMap()) r.fail(n, row.line, "rows", "expected a mapping per row");
  const int line = row.line;
  row.id = r.text(n, "id", line, true);
  row.op_class = parse_class(r, n, line);
  row.accelerator = r.text(n, "accelerator", line, true);
  row.library = r.text(n, "library", line, false);
  row.dtype = parse_row_dtype(r, n, line, row.dtype_name);
  row.scaling = r.text(n, "scaling", line, false);
  row.flops_convention = r.text(n, "flops_convention", line, false);
  row.measured_on = r.text(n, "measured_on", line, false);
  if (!row.measured_on.empty() && row.measured_on != "device" && row.measured_on != "chip") {
    r.fail(n["measured_on"], line, "measured_on", "expected device or chip");
  }
  read_shape(r, n["shape"], line, row.shape);
  read_measured(r, n["measured"], line, row);
  const YAML::Node src = n["source"];
  if (!src.IsDefined() || !src.IsMap()) r.fail(n, line, "source", "missing (url, location, quote)");
  row.url = r.text(src, "url", line, true);
  row.location = r.text(src, "location", line, true);
  row.quote = r.text(src, "quote", line, true);
  row.note = r.text(n, "note", line, false);
  return row;
}

}  // namespace

std::vector<KernelRow> parse_kernel_rows(const std::string& yaml_text, const std::string& file) {
  const Reader r{file};
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw InputError({file, e.mark.line + 1, e.mark.column + 1}, "", e.msg);
  }
  const YAML::Node rows = doc["rows"];
  if (!doc.IsMap() || !rows.IsDefined() || !rows.IsSequence()) {
    throw InputError({file, 1, 0}, "rows", "expected a top-level 'rows:' list");
  }
  std::vector<KernelRow> out;
  out.reserve(rows.size());
  for (const YAML::Node& n : rows) out.push_back(read_row(r, n));
  return out;
}

std::vector<KernelRow> load_kernel_rows(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError({dir, 0, 0}, "", "not a directory");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".yaml" &&
        e.path().filename() != kKernelGapsFile) {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<KernelRow> all;
  std::set<std::string> ids;
  for (const std::string& f : files) {
    for (KernelRow& row : parse_kernel_rows(read_input_file(f), f)) {
      if (!ids.insert(row.id).second) {
        throw InputError({f, row.line, 0}, "id", "duplicate row id '" + row.id + "'");
      }
      all.push_back(std::move(row));
    }
  }
  return all;
}

std::vector<KernelGap> load_kernel_gaps(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(dir) / kKernelGapsFile).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  const Reader r{path};
  YAML::Node doc;
  try {
    doc = YAML::Load(read_input_file(path));
  } catch (const YAML::Exception& e) {
    throw InputError({path, e.mark.line + 1, e.mark.column + 1}, "", e.msg);
  }
  const YAML::Node list = doc["gaps"];
  if (!doc.IsMap() || !list.IsDefined() || !list.IsSequence()) {
    throw InputError({path, 1, 0}, "gaps", "expected a top-level 'gaps:' list");
  }
  std::vector<KernelGap> out;
  for (const YAML::Node& n : list) {
    const int line = n.Mark().line + 1;
    if (!n.IsMap()) r.fail(n, line, "gaps", "expected a mapping per gap");
    out.push_back({r.text(n, "op_class", line, true), r.text(n, "accelerator", line, true),
                   r.text(n, "reason", line, true), line});
  }
  return out;
}

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::kGemm:
      return "gemm";
    case KernelClass::kGroupedGemm:
      return "grouped_gemm";
    case KernelClass::kAttention:
      return "attention";
    case KernelClass::kMemory:
      return "memory";
    case KernelClass::kPermute:
      return "permute";
    case KernelClass::kEpDispatch:
      return "ep_dispatch";
    case KernelClass::kCollective:
      return "collective";
    case KernelClass::kLinearAttention:
      return "linear_attention";
  }
  return "?";
}

}  // namespace projector
