// Per-rank memory of a recommendation job (TorchRec DLRM): the embedding shards the plan puts on
// each rank with their fused-optimizer state (model/recsys_ranks.h), the replicated dense part
// (DDP: weights, gradients as bucket views, the dense optimizer's state), the saved activations of
// one local batch, the input batches TrainPipelineSparseDist keeps in flight, the largest
// transient (lookup outputs and the all-to-all buffers, the TBE backward's sort), and the
// accelerator's overheads.
#include "memory/recsys.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "projector/job/recsys_plan.h"
#include "projector/job/recsys_ranks.h"
#include "projector/job/spec.h"
#include "projector/model/recsys_accounting.h"

namespace projector::memory_detail {
namespace {

constexpr std::size_t idx(MemoryComponent c) {
  return static_cast<std::size_t>(c);
}
constexpr int kPipelineBatches = 3;  // TR4: TrainPipelineSparseDist runs three stages

double dense_act_bytes(const JobSpec& job) {
  return bytes_per_element(job.runtime.recsys.dense_dtype);
}

// Saved activations of one sample through the dense part: every GEMM's inputs and outputs, the
// pooled embeddings the output dist delivers (fp32), the interaction's concatenation and the DCN
// cross terms. `padded`: HSTU blocks at their padded length (the upper bound).
double dense_activation_per_sample(const JobSpec& job, bool padded) {
  const RecommendationSpec& m = job.model.recommendation;
  const double ab = dense_act_bytes(job);
  const double f = m.num_sparse_features();
  const double d = m.embedding_dim();
  double bytes = f * d * 4.0 + (f + 1.0) * d * ab + 4.0;  // pooled rows, concat, label
  const double s_eff = static_cast<double>(m.hstu.effective_seq_len());
  const double s_pad = m.hstu.max_seq_len;
  for (const RecsysGemm& g : recsys_dense_gemms(m)) {
    double rows = static_cast<double>(g.m);
    if (g.block == "hstu" && padded && s_eff > 0.0) rows = s_pad;
    const double in = rows * g.k * (g.batched ? 2.0 : 1.0);
    bytes += g.repeat * ab * (in + rows * g.n);
  }
  if (m.interaction == FeatureInteraction::kDcn) {
    bytes += m.dcn_num_layers * ab * static_cast<double>(recsys_interaction_width(m));
  }
  return bytes;
}

// Dense parameters: fp32 weights and gradients (bucket views) for an fp32 / tf32 model; a bf16
// model keeps bf16 weights and gradients plus fp32 masters.
struct DenseBytes {
  double weights = 0.0, grads = 0.0, master = 0.0, state = 0.0;
};
DenseBytes dense_bytes(const JobSpec& job, double extra_params) {
  const RecsysRuntime& rt = job.runtime.recsys;
  const double params =
      static_cast<double>(recsys_params(job.model.recommendation).dense()) + extra_params;
  const double wb = bytes_per_element(rt.dense_dtype);
  DenseBytes b;
  b.weights = params * wb;
  b.grads = params * wb;
  b.master = wb < 4.0 ? params * 4.0 : 0.0;
  const int one = 1;
  b.state = params * optimizer_state_bytes_per_row(rt.dense_optimizer, one);
  return b;
}

RankMemory rank_memory(const JobSpec& job, const RecsysRankLoad& load, double act_point,
                       double act_upper, RecsysRankMemory& detail) {
  const AcceleratorSpec::Calibration& cal = job.cluster.accelerator.calibration;
  const RecommendationSpec& m = job.model.recommendation;
  // Data-parallel tables are dense parameters to DDP and the dense optimizer.
  const double dp_params =
      load.dp_table_bytes /
      std::max(1.0, bytes_per_element(m.tables.empty() ? Dtype::kFp32 : m.tables[0].dtype));
  const DenseBytes dense = dense_bytes(job, dp_params);
  const double b = job.runtime.micro_batch_size;
  const double pooled_recv = b * m.num_sparse_features() * m.embedding_dim() * 4.0;
  const double fwd_tmp = load.output_bytes + pooled_recv;
  const double bwd_tmp = load.output_bytes + pooled_recv + load.lookups * 40.0;  // sort buffers
  RankMemory rm;
  rm.pp_rank = load.rank;
  rm.params.dense_params = static_cast<double>(recsys_params(m).dense()) + dp_params;
  ComponentBytes s{};
  s[idx(MemoryComponent::kWeights)] = load.table_hbm_bytes - load.dp_table_bytes + dense.weights;
  s[idx(MemoryComponent::kGradients)] = dense.grads;
  s[idx(MemoryComponent::kMasterWeights)] = dense.master;
  s[idx(MemoryComponent::kOptimizerStates)] =
      load.state_hbm_bytes + load.cache_aux_bytes + dense.state;
  s[idx(MemoryComponent::kTransient)] = std::max(fwd_tmp, bwd_tmp);
  s[idx(MemoryComponent::kWorkspace)] = cal.workspace_bytes.value;
  s[idx(MemoryComponent::kRuntimeContext)] = cal.runtime_context_bytes.value;
  rm.communicators = load.twrw_rs_bytes > 0.0 ? 3 : 1;  // world; TWRW adds intra / cross node
  s[idx(MemoryComponent::kCommBuffers)] = cal.comm_buffer_bytes_per_group.value * rm.communicators;
  rm.point = s;
  rm.upper = s;
  rm.point[idx(MemoryComponent::kActivations)] = act_point;
  rm.upper[idx(MemoryComponent::kActivations)] = act_upper;
  const double dynamic = s[idx(MemoryComponent::kTransient)];
  rm.point[idx(MemoryComponent::kFragmentation)] =
      cal.fragmentation_fraction.value * (act_point + dynamic);
  rm.upper[idx(MemoryComponent::kFragmentation)] =
      cal.fragmentation_upper_fraction.value * (act_upper + dynamic);
  for (double v : rm.point) rm.total_point_bytes += v;
  for (double v : rm.upper) rm.total_upper_bytes += v;
  const double outside =
      s[idx(MemoryComponent::kRuntimeContext)] + s[idx(MemoryComponent::kCommBuffers)];
  rm.allocator_point_bytes = rm.total_point_bytes - outside;
  rm.allocator_upper_bytes = rm.total_upper_bytes - outside;
  rm.activation_per_microbatch_bytes = act_point;
  rm.transient_source = fwd_tmp >= bwd_tmp ? "embedding lookup outputs and all-to-all buffers"
                                           : "embedding backward (outputs' gradients, sort)";
  detail.rank = load.rank;
  detail.shards = load.shards;
  detail.table_bytes = load.table_hbm_bytes;
  detail.table_state_bytes = load.state_hbm_bytes;
  detail.cache_aux_bytes = load.cache_aux_bytes;
  detail.dense_bytes =
      dense.weights + dense.grads + dense.master + dense.state - load.dp_table_bytes;
  detail.activation_bytes = act_point;
  detail.host_bytes = load.table_host_bytes + load.state_host_bytes;
  detail.total_bytes = rm.total_point_bytes;
  detail.buffer_bytes = detail.total_bytes - detail.table_bytes - detail.table_state_bytes -
                        detail.cache_aux_bytes - detail.dense_bytes - act_point;
  return rm;
}

}  // namespace

MemoryReport project_recsys_memory(const JobSpec& job, const MemoryOptions& /*options*/) {
  MemoryReport report;
  report.has_recsys = true;
  report.schedule = ScheduleKind::k1F1B;
  report.num_microbatches = job.num_microbatches();
  report.tokens_per_microbatch = job.runtime.micro_batch_size;
  const std::vector<RecsysRankLoad> loads = recsys_rank_loads(job);
  const double b = job.runtime.micro_batch_size;
  const double inputs = kPipelineBatches * recsys_input_batch_bytes(job);
  const double act_point = b * dense_activation_per_sample(job, false) + inputs;
  const double act_upper = b * dense_activation_per_sample(job, true) + inputs;
  std::vector<RankMemory> all;
  std::vector<RecsysRankMemory> details;
  for (const RecsysRankLoad& load : loads) {
    RecsysRankMemory d;
    const double kjt = load.input_recv_bytes;  // the next batch's distributed ids
    all.push_back(rank_memory(job, load, act_point + kjt, act_upper + kjt, d));
    details.push_back(d);
  }
  std::vector<std::size_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) {
    return all[a].total_point_bytes > all[c].total_point_bytes;
  });
  const bool every = static_cast<int>(all.size()) <= RecsysMemory::kAllRanksUpTo;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (!every && i != 0 && i + 1 != order.size()) continue;
    report.ranks.push_back(all[order[i]]);
    report.recsys.ranks.push_back(details[order[i]]);
  }
  RecsysMemory& rs = report.recsys;
  rs.world = static_cast<int>(loads.size());
  rs.planner_budget_bytes = job.parallel.embedding_plan.rank_budget_bytes;
  rs.planned = job.parallel.embedding_plan.planned;
  rs.plan = describe_plan(job);
  for (const RecsysRankMemory& d : details)
    rs.host_bytes_max = std::max(rs.host_bytes_max, d.host_bytes);
  report.peak_rank = 0;
  report.peak_upper_rank = 0;
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    if (report.ranks[i].total_upper_bytes >
        report.ranks[report.peak_upper_rank].total_upper_bytes) {
      report.peak_upper_rank = static_cast<int>(i);
    }
  }
  report.peak_point_bytes = report.ranks.front().total_point_bytes;
  report.peak_upper_bytes = report.ranks[report.peak_upper_rank].total_upper_bytes;
  report.capacity_bytes = job.cluster.accelerator.hbm_bytes;
  report.verdict =
      verdict_of(report.peak_point_bytes, report.peak_upper_bytes, report.capacity_bytes);
  if (!rs.planned && rs.planner_budget_bytes <= 0.0) {
    // The reservation (dense parameters and optimizer, input buffers) exceeds the HBM the planner
    // may use: TorchRec's topology has no storage left for any table.
    report.notes.push_back(fmt::format(
        "TorchRec's planner has no memory left for tables: its reservation for the dense part and "
        "the inputs exceeds the usable HBM by {:.1f} GiB per rank; the job would stop with a "
        "PlannerError; projected with the least storage per rank",
        -rs.planner_budget_bytes / (1024.0 * 1024.0 * 1024.0)));
  } else if (!rs.planned) {
    report.notes.push_back(fmt::format(
        "TorchRec's planner finds no plan within its {:.1f} GiB per rank: the job would stop "
        "with a PlannerError; projected with the least storage per rank",
        rs.planner_budget_bytes / (1024.0 * 1024.0 * 1024.0)));
  }
  return report;
}

}  // namespace projector::memory_detail
