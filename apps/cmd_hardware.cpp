// `projector hardware list [--json]` and `projector hardware show NAME [--json]` (`compare` lives
// in cmd_hardware_compare.cpp).
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "projector/commands/catalog.h"
#include "projector/hardware/catalog.h"
#include "projector/hardware/compare.h"
#include "projector/util/error.h"

namespace projector::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

std::string data_dir_or_default(const std::string& given) {
  return given.empty() ? default_data_dir() : given;
}

// A peak with '~' when its source marks it as an estimate.
std::string tflops_cell(const AcceleratorSpec& a, Dtype d) {
  const double v = a.peak_tflops[static_cast<int>(d)];
  if (v <= 0.0) return "-";
  const bool est = is_estimated(a, fmt::format("peak_tflops.{}", to_string(d)));
  return fmt::format("{}{:.1f}", est ? "~" : "", v);
}

// The citation part of a source ("NV1: FP16/BF16 ..." -> "NV1", "S1, T1, GK (...)" -> "S1, T1,
// GK"), "estimate", or "see show" when the source is prose without an id (never cut mid-word).
std::string source_id(const std::string& source) {
  if (source.rfind("estimate", 0) == 0) return "estimate";
  std::string id = source.substr(0, source.find(':'));
  id = id.substr(0, id.find(" ("));
  bool ids = !id.empty();
  std::size_t token = 0;
  for (const char c : id) {
    const bool sep = c == ',' || c == '/' || c == ' ';
    token = sep ? 0 : token + 1;
    ids = ids && (sep || std::isalnum(static_cast<unsigned char>(c)) || c == '-') && token <= 11;
  }
  return ids && id.size() <= 24 ? id : "see show";
}

void print_list(const std::string& data_dir) {
  const std::vector<AcceleratorSpec> accs = load_accelerator_catalog(data_dir);
  if (accs.empty()) {
    throw InputError(
        SourceLocation{}, "data-dir",
        fmt::format("no accelerator files under '{}/hardware/accelerators'", data_dir));
  }
  const std::vector<std::string> head = {"name",     "status",       "vendor",         "bf16 TF/s",
                                         "fp8 TF/s", "HBM GiB",      "HBM TB/s",       "peaks from",
                                         "HBM from", "efficiencies", "default network"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const auto& a : accs) {
    const bool fp8 = !a.source_of("peak_tflops.fp8").empty() &&
                     a.peak_tflops[static_cast<int>(Dtype::kFp8)] > 0.0;
    rows.push_back({a.name, a.status, a.vendor, tflops_cell(a, Dtype::kBf16),
                    tflops_cell(a, Dtype::kFp8), fmt::format("{:.0f}", a.hbm_bytes / kGiB),
                    fmt::format("{:.2f}", a.hbm_bw_bytes_per_s / 1e12),
                    source_id(a.source_of(fp8 ? "peak_tflops.fp8" : "peak_tflops.bf16")),
                    source_id(a.source_of("hbm_capacity")), calibration_origin(a),
                    a.default_network});
  }
  // Every column as wide as its widest cell; the numbers right-aligned.
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      const bool number = c >= 3 && c <= 6;
      const bool last = c + 1 == r.size();
      line += number ? fmt::format("{:>{}}", r[c], width[c])
                     : (last ? r[c] : fmt::format("{:<{}}", r[c], width[c]));
      if (!last) line += c == 6 ? "  " : " ";
    }
    fmt::print("{}\n", line);
  }
  fmt::print(
      "\n'~' marks an estimate. Source ids are listed in docs/hardware.md; `projector hardware "
      "show NAME` prints every value with its full source.\n");
  const std::vector<std::string> nets = list_networks(data_dir);
  std::string joined;
  for (const auto& n : nets) joined += (joined.empty() ? "" : ", ") + n;
  fmt::print("\nnetworks: {}\n", joined);
}

// One printable row: field, value with unit, source.
struct Row {
  std::string field;
  std::string value;
  std::string source;
};

// The optional fabric facts, printed when the file gives them.
void add_fabric_rows(const AcceleratorSpec& a, std::vector<Row>& rows) {
  auto add = [&](const char* field, const std::string& value) {
    if (!a.source_of(field).empty()) rows.push_back({field, value, a.source_of(field)});
  };
  auto gbs = [](double v) {
    return v > 0.0 ? fmt::format("{} GB/s per direction", v / 1e9) : std::string("unknown");
  };
  add("scaleup_domain", fmt::format("{}", a.scaleup_domain));
  add("scaleup_links", fmt::format("{}", a.scaleup_links));
  add("scaleup_link_bandwidth", gbs(a.scaleup_link_bw_bytes_per_s));
  add("torus_dims", fmt::format("{}", a.torus_dims));
  add("torus_wraparound", a.torus_wraparound);
  add("scaleout_bandwidth", gbs(a.scaleout_bw_bytes_per_s));
}

// Status, peaks and compute units.
void compute_rows(const AcceleratorSpec& a, std::vector<Row>& rows) {
  auto src = [&](const std::string& f) { return a.source_of(f); };
  rows.push_back({"status", a.status, src("status")});
  if (!a.derived_from.empty()) {
    rows.push_back({"derived_from", a.derived_from, src("derived_from")});
  }
  for (Dtype d : kAllDtypes) {
    const std::string f = fmt::format("peak_tflops.{}", to_string(d));
    const double v = a.peak_tflops[static_cast<int>(d)];
    rows.push_back({f, v > 0.0 ? fmt::format("{} TFLOP/s", v) : "unsupported", src(f)});
  }
  for (const auto& e : a.extra_peak_tflops) {
    const std::string f = "peak_tflops." + e.format;
    rows.push_back({f,
                    e.tflops > 0.0
                        ? fmt::format("{} {}", e.tflops, e.format == "int8" ? "TOP/s" : "TFLOP/s")
                        : "unsupported/unpublished",
                    src(f)});
  }
  rows.push_back({"compute_units",
                  a.compute_units > 0 ? fmt::format("{}", a.compute_units) : "unpublished",
                  src("compute_units")});
  rows.push_back({"dies", fmt::format("{}", a.dies), src("dies")});
  rows.push_back({"devices_per_chip", fmt::format("{}", a.devices_per_chip),
                  src("devices_per_chip").empty() ? "default (one device per chip)"
                                                  : src("devices_per_chip")});
}

// Clocks, memories, links.
void memory_and_link_rows(const AcceleratorSpec& a, std::vector<Row>& rows) {
  auto src = [&](const std::string& f) { return a.source_of(f); };
  auto mhz = [](double v) { return v > 0.0 ? fmt::format("{} MHz", v) : std::string("unknown"); };
  rows.push_back({"boost_clock_mhz", mhz(a.boost_clock_mhz), src("boost_clock_mhz")});
  rows.push_back({"sustained_clock_mhz", mhz(a.sustained_clock_mhz), src("sustained_clock_mhz")});
  rows.push_back({"hbm_capacity",
                  fmt::format("{:.2f} GiB ({:.0f} bytes)", a.hbm_bytes / kGiB, a.hbm_bytes),
                  src("hbm_capacity")});
  rows.push_back({"hbm_bandwidth", fmt::format("{:.3f} TB/s", a.hbm_bw_bytes_per_s / 1e12),
                  src("hbm_bandwidth")});
  auto mib = [](double v) {
    return v > 0.0 ? fmt::format("{} MiB", v / kMiB) : std::string("none/unknown");
  };
  rows.push_back({"l2", mib(a.l2_bytes), src("l2")});
  rows.push_back({"llc", mib(a.llc_bytes), src("llc")});
  rows.push_back({"lds_per_cu",
                  a.lds_bytes_per_cu > 0.0 ? fmt::format("{} KiB", a.lds_bytes_per_cu / 1024.0)
                                           : std::string("unknown"),
                  src("lds_per_cu")});
  rows.push_back({"default_gpus_per_node", fmt::format("{}", a.default_gpus_per_node),
                  src("default_gpus_per_node")});
  rows.push_back({"scaleup_bandwidth",
                  a.scaleup_bw_bytes_per_s > 0.0
                      ? fmt::format("{} GB/s per direction", a.scaleup_bw_bytes_per_s / 1e9)
                      : std::string("unknown"),
                  src("scaleup_bandwidth")});
  rows.push_back({"scaleup_topology", a.scaleup_topology, src("scaleup_topology")});
  rows.push_back({"host_bandwidth",
                  a.host_bw_bytes_per_s > 0.0
                      ? fmt::format("{} GB/s per direction", a.host_bw_bytes_per_s / 1e9)
                      : std::string("unknown"),
                  src("host_bandwidth")});
  if (a.matrix_unit_dim > 0) {
    rows.push_back(
        {"matrix_unit_dim", fmt::format("{}", a.matrix_unit_dim), src("matrix_unit_dim")});
  } else if (a.compute_units > 0) {
    rows.push_back({"gemm_epilogue", a.gemm_epilogue_overlapped ? "overlapped" : "per_tile",
                    src("gemm_epilogue")});
  }
  add_fabric_rows(a, rows);
  rows.push_back({"default_network", a.default_network, ""});
}

// The calibration block: every constant with its source or fitting note.
void calibration_rows(const AcceleratorSpec& a, std::vector<Row>& rows) {
  const auto& c = a.calibration;
  for (Dtype d : kAllDtypes) {
    const int i = static_cast<int>(d);
    if (a.peak_tflops[i] <= 0.0) continue;
    rows.push_back({fmt::format("calibration.gemm_peak_fraction.{}", to_string(d)),
                    fmt::format("{}", c.gemm_peak_fraction[i]), c.gemm_peak_fraction_source[i]});
  }
  auto plain = [&](const char* name, const Sourced& s) {
    rows.push_back({fmt::format("calibration.{}", name), fmt::format("{}", s.value), s.source});
  };
  auto bytes = [&](const char* name, const Sourced& s) {
    rows.push_back(
        {fmt::format("calibration.{}", name), fmt::format("{} MiB", s.value / kMiB), s.source});
  };
  plain("attention_fwd_fraction", c.attention_fwd_fraction);
  plain("attention_bwd_fraction", c.attention_bwd_fraction);
  if (!c.attention_fa2_fwd_fraction.source.empty()) {
    plain("attention_fa2_fwd_fraction", c.attention_fa2_fwd_fraction);
  }
  if (!c.attention_fa2_bwd_fraction.source.empty()) {
    plain("attention_fa2_bwd_fraction", c.attention_fa2_bwd_fraction);
  }
  for (const auto& [name, s] :
       {std::pair{"attention_fp8_fwd_fraction", &c.attention_fp8_fwd_fraction},
        std::pair{"attention_fp8_bwd_fraction", &c.attention_fp8_bwd_fraction},
        std::pair{"attention_mxfp8_fwd_fraction", &c.attention_mxfp8_fwd_fraction},
        std::pair{"attention_mxfp8_bwd_fraction", &c.attention_mxfp8_bwd_fraction}}) {
    if (!s->source.empty()) plain(name, *s);
  }
  if (!c.attention_workgroup_tiles.source.empty()) {
    rows.push_back({"calibration.attention_workgroup_tiles",
                    fmt::format("{} key tiles", c.attention_workgroup_tiles.value),
                    c.attention_workgroup_tiles.source});
  }
  plain("hbm_elementwise_fraction", c.hbm_elementwise_fraction);
  plain("hbm_permute_fraction", c.hbm_permute_fraction);
  if (!c.hbm_gather_fraction.source.empty()) plain("hbm_gather_fraction", c.hbm_gather_fraction);
  plain("hbm_optimizer_fraction", c.hbm_optimizer_fraction);
  plain("hbm_loss_fraction", c.hbm_loss_fraction);
  rows.push_back({"calibration.kernel_launch_s",
                  fmt::format("{} us", c.kernel_launch_s.value * 1e6), c.kernel_launch_s.source});
  bytes("runtime_context_bytes", c.runtime_context_bytes);
  bytes("comm_buffer_bytes_per_group", c.comm_buffer_bytes_per_group);
  bytes("workspace_bytes", c.workspace_bytes);
  plain("fragmentation_fraction", c.fragmentation_fraction);
  plain("fragmentation_upper_fraction", c.fragmentation_upper_fraction);
  if (!c.fragmentation_expandable_fraction.source.empty()) {
    plain("fragmentation_expandable_fraction", c.fragmentation_expandable_fraction);
  }
  if (!c.fragmentation_expandable_upper_fraction.source.empty()) {
    plain("fragmentation_expandable_upper_fraction", c.fragmentation_expandable_upper_fraction);
  }
  plain("comm_compute_interference", c.comm_compute_interference);
  if (!c.grouped_gemm_fraction.source.empty()) {
    plain("grouped_gemm_fraction", c.grouped_gemm_fraction);
  }
  if (!c.grouped_gemm_fraction_fp8.source.empty()) {
    plain("grouped_gemm_fraction_fp8", c.grouped_gemm_fraction_fp8);
  }
  if (!c.gemm_fp8_blockwise_fraction.source.empty()) {
    plain("gemm_fp8_blockwise_fraction", c.gemm_fp8_blockwise_fraction);
  }
  if (!c.kernel_fixed_s.source.empty()) {
    rows.push_back({"calibration.kernel_fixed_s",
                    fmt::format("{} us", c.kernel_fixed_s.value * 1e6), c.kernel_fixed_s.source});
  }
  if (!c.host_dispatch_scale.source.empty()) plain("host_dispatch_scale", c.host_dispatch_scale);
  if (!c.ep_kernel_unit_bytes_per_s.source.empty()) {
    rows.push_back({"calibration.ep_kernel_unit_bytes_per_s",
                    fmt::format("{:.3g} GB/s per SM", c.ep_kernel_unit_bytes_per_s.value / 1e9),
                    c.ep_kernel_unit_bytes_per_s.source});
  }
  if (!c.ssd_scan_fraction.source.empty()) plain("ssd_scan_fraction", c.ssd_scan_fraction);
}

std::vector<Row> accelerator_rows(const AcceleratorSpec& a) {
  std::vector<Row> rows;
  compute_rows(a, rows);
  memory_and_link_rows(a, rows);
  calibration_rows(a, rows);
  return rows;
}

void warn_unknown(const NetworkSpec& n) {
  for (const auto& k : n.unknown_keys) {
    fmt::print(stderr, "projector: warning: {}: unknown hardware parameter '{}' (ignored)\n",
               n.file, k);
  }
}

void print_network(const NetworkSpec& n) {
  const auto j = nlohmann::ordered_json::parse(network_json(n));
  fmt::print("{}  ({})\nsource: {}\n\n", n.name, n.file, n.source.empty() ? "-" : n.source);
  for (const auto& [k, v] : j["hardware_config"].items()) {
    fmt::print("  {:<24} {}\n", k, v.dump());
  }
}

void show(const std::string& name, bool as_json, const std::string& data_dir) {
  if (as_json) {
    std::optional<NetworkSpec> network;
    const std::string doc = hardware_show_json(name, data_dir, &network);
    if (network) warn_unknown(*network);
    fmt::print("{}\n", doc);
    return;
  }
  // A network file name wins over free-text accelerator matching ("h100_ib400" is a network).
  const std::vector<std::string> nets = list_networks(data_dir);
  if (std::find(nets.begin(), nets.end(), name) != nets.end()) {
    const NetworkSpec n = load_network(name, data_dir);
    warn_unknown(n);
    print_network(n);
    return;
  }
  const AcceleratorSpec a = load_accelerator(name, data_dir);
  std::string aliases;
  for (const auto& al : a.aliases) aliases += (aliases.empty() ? "" : ", ") + al;
  fmt::print("{}: {} ({}, {}; {})\nfile: {}\naliases: {}\n", a.name, a.display_name, a.vendor,
             a.arch, a.status, a.file, aliases);
  if (!a.calibration_note().empty()) fmt::print("note: {}\n", a.calibration_note());
  fmt::print("\n");
  const std::vector<Row> rows = accelerator_rows(a);
  std::size_t fw = 0;
  std::size_t vw = 0;
  for (const auto& r : rows) {
    fw = std::max(fw, r.field.size());
    vw = std::max(vw, r.value.size());
  }
  for (const auto& r : rows) {
    fmt::print("{:<{}}  {:<{}}  {}\n", r.field, fw, r.value, vw, r.source);
  }
}

}  // namespace

void add_hardware_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("hardware", "List and inspect accelerators and networks");
  cmd->require_subcommand(1);

  struct Options {
    std::string data_dir;
    std::string name;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();

  auto* list = cmd->add_subcommand(
      "list", "Accelerators (status, peaks, HBM, where they come from) and networks");
  list->add_option("--data-dir", opts->data_dir, "Catalogue directory (default: bundled data/)");
  list->add_flag("--json", opts->json, "Print JSON");
  list->callback([opts, &exit_code] {
    if (opts->json) {
      fmt::print("{}\n", hardware_list_json(data_dir_or_default(opts->data_dir)));
    } else {
      print_list(data_dir_or_default(opts->data_dir));
    }
    exit_code = kExitOk;
  });

  auto* show_cmd = cmd->add_subcommand(
      "show", "Every field of an accelerator (name, alias or file) or network, with its source");
  show_cmd->add_option("name", opts->name, "Accelerator name/alias/path or network name")
      ->required();
  show_cmd->add_flag("--json", opts->json, "Print JSON");
  show_cmd->add_option("--data-dir", opts->data_dir,
                       "Catalogue directory (default: bundled data/)");
  show_cmd->callback([opts, &exit_code] {
    show(opts->name, opts->json, data_dir_or_default(opts->data_dir));
    exit_code = kExitOk;
  });

  add_hardware_compare_command(cmd, exit_code);
}

}  // namespace projector::cli
