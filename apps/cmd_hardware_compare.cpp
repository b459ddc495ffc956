// `projector hardware compare A B [--config X]`: two accelerators' facts side by side and, with a
// config, the same job projected on each (the performance projection, unchanged).
#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "commands.h"
#include "job_options.h"
#include "projector/hardware/catalog.h"
#include "projector/hardware/compare.h"
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

// The job of `config` on one accelerator, or why it could not be projected there.
struct Projection {
  std::string accelerator;
  std::optional<JobSpec> job;
  PerfReport report;
  std::string error;                  // "file:line: key: message"
  std::optional<InputError> failure;  // the error itself, to rethrow
};

Projection project_on(const CompareOptions& o, const AcceleratorSpec& acc) {
  Projection p;
  p.accelerator = acc.name;
  JobOptions jo;  // the shared loading path of `performance` (apps/job_options.h)
  jo.config = o.config;
  jo.data_dir = o.data_dir;
  jo.hardware = acc.file;
  jo.nodes = o.nodes;
  jo.gpus_per_node = o.gpus_per_node;
  try {
    p.job = build_job(jo);
    PerfOptions po;
    po.keep_op_table = false;
    p.report = project_performance(*p.job, po);
  } catch (const InputError& e) {
    p.job.reset();
    p.error = e.what();
    p.failure = e;
  }
  return p;
}

// tokens/s per GPU of B over A: the per-GPU speed-up (equal to the job speed-up when both run
// on the same number of GPUs).
double speedup(const Projection& a, const Projection& b) {
  if (!a.job || !b.job || a.report.tokens_per_s_per_gpu <= 0.0) return 0.0;
  return b.report.tokens_per_s_per_gpu / a.report.tokens_per_s_per_gpu;
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

void print_projection(const CompareOptions& o, const Projection& pa, const Projection& pb) {
  fmt::print("\n-- {} projected on each --\n", o.config);
  fmt::print("  {:<14} {:>8} {:>12} {:>14} {:>8} {:>10}  {}\n", "accelerator", "GPUs", "iter ms",
             "tokens/s/GPU", "MFU %", "peak GiB", "memory");
  for (const Projection* p : {&pa, &pb}) {
    if (!p->job) {
      fmt::print("  {:<14} not projected: {}\n", p->accelerator, p->error);
      continue;
    }
    const PerfReport& r = p->report;
    fmt::print("  {:<14} {:>8} {:>12.1f} {:>14.1f} {:>8.1f} {:>10.1f}  {}\n", p->accelerator,
               r.world_size, r.iteration_s * 1e3, r.tokens_per_s_per_gpu, 100.0 * r.mfu,
               r.memory.peak_point_bytes / kGiB, to_string(r.memory.verdict));
  }
  const double s = speedup(pa, pb);
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

nlohmann::ordered_json projection_json(const Projection& p) {
  if (!p.job) return {{"accelerator", p.accelerator}, {"error", p.error}};
  const PerfReport& r = p.report;
  return {{"accelerator", p.accelerator},
          {"world_size", r.world_size},
          {"iteration_time_ms", r.iteration_s * 1e3},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
          {"mfu_pct", 100.0 * r.mfu},
          {"peak_memory_bytes", r.memory.peak_point_bytes},
          {"memory_verdict", std::string(to_string(r.memory.verdict))}};
}

nlohmann::ordered_json compare_json(const CompareOptions& o, const AcceleratorSpec& a,
                                    const AcceleratorSpec& b, const Projection* pa,
                                    const Projection* pb) {
  nlohmann::ordered_json j;
  for (const auto& [key, acc] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
    j[key] = {{"name", acc->name},
              {"status", acc->status},
              {"calibration", calibration_origin(*acc)},
              {"calibration_note", acc->calibration_note()}};
  }
  nlohmann::ordered_json facts = nlohmann::ordered_json::array();
  for (const auto& f : compare_accelerators(a, b)) {
    facts.push_back({{"field", f.field},
                     {"label", f.label},
                     {"a", f.a},
                     {"b", f.b},
                     {"ratio", f.ratio > 0.0 ? nlohmann::ordered_json(f.ratio) : nullptr}});
  }
  j["facts"] = facts;
  if (pa != nullptr && pb != nullptr) {
    const double s = speedup(*pa, *pb);
    j["projection"] = {{"config", o.config},
                       {"a", projection_json(*pa)},
                       {"b", projection_json(*pb)},
                       {"speedup_tokens_per_s_per_gpu",
                        s > 0.0 ? nlohmann::ordered_json(s) : nlohmann::ordered_json()}};
  }
  return j;
}

void run_compare(const CompareOptions& o) {
  const std::string dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  const AcceleratorIndex index(dir);
  const AcceleratorSpec a = index.load(o.a);
  const AcceleratorSpec b = index.load(o.b);
  std::optional<Projection> pa;
  std::optional<Projection> pb;
  if (!o.config.empty()) {
    pa = project_on(o, a);
    pb = project_on(o, b);
    // The same error on both parts is the config's (malformed, a bad value, a missing file), not
    // a difference between the parts: exit 2 with its location instead of two "not projected".
    if (pa->failure && pb->failure && pa->error == pb->error) throw *pa->failure;
  }
  if (o.json) {
    fmt::print("{}\n", compare_json(o, a, b, pa ? &*pa : nullptr, pb ? &*pb : nullptr)
                           .dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  print_facts(a, b);
  if (pa && pb) print_projection(o, *pa, *pb);
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
