// `projector hardware compare A B [--config X]`: two accelerators' facts side by side and, with a
// config, the same job projected on each (the performance projection, unchanged).
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.h"
#include "job_options.h"
#include "projector/commands/catalog.h"
#include "projector/hardware/catalog.h"
#include "projector/hardware/compare.h"
#include "projector/job/spec.h"
#include "projector/perf/perf.h"
#include "projector/util/error.h"

namespace projector::cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct CompareOptions {
  std::string a;
  std::string b;
  std::string config;
  std::string data_dir;
  int nodes = 0;
  int gpus_per_node = 0;
  bool json = false;
};

// The job of `o.config` on one accelerator, through the shared loading path of `performance`
// (apps/job_options.h).
JobSpec job_on(const CompareOptions& o, const AcceleratorSpec& acc) {
  JobOptions jo;
  jo.config = o.config;
  jo.data_dir = o.data_dir;
  jo.hardware = acc.file;
  jo.nodes = o.nodes;
  jo.gpus_per_node = o.gpus_per_node;
  return build_job(jo);
}

void print_facts(const AcceleratorSpec& a, const AcceleratorSpec& b) {
  const std::vector<ComparedFact> facts = compare_accelerators(a, b);
  std::size_t lw = 5;
  std::size_t aw = a.name.size();
  std::size_t bw = b.name.size();
  for (const auto& f : facts) {
    lw = std::max(lw, f.label.size());
    aw = std::max(aw, f.a.size());
    bw = std::max(bw, f.b.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {}/{}\n", "", lw, a.name, aw, b.name, bw, b.name, a.name);
  for (const auto& f : facts) {
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", f.label, lw, f.a, aw, f.b, bw,
               f.ratio > 0.0 ? fmt::format("{:.2f}x", f.ratio) : std::string());
  }
  fmt::print("\n'~' marks an estimate; `projector hardware show NAME` gives every source.\n");
  for (const auto* acc : {&a, &b}) {
    if (!acc->calibration_note().empty()) fmt::print("note: {}\n", acc->calibration_note());
  }
}

void print_projection(const CompareOptions& o, const AcceleratorProjection& pa,
                      const AcceleratorProjection& pb) {
  fmt::print("\n-- {} projected on each --\n", o.config);
  fmt::print("  {:<14} {:>8} {:>12} {:>14} {:>8} {:>10}  {}\n", "accelerator", "GPUs", "iter ms",
             "tokens/s/GPU", "MFU %", "peak GiB", "memory");
  for (const AcceleratorProjection* p : {&pa, &pb}) {
    if (!p->job) {
      fmt::print("  {:<14} not projected: {}\n", p->accelerator, p->error);
      continue;
    }
    const PerfReport& r = p->report;
    fmt::print("  {:<14} {:>8} {:>12.1f} {:>14.1f} {:>8.1f} {:>10.1f}  {}\n", p->accelerator,
               r.world_size, r.iteration_s * 1e3, r.tokens_per_s_per_gpu, 100.0 * r.mfu,
               r.memory.peak_point_bytes / kGiB, to_string(r.memory.verdict));
  }
  const double s = comparison_speedup(pa, pb);
  if (s > 0.0) {
    fmt::print("  speed-up of {} over {}: {:.2f}x tokens/s per GPU", pb.accelerator, pa.accelerator,
               s);
    if (pa.report.world_size == pb.report.world_size) {
      fmt::print(" ({:.2f}x iteration time on {} GPUs)",
                 pa.report.iteration_s / pb.report.iteration_s, pa.report.world_size);
    } else {
      fmt::print(" (different GPU counts: {} vs {} GPUs per node; set --gpus-per-node)",
                 pa.job->cluster.gpus_per_node, pb.job->cluster.gpus_per_node);
    }
    fmt::print("\n");
  }
}

void run_compare(const CompareOptions& o) {
  const std::string dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  const HardwareComparison c = compare_hardware(
      o.a, o.b, dir, o.config, [&o](const AcceleratorSpec& acc) { return job_on(o, acc); });
  if (o.json) {
    fmt::print("{}\n", hardware_compare_json(c));
    return;
  }
  print_facts(c.a, c.b);
  if (c.pa && c.pb) print_projection(o, *c.pa, *c.pb);
}

}  // namespace

void add_hardware_compare_command(CLI::App* hardware, int& exit_code) {
  auto opts = std::make_shared<CompareOptions>();
  auto* cmd = hardware->add_subcommand(
      "compare", "Two accelerators side by side; with --config, the job projected on each");
  cmd->add_option("a", opts->a, "Accelerator name, alias or file")->required();
  cmd->add_option("b", opts->b, "Accelerator name, alias or file")->required();
  cmd->add_option("-c,--config,--exp", opts->config,
                  "Primus experiment YAML to project on both accelerators");
  cmd->add_option("--nodes", opts->nodes, "nodes for the projection (default: as `performance`)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gpus-per-node", opts->gpus_per_node,
                  "GPUs per node for both projections (default: each accelerator's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--data-dir", opts->data_dir, "Catalogue directory (default: bundled data/)");
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->callback([opts, &exit_code] {
    run_compare(*opts);
    exit_code = kExitOk;
  });
}

}  // namespace projector::cli
