// `projector kernels [--data-dir DIR] [--kernels-dir DIR] [--json FILE] [--gate]`: every published
// kernel measurement of data/kernels priced by the cost model, per op class x accelerator.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "commands.h"
#include "projector/hardware/catalog.h"
#include "projector/kernels/kernels.h"
#include "projector/util/error.h"
#include "report_outputs.h"

namespace projector::cli {
namespace {

struct KernelsOptions {
  std::string data_dir;
  std::string kernels_dir;
  std::string json_file;
  bool rows = false;
  bool gate = false;
};

void print_rows(const KernelCheck& check) {
  fmt::print("{:<52} {:>11} {:>11} {:>8}  {}\n", "row", "predicted", "measured", "error%", "model");
  for (const PricedKernelRow& r : check.rows) {
    if (!r.skipped.empty()) {
      fmt::print("{:<52} {:>11} {:>11} {:>8}  skipped: {}\n", r.row.id, "-", "-", "-", r.skipped);
      continue;
    }
    fmt::print("{:<52} {:>9.1f}us {:>9.1f}us {:>+8.1f}  {}{}\n", r.row.id, r.predicted_s * 1e6,
               r.measured_s * 1e6, r.error_pct, r.model,
               r.peer_predicted_s > 0.0 ? fmt::format(" | Primus model {:.1f}us ({:+.1f}%)",
                                                      r.peer_predicted_s * 1e6, r.peer_error_pct)
                                        : "");
  }
  fmt::print("\n");
}

int run(const KernelsOptions& o) {
  const std::string data_dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  const std::string dir = o.kernels_dir.empty()
                              ? (std::filesystem::path(data_dir) / "kernels").string()
                              : o.kernels_dir;
  const KernelCheck check = check_kernels(load_kernel_rows(dir), data_dir);
  if (o.rows) print_rows(check);
  fmt::print("{:<13} {:<20} {:>5} {:>9} {:>8} {:>8}  {}\n", "op class", "accelerator", "rows",
             "median%", "P90%", "bias%", "worst row");
  int priced = 0;
  for (const KernelClassStats& s : check.classes) {
    priced += s.rows;
    fmt::print("{:<13} {:<20} {:>5} {:>9.1f} {:>8.1f} {:>+8.1f}  {} ({:+.1f}%)\n", s.op_class,
               s.accelerator, s.rows, s.median_abs_pct, s.p90_abs_pct, s.median_signed_pct,
               s.worst_id, s.worst_pct);
  }
  // The peer baseline on the collective rows: Primus' own analytical model, same rows, same
  // network files.
  bool header = false;
  for (const KernelClassStats& s : check.classes) {
    if (s.peer_rows == 0) continue;
    if (!header) {
      fmt::print("\ncollectives against Primus' analytical model (same rows and network files):\n");
      fmt::print("{:<20} {:>5} {:>16} {:>16}\n", "accelerator", "rows", "projector med%",
                 "Primus med%");
      header = true;
    }
    fmt::print("{:<20} {:>5} {:>16.1f} {:>16.1f}\n", s.accelerator, s.peer_rows, s.median_abs_pct,
               s.peer_median_abs_pct);
  }
  fmt::print("\n{} rows, {} priced, {} skipped (--rows lists each with its reason)\n",
             check.rows.size(), priced, check.rows.size() - static_cast<std::size_t>(priced));
  if (!o.json_file.empty()) write_output(o.json_file, kernel_check_to_json(check), "--json");
  const KernelGateResult gate = kernel_gate(check, load_kernel_gaps(dir));
  fmt::print(
      "\ngate (median |error| <= 10%, P90 <= 25% for every class x accelerator with >= 5 "
      "rows): {} open gaps listed in {}\n",
      gate.open.size(), kKernelGapsFile);
  if (o.rows || o.gate) {
    for (const std::string& g : gate.open) fmt::print("  {}\n", g);
  }
  for (const std::string& g : gate.closed) fmt::print("  closed: {}\n", g);
  for (const std::string& f : gate.failures)
    fmt::print(stderr, "projector: kernels: gate: {}\n", f);
  const bool failed = !gate.failures.empty() || !gate.closed.empty();
  return o.gate && failed ? kExitFailure : kExitOk;
}

}  // namespace

void add_kernels_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<KernelsOptions>();
  auto* cmd = app.add_subcommand(
      "kernels", "Price every published kernel measurement (data/kernels) with the cost model");
  cmd->add_option("--data-dir", opts->data_dir, "catalogue directory (accelerators, networks)");
  cmd->add_option("--kernels-dir", opts->kernels_dir, "kernel rows (default: DATA_DIR/kernels)");
  cmd->add_option("--json", opts->json_file, "also write the check as JSON to FILE");
  cmd->add_flag("--rows", opts->rows, "list every row with its prediction and model");
  cmd->add_flag("--gate", opts->gate,
                "exit 1 when a class x accelerator with >= 5 rows exceeds median 10% / P90 25% "
                "and is not a listed open gap, or when a listed gap passes");
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace projector::cli
