// The kernel check: price every row, summarise per op class x accelerator, gate, JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "projector/hardware/catalog.h"
#include "projector/kernels/kernels.h"
#include "projector/util/error.h"
#include "projector/util/stats.h"

namespace projector {

namespace {

KernelClassStats summarize_group(const std::vector<const PricedKernelRow*>& rows) {
  KernelClassStats s;
  s.op_class = std::string(to_string(rows.front()->row.op_class));
  s.accelerator = rows.front()->row.accelerator;
  s.rows = static_cast<int>(rows.size());
  std::vector<double> abs_err;
  std::vector<double> signed_err;
  std::vector<double> peer_abs_err;
  for (const PricedKernelRow* r : rows) {
    if (r->peer_predicted_s > 0.0) peer_abs_err.push_back(std::fabs(r->peer_error_pct));
    abs_err.push_back(std::fabs(r->error_pct));
    signed_err.push_back(r->error_pct);
    if (std::fabs(r->error_pct) >= std::fabs(s.worst_pct) || s.worst_id.empty()) {
      s.worst_id = r->row.id;
      s.worst_pct = r->error_pct;
    }
  }
  std::sort(abs_err.begin(), abs_err.end());
  std::sort(signed_err.begin(), signed_err.end());
  s.median_abs_pct = interpolated_quantile(abs_err, 0.5);
  s.p90_abs_pct = interpolated_quantile(abs_err, 0.9);
  s.median_signed_pct = interpolated_quantile(signed_err, 0.5);
  std::sort(peer_abs_err.begin(), peer_abs_err.end());
  s.peer_rows = static_cast<int>(peer_abs_err.size());
  if (!peer_abs_err.empty()) s.peer_median_abs_pct = interpolated_quantile(peer_abs_err, 0.5);
  return s;
}

}  // namespace

KernelCheck check_kernels(const std::vector<KernelRow>& rows, const std::string& data_dir) {
  struct Hardware {
    AcceleratorSpec acc;
    NetworkSpec net;
    AcceleratorSpec device;  // device_share(acc): one framework device of a multi-device chip
  };
  std::map<std::string, Hardware> hardware;
  KernelCheck check;
  check.rows.reserve(rows.size());
  for (const KernelRow& row : rows) {
    auto it = hardware.find(row.accelerator);
    if (it == hardware.end()) {
      Hardware h;
      try {
        h.acc = load_accelerator(row.accelerator, data_dir);
        h.net = default_network_for(h.acc, data_dir);
        h.device = device_share(h.acc);
      } catch (const InputError& e) {
        throw InputError({row.file, row.line, 0}, "accelerator", e.message());
      }
      it = hardware.emplace(row.accelerator, std::move(h)).first;
    }
    const AcceleratorSpec& chip = it->second.acc;
    if (chip.devices_per_chip > 1 && row.measured_on.empty()) {
      // A per-device figure read as the chip's is off by devices_per_chip: never guessed.
      throw InputError({row.file, row.line, 0}, "measured_on",
                       fmt::format("{} has {} devices per chip: state device or chip", chip.name,
                                   chip.devices_per_chip));
    }
    // One device of the chip, as a job's rank is priced (builder_cluster.cpp).
    const AcceleratorSpec& acc = row.measured_on == "device" ? it->second.device : chip;
    check.rows.push_back(price_kernel_row(row, acc, it->second.net));
  }
  std::map<std::pair<int, std::string>, std::vector<const PricedKernelRow*>> groups;
  for (const PricedKernelRow& r : check.rows) {
    if (!r.skipped.empty()) continue;
    groups[{static_cast<int>(r.row.op_class), r.row.accelerator}].push_back(&r);
  }
  for (const auto& [key, members] : groups) check.classes.push_back(summarize_group(members));
  return check;
}

std::vector<std::string> kernel_gate_failures(const KernelCheck& check, int min_rows,
                                              double max_median_pct, double max_p90_pct) {
  std::vector<std::string> out;
  for (const KernelClassStats& s : check.classes) {
    if (s.rows < min_rows) continue;
    if (s.median_abs_pct > max_median_pct || s.p90_abs_pct > max_p90_pct) {
      out.push_back(fmt::format(
          "{} on {}: {} rows, median |error| {:.1f}% (gate {}%), P90 {:.1f}% (gate {}%), worst "
          "{} {:+.1f}%",
          s.op_class, s.accelerator, s.rows, s.median_abs_pct, max_median_pct, s.p90_abs_pct,
          max_p90_pct, s.worst_id, s.worst_pct));
    }
  }
  return out;
}

KernelGateResult kernel_gate(const KernelCheck& check, const std::vector<KernelGap>& gaps) {
  KernelGateResult out;
  auto listed = [&](const std::string& cls, const std::string& acc) -> const KernelGap* {
    for (const KernelGap& g : gaps) {
      if (g.op_class == cls && g.accelerator == acc) return &g;
    }
    return nullptr;
  };
  std::vector<const KernelClassStats*> failing;
  for (const KernelClassStats& s : check.classes) {
    if (kernel_gate_failures(KernelCheck{{}, {s}}).empty()) continue;
    const std::string line = kernel_gate_failures(KernelCheck{{}, {s}}).front();
    if (const KernelGap* g = listed(s.op_class, s.accelerator)) {
      out.open.push_back(line + " (open gap: " + g->reason + ")");
    } else {
      out.failures.push_back(line);
    }
    failing.push_back(&s);
  }
  for (const KernelGap& g : gaps) {
    const bool still = std::any_of(failing.begin(), failing.end(), [&](const KernelClassStats* s) {
      return s->op_class == g.op_class && s->accelerator == g.accelerator;
    });
    if (!still) {
      out.closed.push_back(fmt::format("{} on {} (open_gaps.yaml line {}) passes the gate now",
                                       g.op_class, g.accelerator, g.line));
    }
  }
  return out;
}

std::string kernel_check_to_json(const KernelCheck& check) {
  nlohmann::json classes = nlohmann::json::array();
  for (const KernelClassStats& s : check.classes) {
    classes.push_back({{"op_class", s.op_class},
                       {"accelerator", s.accelerator},
                       {"rows", s.rows},
                       {"median_abs_pct", s.median_abs_pct},
                       {"p90_abs_pct", s.p90_abs_pct},
                       {"median_signed_pct", s.median_signed_pct},
                       {"worst", {{"id", s.worst_id}, {"error_pct", s.worst_pct}}}});
    if (s.peer_rows > 0) {
      classes.back()["primus_model"] = {{"rows", s.peer_rows},
                                        {"median_abs_pct", s.peer_median_abs_pct}};
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const PricedKernelRow& r : check.rows) {
    nlohmann::json j = {{"id", r.row.id},
                        {"op_class", std::string(to_string(r.row.op_class))},
                        {"accelerator", r.row.accelerator},
                        {"dtype", r.row.dtype_name},
                        {"file", r.row.file},
                        {"line", r.row.line},
                        {"model", r.model},
                        {"source", r.row.url}};
    if (!r.skipped.empty()) {
      j["skipped"] = r.skipped;
    } else {
      j["predicted_s"] = r.predicted_s;
      j["measured_s"] = r.measured_s;
      j["error_pct"] = r.error_pct;
      if (r.peer_predicted_s > 0.0) {
        j["primus_model"] = {{"predicted_s", r.peer_predicted_s}, {"error_pct", r.peer_error_pct}};
      }
    }
    rows.push_back(std::move(j));
  }
  return nlohmann::json{
      {"schema_version", kKernelsSchemaVersion}, {"classes", classes}, {"rows", rows}}
      .dump(2);
}

}  // namespace projector
