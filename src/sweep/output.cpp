// CSV and JSON renderings of a sweep: every projected candidate, ranked.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "projector/job/spec.h"
#include "projector/sweep/sweep.h"

namespace projector::sweep {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

nlohmann::json candidate_json(const Candidate& c, bool sequence_parallel) {
  return {{"tp", c.tp},
          {"pp", c.pp},
          {"vpp", c.vpp},
          {"cp", c.cp},
          {"ep", c.ep},
          {"etp", c.etp},
          {"dp", c.dp},
          {"expert_dp", c.expert_dp},
          {"mbs", c.mbs},
          {"schedule", std::string(to_string(c.schedule))},
          {"recompute", to_string(c.recompute)},
          {"sharding", std::string(to_string(c.sharding))},
          {"sequence_parallel", sequence_parallel},
          {"ddp_bucket_size_bytes", c.bucket_bytes},
          {"dp_replicate", c.dp_replicate}};
}

}  // namespace

void write_csv(std::ostream& out, const Result& r) {
  out << "rank,index,tp,pp,vpp,cp,ep,etp,dp,expert_dp,mbs,microbatches,schedule,recompute,"
         "sharding,sequence_parallel,ddp_bucket_size_bytes,iteration_s,tokens_per_s_per_gpu,mfu,"
         "peak_point_gib,peak_upper_gib,bubble_fraction,exposed_tp_s,exposed_cp_s,exposed_ep_s,"
         "exposed_pp_s,exposed_dp_s,pareto,dp_replicate\n";
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Entry& e = r.ranked[i];
    const Candidate& c = e.candidate;
    out << fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.6f},{:.6f},"
        "{:.6g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{},{}\n",
        i + 1, e.index, c.tp, c.pp, c.vpp, c.cp, c.ep, c.etp, c.dp, c.expert_dp, c.mbs,
        e.num_microbatches, to_string(c.schedule), to_string(c.recompute), to_string(c.sharding),
        e.sequence_parallel ? 1 : 0, c.bucket_bytes, e.iteration_s, e.tokens_per_s_per_gpu, e.mfu,
        e.peak_point_bytes / kGiB, e.peak_upper_bytes / kGiB, e.bubble_fraction, e.exposed.tp_s,
        e.exposed.cp_s, e.exposed.ep_s, e.exposed.pp_s, e.exposed.dp_s, e.pareto ? 1 : 0,
        c.dp_replicate);
  }
}

namespace {

nlohmann::json interval_or_null(const TrainingPlan& p, const PlanFigure& f) {
  return p.has_range ? nlohmann::json{f.lo, f.hi} : nlohmann::json(nullptr);
}

// A candidate's --train-tokens figures (docs/json-schema.md "sweep --json").
nlohmann::json plan_row_json(const TrainingPlan& p) {
  const bool cost = p.gpu_hour_cost_usd > 0.0;
  const bool power = p.board_power_w > 0.0;
  return {{"days", p.days.value},
          {"days_interval", interval_or_null(p, p.days)},
          {"gpu_hours", p.gpu_hours.value},
          {"gpu_hours_interval", interval_or_null(p, p.gpu_hours)},
          {"cost_usd", cost ? nlohmann::json(p.cost_usd.value) : nlohmann::json(nullptr)},
          {"cost_usd_interval", cost ? interval_or_null(p, p.cost_usd) : nlohmann::json(nullptr)},
          {"energy_mwh", power ? nlohmann::json(p.energy_mwh.value) : nlohmann::json(nullptr)}};
}

}  // namespace

std::string to_json(const Result& r, const JobSpec& base) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["model"] = base.model.name;
  j["source"] = base.source;
  j["accelerator"] = base.cluster.accelerator.name;
  j["nodes"] = r.nodes;
  j["gpus_per_node"] = base.cluster.gpus_per_node;
  j["world_size"] = r.world;
  j["global_batch_size"] = base.runtime.global_batch_size;
  j["seq_length"] = base.runtime.seq_length;
  j["objective"] = std::string(to_string(r.objective));
  j["train_tokens"] = r.plan.train_tokens > 0.0 ? nlohmann::json(r.plan.train_tokens) : nullptr;
  j["gpu_hour_cost_usd"] =
      r.plan.gpu_hour_cost_usd > 0.0 ? nlohmann::json(r.plan.gpu_hour_cost_usd) : nullptr;
  j["hbm_bytes"] = r.hbm_bytes;
  j["memory_limit_bytes"] = r.limit_bytes;
  j["pruned_on"] = r.pruned_on_upper_bound ? "upper_bound" : "point_estimate";
  nlohmann::json by_rule = nlohmann::json::object();
  for (int i = 1; i < kNumRules; ++i) {
    if (r.illegal_by_rule[static_cast<std::size_t>(i)] > 0) {
      by_rule[std::string(to_string(static_cast<Rule>(i)))] =
          r.illegal_by_rule[static_cast<std::size_t>(i)];
    }
  }
  j["counts"] = {{"enumerated", r.enumerated},      {"illegal", r.illegal},
                 {"illegal_by_rule", by_rule},      {"oom", r.oom},
                 {"projected", r.projected},        {"failed", r.failed},
                 {"not_evaluated", r.not_evaluated}};
  j["stopped"] = r.stopped;
  j["elapsed_s"] = r.elapsed_s;
  if (r.smallest_overshoot.any) {
    j["smallest_overshoot"] = {
        {"candidate",
         candidate_json(r.smallest_overshoot.candidate, r.smallest_overshoot.sequence_parallel)},
        {"peak_bytes", r.smallest_overshoot.peak_bytes},
        {"over_bytes", r.smallest_overshoot.over_bytes}};
  }
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Entry& e = r.ranked[i];
    rows.push_back(
        {{"rank", i + 1},
         {"index", e.index},
         {"layout", candidate_json(e.candidate, e.sequence_parallel)},
         {"microbatches", e.num_microbatches},
         {"iteration_s", e.iteration_s},
         {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
         {"tokens_per_s_per_gpu_interval",
          e.tokens_lo > 0.0 ? nlohmann::json{e.tokens_lo, e.tokens_hi} : nlohmann::json(nullptr)},
         {"mfu", e.mfu},
         {"peak_point_bytes", e.peak_point_bytes},
         {"peak_upper_bytes", e.peak_upper_bytes},
         {"bubble_fraction", e.bubble_fraction},
         {"exposed_s",
          {{"tp", e.exposed.tp_s},
           {"cp", e.exposed.cp_s},
           {"ep", e.exposed.ep_s},
           {"pp", e.exposed.pp_s},
           {"dp", e.exposed.dp_s}}},
         {"pareto", e.pareto}});
    if (r.plan.train_tokens > 0.0)
      rows.back()["time_to_train"] = plan_row_json(entry_plan(e, r, base));
  }
  j["candidates"] = std::move(rows);
  nlohmann::json front = nlohmann::json::array();
  for (const std::size_t i : r.pareto) front.push_back(i + 1);
  j["pareto_ranks"] = std::move(front);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace projector::sweep
