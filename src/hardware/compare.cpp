#include "projector/hardware/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

namespace projector {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

std::string number_text(double v) {
  return v > 0.0 ? fmt::format("{:.6g}", v) : "-";
}

std::optional<double> extra_peak(const AcceleratorSpec& acc, const std::string& format) {
  for (const auto& e : acc.extra_peak_tflops) {
    if (e.format == format) return e.tflops;
  }
  return std::nullopt;
}

// Rows are built from one getter applied to both entries.
class Rows {
 public:
  Rows(const AcceleratorSpec& a, const AcceleratorSpec& b) : a_(a), b_(b) {}

  void number(const std::string& field, const std::string& label,
              const std::function<double(const AcceleratorSpec&)>& get) {
    const double va = get(a_);
    const double vb = get(b_);
    rows_.push_back({field, label, mark(a_, field, number_text(va), va),
                     mark(b_, field, number_text(vb), vb), va > 0.0 && vb > 0.0 ? vb / va : 0.0});
  }
  void text(const std::string& field, const std::string& label,
            const std::function<std::string(const AcceleratorSpec&)>& get) {
    const std::string ta = get(a_);
    const std::string tb = get(b_);
    rows_.push_back({field, label, ta.empty() ? "-" : ta, tb.empty() ? "-" : tb, 0.0});
  }
  std::vector<ComparedFact> take() { return std::move(rows_); }

 private:
  static std::string mark(const AcceleratorSpec& acc, const std::string& field,
                          const std::string& shown, double v) {
    return v > 0.0 && is_estimated(acc, field) ? "~" + shown : shown;
  }

  const AcceleratorSpec& a_;
  const AcceleratorSpec& b_;
  std::vector<ComparedFact> rows_;
};

void add_peaks(Rows& rows, const AcceleratorSpec& a, const AcceleratorSpec& b) {
  for (Dtype d : kAllDtypes) {
    const std::string k(to_string(d));
    rows.number("peak_tflops." + k, k + " dense peak (TFLOP/s)",
                [d](const AcceleratorSpec& x) { return x.peak_tflops[static_cast<int>(d)]; });
  }
  // Informational formats published by either side, in first-seen order.
  std::vector<std::string> formats;
  for (const auto* acc : {&a, &b}) {
    for (const auto& e : acc->extra_peak_tflops) {
      if (std::find(formats.begin(), formats.end(), e.format) == formats.end()) {
        formats.push_back(e.format);
      }
    }
  }
  for (const auto& f : formats) {
    rows.number("peak_tflops." + f, f + " dense peak (" + (f == "int8" ? "TOP/s)" : "TFLOP/s)"),
                [f](const AcceleratorSpec& x) { return extra_peak(x, f).value_or(0.0); });
  }
}

void add_fabrics(Rows& rows) {
  rows.number("scaleup_bandwidth", "scale-up per GPU, one direction (GB/s)",
              [](const AcceleratorSpec& x) { return x.scaleup_bw_bytes_per_s / 1e9; });
  rows.text("scaleup_topology", "scale-up topology",
            [](const AcceleratorSpec& x) { return x.scaleup_topology; });
  rows.number("scaleup_domain", "scale-up domain (GPUs/chips)",
              [](const AcceleratorSpec& x) { return x.scaleup_domain; });
  rows.number("scaleup_links", "scale-up links per GPU/chip",
              [](const AcceleratorSpec& x) { return x.scaleup_links; });
  rows.number("scaleup_link_bandwidth", "per link, one direction (GB/s)",
              [](const AcceleratorSpec& x) { return x.scaleup_link_bw_bytes_per_s / 1e9; });
  rows.text("torus_dims", "torus", [](const AcceleratorSpec& x) {
    return x.torus_dims > 0 ? fmt::format("{}D, wraparound {}", x.torus_dims, x.torus_wraparound)
                            : std::string();
  });
  rows.number("scaleout_bandwidth", "scale-out per GPU/chip, one direction (GB/s)",
              [](const AcceleratorSpec& x) { return x.scaleout_bw_bytes_per_s / 1e9; });
  rows.number("default_gpus_per_node", "GPUs/chips per node or host",
              [](const AcceleratorSpec& x) { return x.default_gpus_per_node; });
  rows.text("default_network", "default network",
            [](const AcceleratorSpec& x) { return x.default_network; });
}

}  // namespace

bool is_estimated(const AcceleratorSpec& acc, const std::string& field) {
  return acc.source_of(field).rfind("estimate", 0) == 0;
}

std::string calibration_origin(const AcceleratorSpec& acc) {
  return acc.derived_from.empty() ? "own" : "borrowed from " + acc.derived_from;
}

std::vector<ComparedFact> compare_accelerators(const AcceleratorSpec& a, const AcceleratorSpec& b) {
  Rows rows(a, b);
  rows.text("display_name", "part", [](const AcceleratorSpec& x) { return x.display_name; });
  rows.text("vendor", "vendor / arch",
            [](const AcceleratorSpec& x) { return x.vendor + " " + x.arch; });
  rows.text("status", "status", [](const AcceleratorSpec& x) { return x.status; });
  add_peaks(rows, a, b);
  rows.number("compute_units", "compute units (CUs/SMs/TensorCores)",
              [](const AcceleratorSpec& x) { return x.compute_units; });
  rows.number("devices_per_chip", "framework devices per chip",
              [](const AcceleratorSpec& x) { return x.devices_per_chip; });
  rows.number("boost_clock_mhz", "boost clock (MHz)",
              [](const AcceleratorSpec& x) { return x.boost_clock_mhz; });
  rows.number("board_power_w", "board power (W)",
              [](const AcceleratorSpec& x) { return x.board_power_w; });
  rows.number("idle_power_w", "idle power (W)",
              [](const AcceleratorSpec& x) { return x.idle_power_w; });
  rows.number("hbm_capacity", "HBM (GiB)",
              [](const AcceleratorSpec& x) { return x.hbm_bytes / kGiB; });
  rows.number("hbm_bandwidth", "HBM bandwidth (TB/s)",
              [](const AcceleratorSpec& x) { return x.hbm_bw_bytes_per_s / 1e12; });
  rows.number("l2", "L2 (MiB)", [](const AcceleratorSpec& x) { return x.l2_bytes / kMiB; });
  rows.number("llc", "last-level cache (MiB)",
              [](const AcceleratorSpec& x) { return x.llc_bytes / kMiB; });
  add_fabrics(rows);
  rows.text("derived_from", "efficiencies (calibration)", calibration_origin);
  return rows.take();
}

}  // namespace projector
