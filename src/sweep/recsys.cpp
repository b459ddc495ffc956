// The recommendation sweep (sweep/recsys_sweep.h).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "projector/job/recsys_plan.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/sweep/recsys_sweep.h"
#include "projector/util/error.h"
#include "projector/util/text.h"

namespace projector::sweep {
namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    std::string item(text.substr(start, end - start));
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

[[noreturn]] void bad(const std::string& message) {
  throw InputError({"--grid", 0, 0}, "--grid", message);
}

// The candidate job: every table pinned to `s` (kAuto: the config's own pins and the planner),
// the local batch, the global batch that follows, a fresh plan.
JobSpec candidate_job(const JobSpec& base, EmbeddingSharding s, int batch) {
  JobSpec job = base;
  if (s != EmbeddingSharding::kAuto) {
    for (EmbeddingTableSpec& t : job.model.recommendation.tables) t.sharding = s;
  }
  job.runtime.micro_batch_size = batch;
  job.runtime.global_batch_size = static_cast<int>(
      std::min<std::int64_t>(static_cast<std::int64_t>(batch) * job.dp(), kMaxCount));
  job.parallel.embedding_plan = plan_embeddings(job);
  return job;
}

}  // namespace

RecsysGrid parse_recsys_grid(std::string_view text) {
  RecsysGrid g;
  for (const std::string& axis : split(text, ';')) {
    const std::size_t eq = axis.find('=');
    if (eq == std::string::npos) bad(fmt::format("'{}' is not axis=values", axis));
    const std::string key = to_lower(axis.substr(0, eq));
    for (const std::string& v : split(std::string_view(axis).substr(eq + 1), ',')) {
      if (key == "embedding_sharding" || key == "sharding") {
        const std::optional<EmbeddingSharding> s = to_lower(v) == "planner"
                                                       ? std::optional(EmbeddingSharding::kAuto)
                                                       : parse_embedding_sharding(v);
        if (!s)
          bad(fmt::format("unknown sharding '{}' (planner, {})", v, embedding_sharding_names()));
        g.sharding.push_back(*s);
      } else if (key == "batch" || key == "mbs" || key == "batch_size") {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        if (*end != '\0' || n < 1 || n > kMaxCount) bad(fmt::format("'{}' is not a batch size", v));
        g.batch.push_back(static_cast<int>(n));
      } else {
        bad(fmt::format("unknown axis '{}' for a recommendation model (embedding_sharding, batch)",
                        key));
      }
    }
  }
  return g;
}

RecsysResult run_recsys_sweep(const JobSpec& base, const RecsysGrid& grid, double memory_limit) {
  const auto t0 = std::chrono::steady_clock::now();
  RecsysGrid g = grid;
  if (g.sharding.empty()) {
    g.sharding = {EmbeddingSharding::kAuto,         EmbeddingSharding::kTableWise,
                  EmbeddingSharding::kRowWise,      EmbeddingSharding::kColumnWise,
                  EmbeddingSharding::kTableRowWise, EmbeddingSharding::kDataParallel};
  }
  if (g.batch.empty()) {
    for (const double f : {0.25, 0.5, 1.0, 2.0, 4.0}) {
      const int b = static_cast<int>(base.runtime.micro_batch_size * f);
      if (b >= 1) g.batch.push_back(b);
    }
  }
  RecsysResult r;
  r.world = static_cast<int>(base.cluster.world_size());
  r.limit_bytes = memory_limit * base.cluster.accelerator.hbm_bytes;
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  for (const EmbeddingSharding s : g.sharding) {
    for (const int b : g.batch) {
      const JobSpec job = candidate_job(base, s, b);
      RecsysEntry e;
      e.sharding = s;
      e.batch = b;
      e.planned = job.parallel.embedding_plan.planned;
      e.plan = describe_plan(job);
      MemoryOptions mo;
      mo.suggest_remedies = false;
      e.peak_bytes = project_memory(job, mo).peak_point_bytes;
      e.fits = e.planned && (r.limit_bytes <= 0.0 || e.peak_bytes <= r.limit_bytes);
      if (e.fits) {
        const PerfReport rep = project_performance(job, po);
        e.step_s = rep.recsys.step_s;
        e.samples_per_s = rep.recsys.samples_per_s;
        e.samples_per_s_per_gpu = rep.recsys.samples_per_s_per_gpu;
        e.bound = rep.recsys.bound;
      }
      r.entries.push_back(std::move(e));
    }
  }
  std::stable_sort(r.entries.begin(), r.entries.end(),
                   [](const RecsysEntry& a, const RecsysEntry& b) {
                     if (a.fits != b.fits) return a.fits;
                     return a.samples_per_s_per_gpu > b.samples_per_s_per_gpu;
                   });
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string recsys_sweep_json(const RecsysResult& r, const JobSpec& base) {
  using Json = nlohmann::ordered_json;
  Json entries = Json::array();
  for (const RecsysEntry& e : r.entries) {
    entries.push_back({{"embedding_sharding", e.sharding == EmbeddingSharding::kAuto
                                                  ? std::string("planner")
                                                  : std::string(to_string(e.sharding))},
                       {"batch_per_gpu", e.batch},
                       {"fits", e.fits},
                       {"planned", e.planned},
                       {"peak_bytes", e.peak_bytes},
                       {"step_ms", e.step_s * 1e3},
                       {"samples_per_s", e.samples_per_s},
                       {"samples_per_s_per_gpu", e.samples_per_s_per_gpu},
                       {"bound", e.bound},
                       {"plan", e.plan}});
  }
  Json j;
  j["schema_version"] = 1;
  j["kind"] = "recsys_sweep";
  j["model"] = base.model.name;
  j["accelerator"] = base.cluster.accelerator.name;
  j["world_size"] = r.world;
  j["limit_bytes"] = r.limit_bytes;
  j["elapsed_s"] = r.elapsed_s;
  j["entries"] = std::move(entries);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector::sweep
