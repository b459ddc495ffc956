// Accelerator files: data/hardware/accelerators/<name>.yaml. Every fact is a {value, source} pair
// (or a bare number inside a group that has a `source:`), so `projector hardware show` can print
// where each number came from. See docs/hardware.md.
#include <fmt/format.h>

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
                                         "peak_tflops",
                                         "compute_units",
                                         "dies",
                                         "boost_clock_mhz",
                                         "sustained_clock_mhz",
                                         "hbm_capacity",
                                         "hbm_bandwidth",
                                         "l2",
                                         "llc",
                                         "lds_per_cu",
                                         "default_gpus_per_node",
                                         "scaleup_bandwidth",
                                         "scaleup_topology",
                                         "default_network",
                                         "calibration"};

constexpr std::string_view kCalibrationKeys[] = {"gemm_peak_fraction",
                                                 "attention_fwd_fraction",
                                                 "attention_bwd_fraction",
                                                 "attention_fa2_fwd_fraction",
                                                 "attention_fa2_bwd_fraction",
                                                 "hbm_elementwise_fraction",
                                                 "hbm_permute_fraction",
                                                 "hbm_optimizer_fraction",
                                                 "hbm_loss_fraction",
                                                 "kernel_launch_s",
                                                 "runtime_context_bytes",
                                                 "comm_buffer_bytes_per_group",
                                                 "workspace_bytes",
                                                 "fragmentation_fraction",
                                                 "fragmentation_upper_fraction",
                                                 "comm_compute_interference",
                                                 "grouped_gemm_fraction",
                                                 "kernel_fixed_s",
                                                 "training_efficiency",
                                                 "fp8_training_efficiency"};

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

void read_peaks(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc) {
  const YAML::Node peaks = require(ctx, root, "peak_tflops", "peak_tflops");
  if (!peaks.IsMap()) hw::fail(ctx, peaks, "peak_tflops", "must be a mapping of dtype -> TFLOP/s");
  const std::string group_source = require_source(ctx, peaks, "peak_tflops");
  for (const auto& kv : peaks) {
    const std::string k = kv.first.Scalar();
    if (k == "source") continue;
    if (!dtype_key(k)) {
      hw::fail(ctx, kv.first, "peak_tflops." + k,
               "unknown dtype (fp32, tf32, bf16, fp16, fp8, mxfp8, fp4)");
    }
  }
  for (Dtype d : kAllDtypes) {
    const std::string path = fmt::format("peak_tflops.{}", to_string(d));
    const YAML::Node n = require(ctx, peaks, std::string(to_string(d)), path);
    const Fact f = read_fact(ctx, n, path, group_source);
    double v = 0.0;
    if (!hw::is_null(f.value)) {
      v = fact_number(ctx, f, path);
      require_range(ctx, n, path, v, 0.0, 1e6, false);
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

void read_calibration(const hw::YamlContext& ctx, const YAML::Node& root, AcceleratorSpec& acc) {
  const YAML::Node cal = require(ctx, root, "calibration", "calibration");
  if (!cal.IsMap()) hw::fail(ctx, cal, "calibration", "must be a mapping");
  check_keys(ctx, cal, "calibration.", kCalibrationKeys);
  auto& c = acc.calibration;

  const YAML::Node gemm = require(ctx, cal, "gemm_peak_fraction", "calibration.gemm_peak_fraction");
  if (!gemm.IsMap()) hw::fail(ctx, gemm, "calibration.gemm_peak_fraction", "must be a mapping");
  for (const auto& kv : gemm) {
    const std::string k = kv.first.Scalar();
    if (!dtype_key(k)) {
      hw::fail(ctx, kv.first, "calibration.gemm_peak_fraction." + k, "unknown dtype");
    }
  }
  for (Dtype d : kAllDtypes) {
    const int i = static_cast<int>(d);
    const std::string path = fmt::format("calibration.gemm_peak_fraction.{}", to_string(d));
    const YAML::Node n = gemm[std::string(to_string(d))];
    if (acc.peak_tflops[i] <= 0.0) {
      // Unsupported dtype: the entry may be absent or null.
      if (n.IsDefined() && !hw::is_null(n)) {
        const Fact f = read_fact(ctx, n, path);
        if (!hw::is_null(f.value)) {
          hw::fail(ctx, n, path, "the device has no peak for this dtype; leave it null");
        }
      }
      c.gemm_peak_fraction[i] = 0.0;
      c.gemm_peak_fraction_source[i] = "unsupported dtype";
      continue;
    }
    if (!n.IsDefined()) {
      throw InputError(hw::location_of(ctx, YAML::Node(), gemm), path,
                       "required: the device has a peak for this dtype");
    }
    const Fact f = read_fact(ctx, n, path);
    c.gemm_peak_fraction[i] = fact_number(ctx, f, path);
    require_range(ctx, f.value, path, c.gemm_peak_fraction[i], 0.0, 1.0, true);
    c.gemm_peak_fraction_source[i] = f.source;
  }

  c.attention_fwd_fraction = read_sourced(ctx, cal, "attention_fwd_fraction", 0, 1, true, false);
  c.attention_bwd_fraction = read_sourced(ctx, cal, "attention_bwd_fraction", 0, 1, true, false);
  for (const char* key : {"attention_fa2_fwd_fraction", "attention_fa2_bwd_fraction"}) {
    if (!cal[key].IsDefined()) continue;
    Sourced& dst = std::string(key) == "attention_fa2_fwd_fraction" ? c.attention_fa2_fwd_fraction
                                                                    : c.attention_fa2_bwd_fraction;
    dst = read_sourced(ctx, cal, key, 0, 1, true, false);
  }
  c.hbm_elementwise_fraction =
      read_sourced(ctx, cal, "hbm_elementwise_fraction", 0, 1, true, false);
  c.hbm_permute_fraction = read_sourced(ctx, cal, "hbm_permute_fraction", 0, 1, true, false);
  c.hbm_optimizer_fraction = read_sourced(ctx, cal, "hbm_optimizer_fraction", 0, 1, true, false);
  c.hbm_loss_fraction = read_sourced(ctx, cal, "hbm_loss_fraction", 0, 1, true, false);
  c.kernel_launch_s = read_sourced(ctx, cal, "kernel_launch_s", 0, 1e-2, false, false);
  c.runtime_context_bytes = read_sourced(ctx, cal, "runtime_context_bytes", 0, 1e12, false, true);
  c.comm_buffer_bytes_per_group =
      read_sourced(ctx, cal, "comm_buffer_bytes_per_group", 0, 1e12, false, true);
  c.workspace_bytes = read_sourced(ctx, cal, "workspace_bytes", 0, 1e12, false, true);
  c.fragmentation_fraction = read_sourced(ctx, cal, "fragmentation_fraction", 0, 1, false, false);
  c.fragmentation_upper_fraction =
      read_sourced(ctx, cal, "fragmentation_upper_fraction", 0, 1, false, false);
  c.comm_compute_interference =
      read_sourced(ctx, cal, "comm_compute_interference", 0, 1, false, false);
  // Optional (0 = not calibrated; the cost models state their fallback).
  if (cal["grouped_gemm_fraction"].IsDefined()) {
    c.grouped_gemm_fraction = read_sourced(ctx, cal, "grouped_gemm_fraction", 0, 1, true, false);
  }
  if (cal["fp8_training_efficiency"].IsDefined()) {
    c.fp8_training_efficiency =
        read_sourced(ctx, cal, "fp8_training_efficiency", 0, 1, true, false);
  }
  if (cal["training_efficiency"].IsDefined()) {
    c.training_efficiency = read_sourced(ctx, cal, "training_efficiency", 0, 1, true, false);
  }
  if (cal["kernel_fixed_s"].IsDefined()) {
    c.kernel_fixed_s = read_sourced(ctx, cal, "kernel_fixed_s", 0, 1e-2, false, false);
  }
  if (c.fragmentation_upper_fraction.value < c.fragmentation_fraction.value) {
    hw::fail(ctx, cal["fragmentation_upper_fraction"], "calibration.fragmentation_upper_fraction",
             "must not be below fragmentation_fraction");
  }
}

}  // namespace

AcceleratorSpec load_accelerator_file(const std::string& path) {
  const hw::YamlContext ctx{path};
  const YAML::Node root = hw::load_yaml_file(path);
  if (!root.IsDefined() || root.IsNull()) {
    throw InputError(SourceLocation{path, 0, 0}, "", "empty accelerator file");
  }
  if (!root.IsMap()) hw::fail(ctx, root, "", "an accelerator file must be a YAML mapping");
  check_keys(ctx, root, "", kTopKeys);

  AcceleratorSpec acc;
  acc.file = path;
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

  read_peaks(ctx, root, acc);

  auto number = [&](const std::string& key, double lo, double hi, bool nullable) -> double {
    const YAML::Node n = require(ctx, root, key, key);
    const Fact f = read_fact(ctx, n, key);
    acc.sources.push_back({key, f.source});
    if (nullable && hw::is_null(f.value)) return 0.0;
    const double v = fact_number(ctx, f, key);
    if (!f.unit.empty()) hw::fail(ctx, n["unit"], key + ".unit", "this value takes no unit");
    require_range(ctx, f.value, key, v, lo, hi, true);
    return v;
  };
  // Reads `key` and records its source; false when the value is null (an error unless nullable).
  auto present = [&](const std::string& key, bool nullable, YAML::Node& n, Fact& f) {
    n = require(ctx, root, key, key);
    f = read_fact(ctx, n, key);
    acc.sources.push_back({key, f.source});
    if (!hw::is_null(f.value)) return true;
    if (!nullable) hw::fail(ctx, n, key, "a value is required");
    return false;
  };
  auto bytes = [&](const std::string& key, bool nullable) -> double {
    YAML::Node n;
    Fact f;
    if (!present(key, nullable, n, f)) return 0.0;
    const double v = fact_bytes(ctx, f, key, true);
    require_range(ctx, f.value, key, v, 0.0, 1e15, !nullable);
    return v;
  };
  auto bandwidth = [&](const std::string& key, bool nullable) -> double {
    YAML::Node n;
    Fact f;
    if (!present(key, nullable, n, f)) return 0.0;
    const double v = hw::read_double(ctx, f.value, key);
    const std::optional<double> mult = hw::bytes_per_s_per_unit(f.unit);
    if (!mult) {
      hw::fail(ctx, n, key + ".unit",
               fmt::format("unknown or missing bandwidth unit '{}' (GB/s, TB/s)", f.unit));
    }
    require_range(ctx, f.value, key, v, 0.0, 1e6, true);
    return v * *mult;
  };

  acc.compute_units = static_cast<int>(number("compute_units", 0, 1e6, false));
  acc.dies = static_cast<int>(number("dies", 0, 64, false));
  acc.boost_clock_mhz = number("boost_clock_mhz", 0, 1e4, true);
  acc.sustained_clock_mhz = number("sustained_clock_mhz", 0, 1e4, true);
  if (acc.boost_clock_mhz > 0.0 && acc.sustained_clock_mhz > acc.boost_clock_mhz) {
    hw::fail(ctx, root["sustained_clock_mhz"], "sustained_clock_mhz", "is above the boost clock");
  }
  acc.hbm_bytes = bytes("hbm_capacity", false);
  acc.hbm_bw_bytes_per_s = bandwidth("hbm_bandwidth", false);
  acc.l2_bytes = bytes("l2", true);
  acc.llc_bytes = bytes("llc", true);
  acc.lds_bytes_per_cu = bytes("lds_per_cu", true);
  acc.default_gpus_per_node = static_cast<int>(number("default_gpus_per_node", 0, 1e5, false));
  acc.scaleup_bw_bytes_per_s = bandwidth("scaleup_bandwidth", true);
  {
    const YAML::Node n = require(ctx, root, "scaleup_topology", "scaleup_topology");
    const Fact f = read_fact(ctx, n, "scaleup_topology");
    acc.scaleup_topology = hw::read_string(ctx, f.value, "scaleup_topology");
    acc.sources.push_back({"scaleup_topology", f.source});
    if (acc.scaleup_topology != "switch" && acc.scaleup_topology != "mesh" &&
        acc.scaleup_topology != "torus") {
      hw::fail(ctx, f.value, "scaleup_topology",
               fmt::format("'{}' is not switch, mesh or torus", acc.scaleup_topology));
    }
  }
  acc.default_network = hw::read_string(
      ctx, require(ctx, root, "default_network", "default_network"), "default_network");

  // Integers stored as double in YAML must be whole.
  for (const char* key : {"compute_units", "dies", "default_gpus_per_node"}) {
    const YAML::Node n = root[key];
    const YAML::Node v = n.IsMap() ? n["value"] : n;
    hw::read_int(ctx, v, key);
  }

  read_calibration(ctx, root, acc);
  return acc;
}

}  // namespace projector
