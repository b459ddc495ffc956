// Rendering of memory projections: the per-rank component table (GiB) and the JSON document
// with every intermediate (bytes).
#include "projector/report/memory_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "json_common.h"
#include "projector/job/spec.h"
#include "recsys_report.h"

namespace projector {
namespace {

using report_detail::Json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double bytes) {
  return fmt::format("{:.2f}", bytes / kGiB);
}

// What one action of the schedule is, in words.
std::string action_words(const PeakMoment& m) {
  const std::string what = m.phase == "F"    ? "forward"
                           : m.phase == "B"  ? "input-gradient backward"
                           : m.phase == "W"  ? "weight-gradient backward"
                           : m.phase == "BW" ? "backward"
                                             : m.phase;
  return fmt::format("the {} of microbatch {} (chunk {})", what, m.microbatch, m.chunk);
}

std::string allocator_text(const MemoryReport& rep, const RankMemory& peak) {
  std::string out = fmt::format("Allocated peak {} GiB, reserved {} GiB ({} allocator)",
                                gib(peak.peak_allocated_bytes), gib(peak.allocator_point_bytes),
                                to_string(rep.allocator));
  if (peak.moment.action >= 0) {
    out += fmt::format(", at {}", action_words(peak.moment));
    if (!peak.moment.temporary.empty()) {
      out += fmt::format(" with its {} ({} GiB) live", peak.moment.temporary,
                         gib(peak.moment.temporary_bytes));
    }
  }
  out += "\n";
  if (rep.allocator_replayed) {
    out += fmt::format(
        "  replaying the timeline reserves {} GiB beyond the allocated peak ({} segments); the "
        "rest of `fragmentation` is the residual fraction\n",
        gib(peak.allocator_excess_bytes), peak.allocator_segments);
  }
  return out;
}

std::string rank_label(const RankMemory& r) {
  std::string l = fmt::format("pp{}", r.pp_rank);
  if (r.has_embedding) l += " emb";
  if (r.has_output) l += " out";
  if (r.mtp_layers > 0) l += fmt::format(" mtp{}", r.mtp_layers);
  return l;
}

// Why the verdict differs from the point's, when the calibrated range moved it.
std::string verdict_reason(const MemoryReport& rep) {
  if (!rep.range || rep.range->model_verdict == rep.verdict) return "";
  if (rep.verdict == MemoryVerdict::kAtRisk && rep.peak_point_bytes > rep.capacity_bytes) {
    return " (the point is over HBM, but the low end of the calibrated range fits)";
  }
  if (rep.verdict == MemoryVerdict::kAtRisk) return " (the calibrated range reaches past HBM)";
  return fmt::format(" (without the calibrated range: {})", to_string(rep.range->model_verdict));
}

// A default whose key names what decides a memory verdict (recompute, batch, sharding, offload,
// hardware), in any back-end's spelling.
bool decides_memory(const AppliedDefault& d) {
  for (const char* word : {"recompute", "checkpoint", "remat", "batch", "fsdp", "shard",
                           "distributed_optimizer", "offload", "hardware"}) {
    if (d.key.find(word) != std::string::npos) return true;
  }
  return false;
}

// Every default with --verbose; else the ones that decide memory and a count of the rest.
std::string defaults_text(const JobSpec& job, bool all_defaults) {
  std::string out;
  std::size_t hidden = 0;
  for (const AppliedDefault& d : job.defaults) {
    if (!all_defaults && !decides_memory(d)) {
      ++hidden;
      continue;
    }
    out += d.source.empty()
               ? fmt::format("  default {} = {} ({})\n", d.key, d.value, d.reason)
               : fmt::format("  default {} = {} ({}: {})\n", d.key, d.value, d.source, d.reason);
  }
  if (hidden > 0) {
    out += fmt::format(
        "  ... and {} other default(s) applied (--verbose, `projector config` or the "
        "JSON list them)\n",
        hidden);
  }
  return out;
}

std::string summary_text(const JobSpec& job, const MemoryReport& rep, bool all_defaults) {
  if (rep.has_recsys) return report_detail::recsys_memory_text(job, rep);
  std::string out;
  out += fmt::format("Memory projection: {} ({})\n",
                     job.model.name.empty() ? "model" : job.model.name, job.source);
  out += fmt::format(
      "  TP {} PP {} VPP {} CP {} EP {} ETP {} DP {} | mbs {} seq {} | {} microbatches, "
      "schedule {}\n",
      job.parallel.tp, job.parallel.pp, job.parallel.vpp, job.parallel.cp, job.parallel.ep,
      job.parallel.etp, job.dp(), job.runtime.micro_batch_size, job.runtime.seq_length,
      rep.num_microbatches, to_string(rep.schedule));
  out += fmt::format(
      "  {} x {} {} ({:.0f} GiB HBM) from {}\n", job.cluster.nodes, job.cluster.gpus_per_node,
      job.cluster.accelerator.name, job.cluster.accelerator.hbm_bytes / kGiB,
      job.cluster.accelerator_origin.empty() ? "the job" : job.cluster.accelerator_origin);
  out += fmt::format("  all values GiB (2^30 bytes); per GPU\n\n");

  out += fmt::format("{:<18}", "component");
  for (const RankMemory& r : rep.ranks) out += fmt::format(" {:>12}", rank_label(r));
  out += fmt::format("\n");
  out += fmt::format("{:<18}", "layers");
  for (const RankMemory& r : rep.ranks) out += fmt::format(" {:>12}", r.num_layers);
  out += fmt::format("\n");
  out += fmt::format("{:<18}", "in-flight mb");
  for (const RankMemory& r : rep.ranks) {
    out += fmt::format(" {:>12}", fmt::format("{:g}", r.in_flight.total_chunk_microbatches()));
  }
  out += fmt::format("\n");
  for (int c = 0; c < kNumMemoryComponents; ++c) {
    out += fmt::format("{:<18}", to_string(static_cast<MemoryComponent>(c)));
    for (const RankMemory& r : rep.ranks) {
      out += fmt::format(" {:>12}", gib(r.point[static_cast<std::size_t>(c)]));
    }
    out += fmt::format("\n");
  }
  out += fmt::format("{:<18}", "total (point)");
  for (const RankMemory& r : rep.ranks) out += fmt::format(" {:>12}", gib(r.total_point_bytes));
  out += fmt::format("\n{:<18}", "total (upper)");
  for (const RankMemory& r : rep.ranks) out += fmt::format(" {:>12}", gib(r.total_upper_bytes));
  out += fmt::format("\n\n");

  const RankMemory& peak = rep.ranks[static_cast<std::size_t>(rep.peak_rank)];
  out += fmt::format("Peak: pipeline rank {} ({}), point {} GiB, upper {} GiB; transient: {}\n",
                     peak.pp_rank, rank_label(peak), gib(rep.peak_point_bytes),
                     gib(rep.peak_upper_bytes), peak.transient_source);
  out += allocator_text(rep, peak);
  if (rep.range) {
    const MemoryRange& r = *rep.range;
    out += fmt::format(
        "Calibrated 80 % range of the peak: {} - {} GiB (regime {}{}, {} runs with a published "
        "peak)\n",
        gib(r.peak_lo_bytes), gib(r.peak_hi_bytes), r.level,
        r.level == r.regime ? "" : " pooled from " + r.regime, r.runs);
  }
  if (rep.capacity_bytes > 0.0) {
    out += fmt::format("HBM capacity: {} GiB -> {}{}\n", gib(rep.capacity_bytes),
                       to_string(rep.verdict), verdict_reason(rep));
  } else {
    out += fmt::format("HBM capacity unknown -> no verdict\n");
  }
  if (rep.verdict == MemoryVerdict::kOom || rep.verdict == MemoryVerdict::kAtRisk) {
    std::string largest;
    for (MemoryComponent c : rep.largest_components) {
      largest += fmt::format("{}{} {} GiB", largest.empty() ? "" : ", ", to_string(c),
                             gib(peak.point[static_cast<std::size_t>(c)]));
    }
    out += fmt::format("Largest components: {}\n", largest);
    if (!rep.remedies.empty()) out += fmt::format("What would change it (re-projected):\n");
    std::size_t width = 0;
    for (const MemoryRemedy& m : rep.remedies) width = std::max(width, m.change.size());
    for (const MemoryRemedy& m : rep.remedies) {
      out += fmt::format("  {:<{}}  peak {:>8} GiB (upper {:>8}) -> {}\n", m.change, width,
                         gib(m.peak_point_bytes), gib(m.peak_upper_bytes), to_string(m.verdict));
    }
  }
  if (!rep.notes.empty()) {
    out += fmt::format("Assumptions:\n");
    for (const std::string& n : rep.notes) out += fmt::format("  - {}\n", n);
  }
  out += defaults_text(job, all_defaults);
  for (const std::string& w : job.warnings) out += fmt::format("  warning: {}\n", w);
  return out;
}

Json components_json(const ComponentBytes& c) {
  Json j = Json::object();
  for (int i = 0; i < kNumMemoryComponents; ++i) {
    j[std::string(to_string(static_cast<MemoryComponent>(i)))] = c[static_cast<std::size_t>(i)];
  }
  return j;
}

Json moment_json(const PeakMoment& m) {
  return {{"action", m.action},
          {"phase", m.phase},
          {"chunk", m.chunk},
          {"microbatch", m.microbatch},
          {"temporary", m.temporary},
          {"held_bytes", m.held_bytes},
          {"temporary_bytes", m.temporary_bytes}};
}

Json report_json(const JobSpec& job, const MemoryReport& rep) {
  Json j;
  j["schema_version"] = MemoryReport::kSchemaVersion;
  j["kind"] = "memory";
  j["source"] = job.source;
  j["model"] = job.model.name;
  j["units"] = "bytes";
  j["parallel"] = report_detail::parallel_json(job);
  j["schedule"] = std::string(to_string(rep.schedule));
  j["num_microbatches"] = rep.num_microbatches;
  j["tokens_per_microbatch"] = rep.tokens_per_microbatch;
  Json ranks = Json::array();
  for (const RankMemory& r : rep.ranks) {
    Json rj;
    rj["pp_rank"] = r.pp_rank;
    rj["virtual_stages"] = r.virtual_stages;
    rj["num_layers"] = r.num_layers;
    rj["has_embedding"] = r.has_embedding;
    rj["has_output"] = r.has_output;
    rj["mtp_layers"] = r.mtp_layers;
    rj["params"] = {{"dense", r.params.dense_params},
                    {"dense_gemm", r.params.dense_gemm_params},
                    {"expert", r.params.expert_params},
                    {"largest_unit", r.params.largest_unit_params}};
    rj["in_flight"] = {{"per_chunk", r.in_flight.per_chunk},
                       {"w_only", r.in_flight.w_only},
                       {"w_only_per_chunk", r.in_flight.w_only_per_chunk}};
    rj["activation_per_microbatch_bytes"] = r.activation_per_microbatch_bytes;
    rj["activation_per_chunk_bytes"] = r.activation_per_chunk_bytes;
    rj["w_only_per_chunk_bytes"] = r.w_only_per_chunk_bytes;
    rj["point_bytes"] = components_json(r.point);
    rj["upper_bytes"] = components_json(r.upper);
    rj["total_point_bytes"] = r.total_point_bytes;
    rj["total_upper_bytes"] = r.total_upper_bytes;
    rj["allocator_point_bytes"] = r.allocator_point_bytes;
    rj["allocator_upper_bytes"] = r.allocator_upper_bytes;
    rj["communicators"] = r.communicators;
    rj["transient_source"] = r.transient_source;
    rj["peak_allocated_bytes"] = r.peak_allocated_bytes;
    rj["peak_reserved_bytes"] = r.allocator_point_bytes;
    rj["allocator_excess_bytes"] = r.allocator_excess_bytes;
    rj["allocator_segments"] = r.allocator_segments;
    rj["moment"] = moment_json(r.moment);
    rj["timeline_bytes"] = r.timeline_bytes;
    ranks.push_back(std::move(rj));
  }
  j["ranks"] = std::move(ranks);
  // One representative layer's saved set (first layer; first MoE layer if any).
  Json layers = Json::array();
  for (std::size_t i = 0; i < job.model.layers.size(); ++i) {
    if (i > 0 && !(job.model.layers[i].is_moe && !job.model.layers[i - 1].is_moe)) continue;
    const LayerActivation a = layer_activation(job, job.model.layers[i]);
    layers.push_back({{"layer", i},
                      {"is_moe", job.model.layers[i].is_moe},
                      {"norms_bytes", a.norms_bytes},
                      {"attention_bytes", a.attention_bytes},
                      {"core_attn_bytes", a.core_attn_bytes},
                      {"mlp_bytes", a.mlp_bytes},
                      {"moe_bytes", a.moe_bytes},
                      {"shared_expert_bytes", a.shared_expert_bytes},
                      {"dropout_mask_bytes", a.dropout_mask_bytes},
                      {"total_bytes", a.total_bytes},
                      {"input_bytes", a.input_bytes},
                      {"w_retained_bytes", a.w_retained_bytes},
                      {"largest_temporary_bytes", a.largest_temporary_bytes},
                      {"cuda_graph_input_bytes", a.cuda_graph_input_bytes}});
  }
  j["layer_activations_per_microbatch"] = std::move(layers);
  j["peak"] = {{"rank", rep.peak_rank},
               {"upper_rank", rep.peak_upper_rank},
               {"point_bytes", rep.peak_point_bytes},
               {"upper_bytes", rep.peak_upper_bytes}};
  if (!rep.ranks.empty()) {
    const RankMemory& pk = rep.ranks[static_cast<std::size_t>(rep.peak_rank)];
    j["peak"]["allocated_bytes"] = pk.peak_allocated_bytes;
    j["peak"]["reserved_bytes"] = pk.allocator_point_bytes;
    j["peak"]["moment"] = moment_json(pk.moment);
    j["peak_allocated_gib"] = pk.peak_allocated_bytes / kGiB;
    j["peak_reserved_gib"] = pk.allocator_point_bytes / kGiB;
  }
  j["allocator"] = {{"kind", std::string(to_string(rep.allocator))},
                    {"replayed", rep.allocator_replayed}};
  j["capacity_bytes"] = rep.capacity_bytes;
  j["verdict"] = std::string(to_string(rep.verdict));
  if (rep.range) {
    const MemoryRange& r = *rep.range;
    j["peak_memory_gib_interval"] = {r.peak_lo_bytes / kGiB, r.peak_hi_bytes / kGiB};
    j["peak_bytes_interval"] = {r.peak_lo_bytes, r.peak_hi_bytes};
    j["regime"] = {{"key", r.regime}, {"level", r.level}, {"runs", r.runs}};
    j["verdict_without_range"] = std::string(to_string(r.model_verdict));
  }
  Json largest = Json::array();
  for (MemoryComponent c : rep.largest_components) largest.push_back(std::string(to_string(c)));
  j["largest_components"] = std::move(largest);
  Json remedies = Json::array();
  for (const MemoryRemedy& m : rep.remedies) {
    remedies.push_back({{"change", m.change},
                        {"peak_point_bytes", m.peak_point_bytes},
                        {"peak_upper_bytes", m.peak_upper_bytes},
                        {"verdict", std::string(to_string(m.verdict))}});
  }
  j["remedies"] = std::move(remedies);
  Json sources = Json::object();
  for (int i = 0; i < kNumMemoryComponents; ++i) {
    sources[std::string(to_string(static_cast<MemoryComponent>(i)))] =
        rep.sources[static_cast<std::size_t>(i)];
  }
  j["sources"] = std::move(sources);
  if (rep.has_recsys) j["recsys"] = report_detail::recsys_memory_json(rep);
  j["notes"] = rep.notes;
  j["defaults"] = report_detail::defaults_json(job);
  j["warnings"] = job.warnings;
  return j;
}

}  // namespace

std::string memory_summary_text(const JobSpec& job, const MemoryReport& rep, bool all_defaults) {
  return summary_text(job, rep, all_defaults);
}

std::string memory_json(const JobSpec& job, const MemoryReport& rep, int indent) {
  return report_json(job, rep).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector
