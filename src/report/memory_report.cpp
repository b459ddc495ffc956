#include "projector/report/memory_report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double gib(double bytes) {
  return bytes / kGiB;
}

}  // namespace

std::string memory_summary_text(const JobSpec& job, const MemoryReport& rep) {
  std::string out;
  out += "====================== Memory projection =======================\n";
  out += fmt::format("Accelerator  {} ({:.0f} GiB HBM); schedule {}; {} microbatches\n",
                     job.cluster.accelerator.name, gib(rep.capacity_bytes), to_string(rep.schedule),
                     rep.num_microbatches);
  // Component rows x rank columns.
  out += fmt::format("  {:<22}", "GiB per GPU");
  for (const RankMemory& r : rep.ranks)
    out += fmt::format(" {:>9}", fmt::format("pp{}", r.pp_rank));
  out += "\n";
  out += fmt::format("  {:<22}", "layers");
  for (const RankMemory& r : rep.ranks) {
    out += fmt::format(" {:>9}", fmt::format("{}{}{}", r.num_layers, r.has_embedding ? "+E" : "",
                                             r.has_output ? "+L" : ""));
  }
  out += "\n";
  for (int c = 0; c < kNumMemoryComponents; ++c) {
    bool any = false;
    for (const RankMemory& r : rep.ranks) any = any || r.upper[static_cast<std::size_t>(c)] > 0;
    if (!any) continue;
    out += fmt::format("  {:<22}", to_string(static_cast<MemoryComponent>(c)));
    for (const RankMemory& r : rep.ranks) {
      out += fmt::format(" {:>9.2f}", gib(r.point[static_cast<std::size_t>(c)]));
    }
    out += "\n";
  }
  out += fmt::format("  {:<22}", "total (point)");
  for (const RankMemory& r : rep.ranks) out += fmt::format(" {:>9.2f}", gib(r.total_point_bytes));
  out += "\n";
  out += fmt::format("  {:<22}", "total (upper bound)");
  for (const RankMemory& r : rep.ranks) out += fmt::format(" {:>9.2f}", gib(r.total_upper_bytes));
  out += "\n";
  out += fmt::format("  {:<22}", "in-flight microbatches");
  for (const RankMemory& r : rep.ranks) {
    out += fmt::format(" {:>9.1f}", r.in_flight.total_chunk_microbatches());
  }
  out += "\n\n";
  out += fmt::format(
      "Peak: {:.2f} GiB (upper bound {:.2f} GiB) on pipeline rank {} of {:.0f} GiB -> {}\n",
      gib(rep.peak_point_bytes), gib(rep.peak_upper_bytes),
      rep.ranks.empty() ? 0 : rep.ranks[static_cast<std::size_t>(rep.peak_rank)].pp_rank,
      gib(rep.capacity_bytes), to_string(rep.verdict));
  if (!rep.largest_components.empty()) {
    out += "Largest components:";
    for (MemoryComponent c : rep.largest_components) out += fmt::format(" {}", to_string(c));
    out += "\n";
  }
  if (!rep.remedies.empty()) {
    out += "What would make it fit:\n";
    for (const MemoryRemedy& m : rep.remedies) {
      out += fmt::format("  - {:<44} peak {:.2f} GiB (upper {:.2f}) -> {}\n", m.change,
                         gib(m.peak_point_bytes), gib(m.peak_upper_bytes), to_string(m.verdict));
    }
  }
  for (const std::string& n : rep.notes) out += fmt::format("note: {}\n", n);
  return out;
}

std::string memory_json(const JobSpec& job, const MemoryReport& rep, int indent) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema_version"] = kMemoryJsonSchemaVersion;
  j["kind"] = "memory";
  j["accelerator"] = job.cluster.accelerator.name;
  j["schedule"] = std::string(to_string(rep.schedule));
  j["num_microbatches"] = rep.num_microbatches;
  j["tokens_per_microbatch"] = rep.tokens_per_microbatch;
  j["capacity_gib"] = gib(rep.capacity_bytes);
  j["peak_point_gib"] = gib(rep.peak_point_bytes);
  j["peak_upper_gib"] = gib(rep.peak_upper_bytes);
  j["peak_rank"] = rep.peak_rank;
  j["peak_upper_rank"] = rep.peak_upper_rank;
  j["verdict"] = std::string(to_string(rep.verdict));
  ordered_json ranks = ordered_json::array();
  for (const RankMemory& r : rep.ranks) {
    ordered_json jr;
    jr["pp_rank"] = r.pp_rank;
    jr["virtual_stages"] = r.virtual_stages;
    jr["num_layers"] = r.num_layers;
    jr["has_embedding"] = r.has_embedding;
    jr["has_output"] = r.has_output;
    jr["mtp_layers"] = r.mtp_layers;
    jr["params"] = {{"dense", r.params.dense_params},
                    {"dense_gemm", r.params.dense_gemm_params},
                    {"expert", r.params.expert_params},
                    {"largest_unit", r.params.largest_unit_params}};
    jr["in_flight"] = {{"per_chunk", r.in_flight.per_chunk}, {"w_only", r.in_flight.w_only}};
    jr["activation_per_microbatch_gib"] = gib(r.activation_per_microbatch_bytes);
    ordered_json point, upper;
    for (int c = 0; c < kNumMemoryComponents; ++c) {
      const std::string name{to_string(static_cast<MemoryComponent>(c))};
      point[name] = gib(r.point[static_cast<std::size_t>(c)]);
      upper[name] = gib(r.upper[static_cast<std::size_t>(c)]);
    }
    jr["components_gib"] = point;
    jr["components_upper_gib"] = upper;
    jr["total_point_gib"] = gib(r.total_point_bytes);
    jr["total_upper_gib"] = gib(r.total_upper_bytes);
    jr["allocator_point_gib"] = gib(r.allocator_point_bytes);
    jr["allocator_upper_gib"] = gib(r.allocator_upper_bytes);
    jr["communicators"] = r.communicators;
    jr["transient_source"] = r.transient_source;
    ranks.push_back(jr);
  }
  j["ranks"] = ranks;
  ordered_json largest = ordered_json::array();
  for (MemoryComponent c : rep.largest_components) largest.push_back(std::string(to_string(c)));
  j["largest_components"] = largest;
  ordered_json remedies = ordered_json::array();
  for (const MemoryRemedy& m : rep.remedies) {
    remedies.push_back({{"change", m.change},
                        {"peak_point_gib", gib(m.peak_point_bytes)},
                        {"peak_upper_gib", gib(m.peak_upper_bytes)},
                        {"verdict", std::string(to_string(m.verdict))}});
  }
  j["remedies"] = remedies;
  ordered_json sources;
  for (int c = 0; c < kNumMemoryComponents; ++c) {
    if (!rep.sources[static_cast<std::size_t>(c)].empty()) {
      sources[std::string(to_string(static_cast<MemoryComponent>(c)))] =
          rep.sources[static_cast<std::size_t>(c)];
    }
  }
  j["sources"] = sources;
  j["notes"] = rep.notes;
  return j.dump(indent);
}

}  // namespace projector
