// The recommendation family's runtime in the job builder (job/recsys_plan.h): the stated values,
// else the framework profile's `recsys:` block (each recorded), then the sharding plan.
#include <fmt/format.h>

#include "projector/job/recsys_plan.h"
#include "projector/job/spec.h"
#include "projector/util/error.h"

namespace projector {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

class Resolver {
 public:
  Resolver(const FrameworkProfile& profile, std::vector<AppliedDefault>& defaults)
      : p_(profile), defaults_(defaults) {}

  double number(const std::string& key, double scale = 1.0) {
    const std::optional<double> v = p_.recsys.number(key);
    if (!v) missing(key);
    return *v * scale;
  }
  // A profile value applied because the config did not state it: recorded.
  std::string text_default(const std::string& key, const std::string& as) {
    const RecsysProfileValue* v = p_.recsys.find(key);
    if (v == nullptr) missing(key);
    defaults_.push_back({as, v->text, v->source, p_.name});
    return v->text;
  }
  [[noreturn]] void missing(const std::string& key) const {
    throw InputError({p_.file, 0, 0}, "recsys." + key,
                     fmt::format("the framework profile '{}' has no recsys value '{}' (needed for "
                                 "recommendation models)",
                                 p_.name, key));
  }
  const FrameworkProfile& p_;
  std::vector<AppliedDefault>& defaults_;
};

RecsysOptimizer optimizer(Resolver& r, const std::optional<RecsysOptimizer>& stated,
                          const std::string& key, const std::string& as) {
  if (stated) return *stated;
  const std::string t = r.text_default(key, as);
  const std::optional<RecsysOptimizer> o = parse_recsys_optimizer(t);
  if (!o) r.missing(key);
  return *o;
}

PlannerSettings planner_settings(Resolver& r, const RecsysDraft& d) {
  PlannerSettings ps;
  ps.hbm_cap_bytes = d.planner_hbm_cap_bytes.value_or(r.number("planner_hbm_cap_gib", kGiB));
  ps.reservation_fraction = d.planner_reservation.value_or(r.number("planner_reservation"));
  ps.dense_multiplier = r.number("planner_dense_multiplier");
  ps.kjt_copies = r.number("planner_kjt_copies");
  ps.pooling_factor = r.number("planner_pooling_factor");
  ps.hbm_bw = r.number("planner_hbm_gib_per_s", kGiB);
  ps.hbm_to_ddr_bw = r.number("planner_hbm_to_ddr_gib_per_s", kGiB);
  ps.intra_node_bw = r.number("planner_intra_node_gib_per_s", kGiB);
  ps.inter_node_bw = r.number("planner_inter_node_gib_per_s", kGiB);
  ps.uvm_caching_ratio = r.number("planner_uvm_caching_ratio");
  ps.bwd_compute_multiplier = r.number("planner_bwd_multiplier");
  ps.batched_copy_factor = r.number("planner_batched_copy_factor");
  ps.dp_elementwise_factor = r.number("planner_dp_elementwise_factor");
  ps.min_cw_dim = static_cast<int>(r.number("planner_min_cw_dim"));
  return ps;
}

void record_plan(const JobSpec& job, std::vector<AppliedDefault>& defaults) {
  const EmbeddingPlan& plan = job.parallel.embedding_plan;
  const PlannerSettings& ps = job.runtime.recsys.planner;
  std::string summary = describe_plan(job);
  while (!summary.empty() && summary.back() == '\n') summary.pop_back();
  for (char& c : summary) c = c == '\n' ? ';' : c;
  const std::string why =
      plan.planned
          ? fmt::format(
                "TorchRec planner reproduction: {} of {} proposals, the costliest rank at "
                "{:.3f} ms by the planner's estimate, {:.1f} GiB of tables per rank allowed "
                "({:.0f} GiB hbm_cap x (1 - {}) less the dense and input reservation)",
                plan.proposer, plan.proposals_evaluated, plan.max_rank_cost_ms,
                plan.rank_budget_bytes / kGiB, ps.hbm_cap_bytes / kGiB, ps.reservation_fraction)
          : fmt::format(
                "no plan fits the planner's {:.1f} GiB per rank (TorchRec raises a "
                "PlannerError); the least storage per rank is projected",
                plan.rank_budget_bytes / kGiB);
  defaults.push_back({"embedding_sharding", summary, why, ""});
}

}  // namespace

void resolve_recsys(const RecsysDraft& d, const FrameworkProfile& profile, JobSpec& job,
                    std::vector<AppliedDefault>& defaults) {
  Resolver r(profile, defaults);
  RecsysRuntime& rt = job.runtime.recsys;
  const std::string v4 = d.primus_v4 ? "v4_" : "";
  rt.embedding_optimizer =
      optimizer(r, d.embedding_optimizer, v4 + "embedding_optimizer", "embedding_optimizer");
  rt.dense_optimizer = optimizer(r, d.dense_optimizer, v4 + "dense_optimizer", "dense_optimizer");
  if (d.dense_dtype) {
    rt.dense_dtype = *d.dense_dtype;
  } else {
    const std::optional<Dtype> dt = parse_dtype(r.text_default(v4 + "dense_dtype", "dense_dtype"));
    if (!dt) r.missing(v4 + "dense_dtype");
    rt.dense_dtype = *dt;
  }
  if (d.pipelined_input) {
    rt.pipelined_input = *d.pipelined_input;
  } else {
    const std::string t = r.p_.recsys.text("pipelined_input");
    if (t != "true" && t != "false") r.missing("pipelined_input");
    rt.pipelined_input = t == "true";
  }
  rt.index_bytes = static_cast<int>(r.number("index_bytes"));
  rt.host_step_s = r.number("host_step_ms", 1e-3);
  rt.host_per_sample_s = r.number("host_per_sample_us", 1e-6);
  rt.uvm_cache_hit_rate = r.number("uvm_cache_hit_rate");
  rt.host_link_bw = r.number("host_link_gib_per_s", kGiB);
  rt.planner = planner_settings(r, d);
  if (d.primus_v4 && !d.planner_hbm_cap_bytes && job.cluster.accelerator.hbm_bytes > 0.0) {
    // Primus' DLRM-v4 projection keeps the tables in the device's HBM, not TorchRec's 32 GiB.
    rt.planner.hbm_cap_bytes = job.cluster.accelerator.hbm_bytes;
    defaults.push_back({"planner_hbm_cap_gib", fmt::format("{:g}", rt.planner.hbm_cap_bytes / kGiB),
                        "Primus' DLRM-v4 keys: the tables are planned against the device's HBM "
                        "(PRD sparse_embedding.py, embedding_hbm_fraction)",
                        ""});
  }
  if (job.parallel.ddp_bucket_size_bytes == 0) {
    job.parallel.ddp_bucket_size_bytes =
        static_cast<std::int64_t>(r.number("ddp_bucket_mib", 1024.0 * 1024.0));
  }
  job.parallel.embedding_plan = plan_embeddings(job);
  record_plan(job, defaults);
}

}  // namespace projector
