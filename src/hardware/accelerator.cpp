// Accelerator files: data/hardware/accelerators/<name>.yaml. Every fact is a {value, source} pair
// (or a bare number inside a group that has a `source:`), so `projector hardware show` can print
// where each number came from. See docs/hardware.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string_view>

#include "hardware/yaml_read.h"
#include "projector/hardware/catalog.h"

namespace projector {

namespace hw = hw_detail;

namespace {

constexpr std::string_view kTopKeys[] = {"name",
                                         "display_name",
                                         "vendor",
                                         "arch",
                                         "aliases",
                                         "notes",
                                         "status",
                                         "derived_from",
                                         "devices_per_chip",
                                         "peak_tflops",
                                         "compute_units",
                                         "dies",
                                         "boost_clock_mhz",
                                         "sustained_clock_mhz",
                                         "board_power_w",
                                         "idle_power_w",
                                         "hbm_capacity",
                                         "hbm_bandwidth",
                                         "l2",
                                         "llc",
                                         "lds_per_cu",
                                         "default_gpus_per_node",
                                         "scaleup_bandwidth",
                                         "scaleup_topology",
                                         "scaleup_domain",
                                         "scaleup_links",
                                         "scaleup_link_bandwidth",
                                         "torus_dims",
                                         "torus_wraparound",
                                         "scaleout_bandwidth",
                                         "matrix_unit_dim",
                                         "gemm_epilogue",
                                         "host_bandwidth",
                                         "default_network",
                                         "calibration"};

// Published peaks of formats the cost models do not price: optional, informational.
constexpr std::string_view kExtraPeakKeys[] = {"fp64", "fp6", "mxfp6", "mxfp4", "nvfp4", "int8"};

constexpr std::string_view kWraparounds[] = {"always", "full_axis", "cube_multiples", "none"};

constexpr std::string_view kGemmEpilogues[] = {"per_tile", "overlapped"};

// derived_from chains longer than this are refused (they are also checked for cycles).
constexpr int kMaxDerivationDepth = 4;

using Cal = AcceleratorSpec::Calibration;

// The scalar calibration keys: range, unit handling and whether a non-derived file needs them.
struct CalKey {
  const char* key;
  Sourced Cal::*member;
  double lo;
  double hi;
  bool lo_open;
  bool bytes;
  bool required;
};
constexpr CalKey kCalKeys[] = {
    {"attention_fwd_fraction", &Cal::attention_fwd_fraction, 0, 1, true, false, true},
    {"attention_bwd_fraction", &Cal::attention_bwd_fraction, 0, 1, true, false, true},
    {"attention_fa2_fwd_fraction", &Cal::attention_fa2_fwd_fraction, 0, 1, true, false, false},
    {"attention_fa2_bwd_fraction", &Cal::attention_fa2_bwd_fraction, 0, 1, true, false, false},
    {"attention_fp8_fwd_fraction", &Cal::attention_fp8_fwd_fraction, 0, 1, true, false, false},
    {"attention_fp8_bwd_fraction", &Cal::attention_fp8_bwd_fraction, 0, 1, true, false, false},
    {"attention_mxfp8_fwd_fraction", &Cal::attention_mxfp8_fwd_fraction, 0, 1, true, false, false},
    {"attention_mxfp8_bwd_fraction", &Cal::attention_mxfp8_bwd_fraction, 0, 1, true, false, false},
    {"hbm_elementwise_fraction", &Cal::hbm_elementwise_fraction, 0, 1, true, false, true},
    {"hbm_permute_fraction", &Cal::hbm_permute_fraction, 0, 1, true, false, true},
    {"hbm_gather_fraction", &Cal::hbm_gather_fraction, 0, 1, true, false, false},
    {"hbm_optimizer_fraction", &Cal::hbm_optimizer_fraction, 0, 1, true, false, true},
    {"hbm_loss_fraction", &Cal::hbm_loss_fraction, 0, 1, true, false, true},
    {"kernel_launch_s", &Cal::kernel_launch_s, 0, 1e-2, false, false, true},
    {"runtime_context_bytes", &Cal::runtime_context_bytes, 0, 1e12, false, true, true},
    {"comm_buffer_bytes_per_group", &Cal::comm_buffer_bytes_per_group, 0, 1e12, false, true, true},
    {"workspace_bytes", &Cal::workspace_bytes, 0, 1e12, false, true, true},
    {"fragmentation_fraction", &Cal::fragmentation_fraction, 0, 1, false, false, true},
    {"fragmentation_upper_fraction", &Cal::fragmentation_upper_fraction, 0, 1, false, false, true},
    {"fragmentation_expandable_fraction", &Cal::fragmentation_expandable_fraction, 0, 1, false,
     false, false},
    {"fragmentation_expandable_upper_fraction", &Cal::fragmentation_expandable_upper_fraction, 0, 1,
     false, false, false},
    {"comm_compute_interference", &Cal::comm_compute_interference, 0, 1, false, false, true},
    {"grouped_gemm_fraction", &Cal::grouped_gemm_fraction, 0, 1, true, false, false},
    {"grouped_gemm_fraction_fp8", &Cal::grouped_gemm_fraction_fp8, 0, 1, true, false, false},
    {"gemm_fp8_blockwise_fraction", &Cal::gemm_fp8_blockwise_fraction, 0, 1, true, false, false},
    {"kernel_fixed_s", &Cal::kernel_fixed_s, 0, 1e-2, false, false, false},
    {"host_dispatch_scale", &Cal::host_dispatch_scale, 0, 10, true, false, false},
    {"ep_kernel_unit_bytes_per_s", &Cal::ep_kernel_unit_bytes_per_s, 0, 1e13, false, false, false},
    {"ssd_scan_fraction", &Cal::ssd_scan_fraction, 0, 1, true, false, false},
    {"attention_workgroup_tiles", &Cal::attention_workgroup_tiles, 0, 64, false, false, false},
};

// Exact dtype key as written by to_string(Dtype) (the model module's parser is not a dependency).
std::optional<Dtype> dtype_key(std::string_view key) {
  for (Dtype d : kAllDtypes) {
    if (to_string(d) == key) return d;
  }
  return std::nullopt;
}

template <std::size_t N>
bool contains(const std::string_view (&keys)[N], std::string_view key) {
  for (auto k : keys) {
    if (k == key) return true;
  }
  return false;
}

// Rejects keys the format does not define: a typo in a calibration file must not pass silently.
template <std::size_t N>
void check_keys(const hw::YamlContext& ctx, const YAML::Node& map, const std::string& prefix,
                const std::string_view (&keys)[N]) {
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (!contains(keys, key)) {
      hw::fail(ctx, kv.first, prefix + key, "unknown key");
    }
  }
}

const YAML::Node require(const hw::YamlContext& ctx, const YAML::Node& map, const std::string& key,
                         const std::string& path) {
  const YAML::Node n = map[key];
  if (!n.IsDefined()) {
    throw InputError(hw::location_of(ctx, YAML::Node(), map), path, "required field is missing");
  }
  return n;
}

std::string require_source(const hw::YamlContext& ctx, const YAML::Node& map,
                           const std::string& path) {
  const YAML::Node s = map["source"];
  if (!s.IsDefined() || s.IsNull() || (s.IsScalar() && s.Scalar().empty())) {
    throw InputError(hw::location_of(ctx, s, map), path + ".source",
                     "every value needs a non-empty source");
  }
  return hw::read_string(ctx, s, path + ".source");
}

// A fact: `{value: X, source: "...", unit: U}` or, inside a group with a source, a bare scalar.
struct Fact {
  YAML::Node value;  // may be null
  std::string source;
  std::string unit;
  YAML::Node node;  // for error locations
};

Fact read_fact(const hw::YamlContext& ctx, const YAML::Node& node, const std::string& path,
               const std::string& group_source = "") {
  Fact f;
  f.node = node;
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string k = kv.first.Scalar();
      if (k != "value" && k != "source" && k != "unit" && k != "label") {
        hw::fail(ctx, kv.first, path + "." + k, "unknown key (expected value, source, unit)");
      }
    }
    f.value = require(ctx, node, "value", path + ".value");
    f.source = require_source(ctx, node, path);
    if (node["unit"].IsDefined()) f.unit = hw::read_string(ctx, node["unit"], path + ".unit");
    if (node["label"].IsDefined()) {
      f.source = fmt::format("{} (labelled '{}')", f.source,
                             hw::read_string(ctx, node["label"], path + ".label"));
    }
    return f;
  }
  if (group_source.empty()) {
    hw::fail(ctx, node, path, "expected {value: ..., source: ...}");
  }
  f.value = node;
  f.source = group_source;
  return f;
}

double fact_number(const hw::YamlContext& ctx, const Fact& f, const std::string& path) {
  return hw::read_double(ctx, f.value, path);
}

double fact_bytes(const hw::YamlContext& ctx, const Fact& f, const std::string& path,
                  bool unit_required) {
  if (hw::is_null(f.value)) return 0.0;
  const double v = hw::read_double(ctx, f.value, path);
  if (f.unit.empty()) {
    if (unit_required)
      hw::fail(ctx, f.node, path + ".unit", "a unit (GB, GiB, MiB, ...) is required");
    return v;
  }
  const std::optional<double> mult = hw::bytes_per_unit(f.unit);
  if (!mult) {
    hw::fail(ctx, f.node["unit"], path + ".unit",
             fmt::format("unknown unit '{}' (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", f.unit));
  }
  return v * *mult;
}

void require_range(const hw::YamlContext& ctx, const YAML::Node& node, const std::string& path,
                   double v, double lo, double hi, bool lo_open) {
  const bool ok = (lo_open ? v > lo : v >= lo) && v <= hi;
  if (!ok) {
    hw::fail(
        ctx, node, path,
        fmt::format("{} is outside the valid range {}{}, {}]", v, lo_open ? "(" : "[", lo, hi));
  }
}

// A peak is 0 (unsupported) or a physical rate: the slowest format of the slowest part in the
// catalogue is tens of TFLOP/s, so below 0.1 TFLOP/s the value is a unit error, not a peak.
void require_peak(const hw::YamlContext& ctx, const YAML::Node& node, const std::string& path,
                  double v) {
  require_range(ctx, node, path, v, 0.0, 1e6, false);
  if (v > 0.0 && v < 0.1) {
    hw::fail(ctx, node, path,
             fmt::format("{} TFLOP/s is below 0.1: not an accelerator's peak (0 marks a format "
                         "as unsupported)",
                         v));
  }
}

void read_peaks(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc) {
  const YAML::Node peaks = require(ctx, root, "peak_tflops", "peak_tflops");
  if (!peaks.IsMap()) hw::fail(ctx, peaks, "peak_tflops", "must be a mapping of dtype -> TFLOP/s");
  const std::string group_source = require_source(ctx, peaks, "peak_tflops");
  for (const auto& kv : peaks) {
    const std::string k = kv.first.Scalar();
    if (k == "source") continue;
    if (contains(kExtraPeakKeys, k)) {
      const std::string path = "peak_tflops." + k;
      const Fact f = read_fact(ctx, kv.second, path, group_source);
      double v = 0.0;
      if (!hw::is_null(f.value)) {
        v = fact_number(ctx, f, path);
        require_peak(ctx, kv.second, path, v);
      }
      acc.extra_peak_tflops.push_back({k, v});
      acc.sources.push_back({path, f.source});
      continue;
    }
    if (!dtype_key(k)) {
      hw::fail(ctx, kv.first, "peak_tflops." + k,
               "unknown dtype (fp32, tf32, bf16, fp16, fp8, mxfp8, fp4; informational: fp64, "
               "fp6, mxfp6, mxfp4, nvfp4, int8)");
    }
  }
  for (Dtype d : kAllDtypes) {
    const std::string path = fmt::format("peak_tflops.{}", to_string(d));
    const YAML::Node n = require(ctx, peaks, std::string(to_string(d)), path);
    const Fact f = read_fact(ctx, n, path, group_source);
    double v = 0.0;
    if (!hw::is_null(f.value)) {
      v = fact_number(ctx, f, path);
      require_peak(ctx, n, path, v);
    }
    acc.peak_tflops[static_cast<int>(d)] = v;
    acc.sources.push_back({path, v > 0.0 ? f.source : f.source + " (unsupported)"});
  }
  if (acc.peak_tflops[static_cast<int>(Dtype::kBf16)] <= 0.0) {
    hw::fail(ctx, peaks["bf16"], "peak_tflops.bf16", "every accelerator needs a bf16 peak");
  }
}

Sourced read_sourced(const hw::YamlContext& ctx, const YAML::Node& cal, const std::string& key,
                     double lo, double hi, bool lo_open, bool bytes) {
  const std::string path = "calibration." + key;
  const YAML::Node n = require(ctx, cal, key, path);
  const Fact f = read_fact(ctx, n, path);
  Sourced s;
  s.source = f.source;
  s.value = bytes ? fact_bytes(ctx, f, path, false) : fact_number(ctx, f, path);
  if (!bytes && !f.unit.empty()) {
    hw::fail(ctx, n["unit"], path + ".unit", "this value takes no unit");
  }
  require_range(ctx, f.value, path, s.value, lo, hi, lo_open);
  return s;
}

// Rejects calibration keys the format does not define.
void check_calibration_keys(const hw::YamlContext& ctx, const YAML::Node& cal) {
  for (const auto& kv : cal) {
    const std::string key = kv.first.Scalar();
    bool known = key == "gemm_peak_fraction";
    for (const CalKey& k : kCalKeys) known = known || key == k.key;
    if (!known) hw::fail(ctx, kv.first, "calibration." + key, "unknown key");
  }
}

// A derived entry starts from its base's calibration; every source says where it was measured.
Cal borrowed_calibration(const AcceleratorSpec& base, const std::string& name) {
  Cal c = base.calibration;
  const std::string prefix =
      fmt::format("borrowed from {} (not measured on {}): ", base.name, name);
  for (auto& s : c.gemm_peak_fraction_source) {
    if (!s.empty()) s = prefix + s;
  }
  for (const CalKey& k : kCalKeys) {
    Sourced& s = c.*k.member;
    if (!s.source.empty()) s.source = prefix + s.source;
  }
  return c;
}

// GEMM fractions: one per dtype the device has a peak for; a derived entry may leave any of them
// to its base, but not a dtype the base has no fraction for. `cal` is null when absent.
void read_gemm_fractions(const hw::YamlContext& ctx, const YAML::Node* cal, AcceleratorSpec& acc,
                         const AcceleratorSpec* base) {
  const YAML::Node gemm = cal != nullptr ? (*cal)["gemm_peak_fraction"] : YAML::Node();
  const bool has_gemm = cal != nullptr && gemm.IsDefined();
  if (!has_gemm && base == nullptr) {
    require(ctx, *cal, "gemm_peak_fraction", "calibration.gemm_peak_fraction");
  }
  if (has_gemm && !gemm.IsMap()) {
    hw::fail(ctx, gemm, "calibration.gemm_peak_fraction", "must be a mapping");
  }
  if (has_gemm) {
    for (const auto& kv : gemm) {
      const std::string k = kv.first.Scalar();
      if (!dtype_key(k)) {
        hw::fail(ctx, kv.first, "calibration.gemm_peak_fraction." + k, "unknown dtype");
      }
    }
  }
  auto& c = acc.calibration;
  for (Dtype d : kAllDtypes) {
    const int i = static_cast<int>(d);
    const std::string path = fmt::format("calibration.gemm_peak_fraction.{}", to_string(d));
    const YAML::Node n = has_gemm ? gemm[std::string(to_string(d))] : YAML::Node();
    const bool given = has_gemm && n.IsDefined();
    if (acc.peak_tflops[i] <= 0.0) {
      // Unsupported dtype: the entry may be absent or null.
      if (given && !hw::is_null(n)) {
        const Fact f = read_fact(ctx, n, path);
        if (!hw::is_null(f.value)) {
          hw::fail(ctx, n, path, "the device has no peak for this dtype; leave it null");
        }
      }
      c.gemm_peak_fraction[i] = 0.0;
      c.gemm_peak_fraction_source[i] = "unsupported dtype";
      continue;
    }
    if (!given) {
      if (base != nullptr && c.gemm_peak_fraction[i] > 0.0) continue;  // borrowed
      const YAML::Node at = has_gemm ? gemm : (cal != nullptr ? *cal : YAML::Node());
      throw InputError(hw::location_of(ctx, YAML::Node(), at), path,
                       base == nullptr
                           ? std::string("required: the device has a peak for this dtype")
                           : fmt::format("required: the device has a peak for this dtype and "
                                         "derived_from '{}' has no fraction for it",
                                         base->name));
    }
    const Fact f = read_fact(ctx, n, path);
    c.gemm_peak_fraction[i] = fact_number(ctx, f, path);
    require_range(ctx, f.value, path, c.gemm_peak_fraction[i], 0.0, 1.0, true);
    c.gemm_peak_fraction_source[i] = f.source;
  }
}

// The calibration block; with a base (derived_from) it is optional and each key it leaves out is
// borrowed from the base.
void read_calibration(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc,
                      const AcceleratorSpec* base) {
  const YAML::Node node = root["calibration"];
  if (base == nullptr) require(ctx, root, "calibration", "calibration");
  const bool has_cal = node.IsDefined() && !(base != nullptr && node.IsNull());
  if (has_cal && !node.IsMap()) hw::fail(ctx, node, "calibration", "must be a mapping");
  if (has_cal) check_calibration_keys(ctx, node);
  const YAML::Node* cal = has_cal ? &node : nullptr;
  auto& c = acc.calibration;
  if (base != nullptr) c = borrowed_calibration(*base, acc.name);
  read_gemm_fractions(ctx, cal, acc, base);
  for (const CalKey& k : kCalKeys) {
    if (has_cal && node[k.key].IsDefined()) {
      c.*k.member = read_sourced(ctx, node, k.key, k.lo, k.hi, k.lo_open, k.bytes);
    } else if (k.required && base == nullptr) {
      require(ctx, node, k.key, std::string("calibration.") + k.key);
    }
  }
  if (c.fragmentation_upper_fraction.value < c.fragmentation_fraction.value) {
    hw::fail(ctx, has_cal ? node["fragmentation_upper_fraction"] : root,
             "calibration.fragmentation_upper_fraction",
             "must not be below fragmentation_fraction");
  }
  if (c.fragmentation_expandable_upper_fraction.value > 0.0 &&
      c.fragmentation_expandable_upper_fraction.value < c.fragmentation_expandable_fraction.value) {
    hw::fail(ctx, has_cal ? node["fragmentation_expandable_upper_fraction"] : root,
             "calibration.fragmentation_expandable_upper_fraction",
             "must not be below fragmentation_expandable_fraction");
  }
}

// Readers for the top-level facts of one file; each records the fact's source in `acc`.
class FactReader {
 public:
  FactReader(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc)
      : ctx_(ctx), root_(root), acc_(acc) {}

  // A number in (lo, hi]; 0 when nullable and null. `optional`: absent keys also give 0.
  double number(const std::string& key, double lo, double hi, bool nullable,
                bool optional = false) {
    if (optional && !root_[key].IsDefined()) return 0.0;
    const YAML::Node n = require(ctx_, root_, key, key);
    const Fact f = read_fact(ctx_, n, key);
    acc_.sources.push_back({key, f.source});
    if (nullable && hw::is_null(f.value)) return 0.0;
    const double v = fact_number(ctx_, f, key);
    if (!f.unit.empty()) hw::fail(ctx_, n["unit"], key + ".unit", "this value takes no unit");
    require_range(ctx_, f.value, key, v, lo, hi, true);
    return v;
  }
  // A whole number in (lo, hi] (see number()).
  int count(const std::string& key, double hi, bool nullable, bool optional = false) {
    const double v = number(key, 0, hi, nullable, optional);
    if (v > 0.0) {
      const YAML::Node n = root_[key];
      hw::read_int(ctx_, n.IsMap() ? n["value"] : n, key);
    }
    return static_cast<int>(v);
  }
  double bytes(const std::string& key, bool nullable) {
    YAML::Node n;
    Fact f;
    if (!present(key, nullable, false, n, f)) return 0.0;
    const double v = fact_bytes(ctx_, f, key, true);
    require_range(ctx_, f.value, key, v, 0.0, 1e15, !nullable);
    return v;
  }
  double bandwidth(const std::string& key, bool nullable, bool optional = false) {
    YAML::Node n;
    Fact f;
    if (!present(key, nullable, optional, n, f)) return 0.0;
    const double v = hw::read_double(ctx_, f.value, key);
    const std::optional<double> mult = hw::bytes_per_s_per_unit(f.unit);
    if (!mult) {
      hw::fail(ctx_, n, key + ".unit",
               fmt::format("unknown or missing bandwidth unit '{}' (GB/s, TB/s)", f.unit));
    }
    require_range(ctx_, f.value, key, v, 0.0, 1e6, true);
    return v * *mult;
  }
  // A string fact that must be one of `allowed`; "" when optional and absent.
  template <std::size_t N>
  std::string choice(const std::string& key, const std::string_view (&allowed)[N], bool optional) {
    if (optional && !root_[key].IsDefined()) return {};
    const YAML::Node n = require(ctx_, root_, key, key);
    const Fact f = read_fact(ctx_, n, key);
    const std::string v = hw::read_string(ctx_, f.value, key);
    acc_.sources.push_back({key, f.source});
    if (!contains(allowed, v)) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      hw::fail(ctx_, f.value, key, fmt::format("'{}' is not one of {}", v, list));
    }
    return v;
  }

 private:
  // Reads `key` and records its source; false when the value is null (an error unless nullable)
  // or the key is absent and optional.
  bool present(const std::string& key, bool nullable, bool optional, YAML::Node& n, Fact& f) {
    if (optional && !root_[key].IsDefined()) return false;
    n = require(ctx_, root_, key, key);
    f = read_fact(ctx_, n, key);
    acc_.sources.push_back({key, f.source});
    if (!hw::is_null(f.value)) return true;
    if (!nullable) hw::fail(ctx_, n, key, "a value is required");
    return false;
  }

  const hw::YamlContext& ctx_;
  const YAML::Node& root_;
  AcceleratorSpec& acc_;
};

constexpr std::string_view kStatuses[] = {"shipping", "announced"};
constexpr std::string_view kTopologies[] = {"switch", "mesh", "torus"};

void read_identity(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc) {
  acc.name = hw::read_string(ctx, require(ctx, root, "name", "name"), "name");
  acc.display_name =
      hw::read_string(ctx, require(ctx, root, "display_name", "display_name"), "display_name");
  acc.vendor = hw::read_string(ctx, require(ctx, root, "vendor", "vendor"), "vendor");
  acc.arch = hw::read_string(ctx, require(ctx, root, "arch", "arch"), "arch");
  const YAML::Node aliases = root["aliases"];
  if (aliases.IsDefined() && !aliases.IsNull()) {
    if (!aliases.IsSequence()) hw::fail(ctx, aliases, "aliases", "must be a list of strings");
    for (std::size_t i = 0; i < aliases.size(); ++i) {
      acc.aliases.push_back(hw::read_string(ctx, aliases[i], fmt::format("aliases[{}]", i)));
    }
  }
  acc.status = FactReader(ctx, root, acc).choice("status", kStatuses, false);
}

void read_compute_and_memory(const hw::YamlContext& ctx, const YAML::Node& root,
                             AcceleratorSpec& acc) {
  FactReader r(ctx, root, acc);
  acc.compute_units = r.count("compute_units", 1e6, true);
  acc.dies = r.count("dies", 64, false);
  acc.devices_per_chip =
      root["devices_per_chip"].IsDefined() ? r.count("devices_per_chip", 64, false) : 1;
  acc.boost_clock_mhz = r.number("boost_clock_mhz", 0, 1e4, true);
  acc.sustained_clock_mhz = r.number("sustained_clock_mhz", 0, 1e4, true);
  if (acc.boost_clock_mhz > 0.0 && acc.sustained_clock_mhz > acc.boost_clock_mhz) {
    hw::fail(ctx, root["sustained_clock_mhz"], "sustained_clock_mhz", "is above the boost clock");
  }
  acc.board_power_w = r.number("board_power_w", 0, 1e4, true, true);
  acc.idle_power_w = r.number("idle_power_w", 0, 1e4, true, true);
  if (acc.idle_power_w > 0.0 && !(acc.idle_power_w < acc.board_power_w)) {
    hw::fail(ctx, root["idle_power_w"], "idle_power_w", "must be below board_power_w");
  }
  acc.hbm_bytes = r.bytes("hbm_capacity", false);
  acc.hbm_bw_bytes_per_s = r.bandwidth("hbm_bandwidth", false);
  acc.l2_bytes = r.bytes("l2", true);
  acc.llc_bytes = r.bytes("llc", true);
  acc.lds_bytes_per_cu = r.bytes("lds_per_cu", true);
  acc.default_gpus_per_node = r.count("default_gpus_per_node", 1e5, false);
}

void read_fabrics(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc) {
  FactReader r(ctx, root, acc);
  acc.scaleup_bw_bytes_per_s = r.bandwidth("scaleup_bandwidth", true);
  acc.scaleup_topology = r.choice("scaleup_topology", kTopologies, false);
  acc.scaleup_domain = r.count("scaleup_domain", 1e6, true, true);
  acc.scaleup_links = r.count("scaleup_links", 1e3, true, true);
  acc.scaleup_link_bw_bytes_per_s = r.bandwidth("scaleup_link_bandwidth", true, true);
  acc.torus_dims = r.count("torus_dims", 3, false, true);
  acc.torus_wraparound = r.choice("torus_wraparound", kWraparounds, true);
  const bool torus = acc.scaleup_topology == "torus";
  for (const char* key : {"torus_dims", "torus_wraparound"}) {
    if (root[key].IsDefined() != torus) {
      hw::fail(ctx, root[key].IsDefined() ? root[key] : root["scaleup_topology"], key,
               torus ? "a torus needs torus_dims and torus_wraparound"
                     : "only a torus scale-up fabric has this key");
    }
  }
  acc.scaleout_bw_bytes_per_s = r.bandwidth("scaleout_bandwidth", true, true);
  acc.matrix_unit_dim = r.count("matrix_unit_dim", 4096, true, true);
  acc.gemm_epilogue_overlapped = r.choice("gemm_epilogue", kGemmEpilogues, true) == "overlapped";
  if (!root["gemm_epilogue"].IsDefined()) {
    acc.sources.push_back({"gemm_epilogue",
                           "default per_tile (the file does not say): each GEMM tile's output "
                           "store is paid before its CU takes the next tile (docs/hardware.md)"});
  }
  acc.host_bw_bytes_per_s = r.bandwidth("host_bandwidth", true, true);
  acc.default_network = hw::read_string(
      ctx, require(ctx, root, "default_network", "default_network"), "default_network");
}

AcceleratorSpec load_file(const std::string& path, std::vector<std::string>& chain);

// The entry named by `derived_from:`, loaded from the same directory as `path`.
AcceleratorSpec load_base(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc,
                          std::vector<std::string>& chain) {
  const YAML::Node n = root["derived_from"];
  const Fact f = read_fact(ctx, n, "derived_from");
  acc.derived_from = hw::read_string(ctx, f.value, "derived_from");
  acc.sources.push_back({"derived_from", f.source});
  chain.push_back(acc.name);
  if (std::find(chain.begin(), chain.end(), acc.derived_from) != chain.end()) {
    std::string cycle;
    for (const auto& c : chain) cycle += c + " -> ";
    hw::fail(ctx, f.value, "derived_from", "derivation cycle: " + cycle + acc.derived_from);
  }
  if (static_cast<int>(chain.size()) > kMaxDerivationDepth) {
    hw::fail(ctx, f.value, "derived_from",
             fmt::format("more than {} derivation steps", kMaxDerivationDepth));
  }
  const std::filesystem::path dir = std::filesystem::path(ctx.file).parent_path();
  std::string base_path;
  for (const char* ext : {".yaml", ".yml"}) {
    const std::filesystem::path p = dir / (acc.derived_from + ext);
    std::error_code ec;
    if (base_path.empty() && std::filesystem::is_regular_file(p, ec)) base_path = p.string();
  }
  if (base_path.empty()) {
    hw::fail(ctx, f.value, "derived_from",
             fmt::format("no accelerator file '{}.yaml' next to this one", acc.derived_from));
  }
  AcceleratorSpec base = load_file(base_path, chain);
  if (base.name != acc.derived_from) {
    hw::fail(ctx, f.value, "derived_from",
             fmt::format("'{}' names itself '{}'", base_path, base.name));
  }
  return base;
}

AcceleratorSpec load_file(const std::string& path, std::vector<std::string>& chain) {
  const hw::YamlContext ctx{path};
  const YAML::Node root = hw::load_yaml_file(path);
  if (!root.IsDefined() || root.IsNull()) {
    throw InputError(SourceLocation{path, 0, 0}, "", "empty accelerator file");
  }
  if (!root.IsMap()) hw::fail(ctx, root, "", "an accelerator file must be a YAML mapping");
  check_keys(ctx, root, "", kTopKeys);

  AcceleratorSpec acc;
  acc.file = path;
  read_identity(ctx, root, acc);
  read_peaks(ctx, root, acc);
  read_compute_and_memory(ctx, root, acc);
  read_fabrics(ctx, root, acc);
  if (root["derived_from"].IsDefined()) {
    const AcceleratorSpec base = load_base(ctx, root, acc, chain);
    read_calibration(ctx, root, acc, &base);
  } else {
    read_calibration(ctx, root, acc, nullptr);
  }
  return acc;
}

}  // namespace

AcceleratorSpec load_accelerator_file(const std::string& path) {
  std::vector<std::string> chain;
  return load_file(path, chain);
}

}  // namespace projector
