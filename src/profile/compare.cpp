// Measured profile vs the cost models on the same ops: per cost class, the bench job's modelled
// time for the blocks and phases the trace shows, and the measured/model ratios the benchmark
// anchoring uses. Also the checks that the trace belongs to the job.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "projector/cost/cost_cache.h"
#include "projector/hardware/catalog.h"
#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/perf/perf.h"
#include "projector/profile/profile.h"
#include "projector/sweep/sweep.h"
#include "projector/util/error.h"
#include "projector/workload/workload.h"
#include "traced_ops.h"

namespace projector::profile {
namespace {

bool usable_ratio(double r) {
  return r >= kMinMeasuredRatio && r <= kMaxMeasuredRatio;
}

double ms(double s) {
  return s * 1e3;
}

int min_gpus(const ParallelSpec& p) {
  return p.tp * p.pp * (p.ep > 1 ? p.ep : p.cp);
}

// The communicator an op runs on, as perf prices it.
CommGroup group_of(const JobSpec& job, const Op& op) {
  if (op.collective == CollectiveKind::kSendRecv) {
    if (op.group == GroupKind::kPp) return job_group(job, GroupKind::kPpPeer);
    return make_group(2, job.parallel.tp,
                      collective_node_gpus(job.cluster.accelerator, job.cluster.network,
                                           job.cluster.gpus_per_node),
                      job.cluster.network.pod_size);
  }
  CommGroup g = job_group(job, op.group);
  g.node_aggregated = op.node_aggregated;
  g.node_forward_ratio = op.node_forward_ratio;
  return g;
}

bool op_class(const Op& op, CostClass& out) {
  switch (op.kind) {
    case OpKind::kGemm:
      out = CostClass::kGemm;
      return true;
    case OpKind::kGroupedGemm:
      out = CostClass::kGroupedGemm;
      return true;
    case OpKind::kAttention:
      out = op.phase == WorkPhase::kF || op.recompute ? CostClass::kAttentionFwd
                                                      : CostClass::kAttentionBwd;
      return true;
    case OpKind::kMemoryBound:
      out = cost_class(op.mem_class);
      return true;
    case OpKind::kCollective:
    case OpKind::kHostTransfer:
      break;
  }
  return false;
}

void check_device(const MeasuredProfile& p, const JobSpec& bench, const CompareOptions& o) {
  if (p.device.empty()) return;
  const std::string data_dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  const auto name = match_accelerator_name(p.device, data_dir);
  if (name && *name != bench.cluster.accelerator.name) {
    throw InputError({bench.source, 0, 0}, "--hardware",
                     fmt::format("the trace was recorded on '{}' (catalogue: {}) but the job runs "
                                 "on {}; pass --hardware {}",
                                 p.device, *name, bench.cluster.accelerator.name, *name));
  }
}

// Layers on the rank and the microbatches the traced step runs; throws when they cannot fit.
int microbatches_in_step(const MeasuredProfile& p, const JobSpec& bench, int layers) {
  const LayerStructure& ls = p.forward_layers.found ? p.forward_layers : p.backward_layers;
  if (!ls.found) {
    throw InputError({p.trace, 0, 0}, "traceEvents",
                     fmt::format("the trace shows no transformer layer (no attention kernel and "
                                 "no repeating block of kernels); it cannot be a step of {} ({} "
                                 "layers)",
                                 bench.source, bench.model.num_layers()));
  }
  const int max_mb = std::max(1, bench.num_microbatches());
  if (layers <= 0 || ls.repeats % layers != 0 || ls.repeats / layers > max_mb) {
    throw InputError(
        {bench.source, 0, 0}, "num_layers",
        fmt::format("the trace runs {} transformer layers per step (counted by {}) but "
                    "pipeline rank {} of the job has {} layers and {} microbatch(es) per "
                    "iteration: the trace is of another model or layout (--pp-rank picks the "
                    "rank)",
                    ls.repeats, ls.method, p.model.bench.pp_rank, layers, max_mb));
  }
  return ls.repeats / layers;
}

void check_hidden(const MeasuredProfile& p, const JobSpec& bench) {
  if (p.gemms.empty()) return;
  const std::int64_t h = bench.model.hidden_size;
  const std::int64_t tp = bench.parallel.tp;
  for (const GemmStat& g : p.gemms) {
    for (std::int64_t d : {g.m, g.n, g.k}) {
      if (d == h || d == h / tp) return;
    }
  }
  const GemmStat& g = p.gemms.front();
  throw InputError({bench.source, 0, 0}, "hidden_size",
                   fmt::format("no GEMM in the trace has the job's hidden size {} (the largest is "
                               "{} x {} x {}): the trace is of another model",
                               h, g.m, g.n, g.k));
}

bool has_output_head(const MeasuredProfile& p, const JobSpec& bench) {
  if (p.classes[static_cast<std::size_t>(KernelClass::kLoss)].kernels > 0.0) return true;
  const std::int64_t v = padded_vocab_size(bench.model, bench.parallel.tp) / bench.parallel.tp;
  for (const GemmStat& g : p.gemms) {
    if (g.n == v || g.m == v || g.n == bench.model.vocab_size || g.m == bench.model.vocab_size) {
      return true;
    }
  }
  return false;
}

struct ModelTimes {
  std::array<double, kNumCostClasses> cls{};
  std::vector<CollectiveRatio> coll;
  void add_collective(CollectiveKind k, const CommGroup& g, double t_ms) {
    for (CollectiveRatio& c : coll) {
      if (c.kind == k && c.group == g) {
        c.model_ms += t_ms;
        return;
      }
    }
    coll.push_back({k, g, 0.0, t_ms, 0.0});
  }
};

// The model's time for the blocks and phases the trace shows, per step.
ModelTimes model_times(const MeasuredProfile& p, const JobSpec& bench, const PerfReport& rep,
                       CostCache& cache) {
  ModelTimes mt;
  const ModelComparison& mc = p.model;
  const int r = mc.bench.pp_rank;
  detail::for_each_traced_op(p, rep, [&](const PricedOp& po) {
    const double t = ms(po.time_s) * po.repeat * mc.microbatches_in_step;
    CostClass c;
    if (op_class(po.op, c)) {
      mt.cls[static_cast<std::size_t>(c)] += t;
    } else if (po.op.group_size > 1) {
      mt.add_collective(po.op.collective, group_of(bench, po.op), t);
    }
  });
  if (p.has_optimizer) {
    const IterationWork& it = rep.workload.ranks[static_cast<std::size_t>(r)].iteration;
    mt.cls[static_cast<std::size_t>(CostClass::kOptimizer)] +=
        ms(rep.optimizer_s_per_rank[static_cast<std::size_t>(r)]);
    for (const Op& op : it.grad_sync) {
      const CommGroup g = group_of(bench, op);
      mt.add_collective(op.collective, g, ms(cache.collective(op.collective, op.bytes, g).time_s));
    }
  }
  return mt;
}

void fill_layout(ModelComparison& mc, const JobSpec& b, int pp_rank, int layers) {
  BenchLayout& l = mc.bench;
  l.config = b.source;
  l.accelerator = b.cluster.accelerator.name;
  const ParallelSpec& p = b.parallel;
  l.tp = p.tp, l.pp = p.pp, l.vpp = p.vpp, l.cp = p.cp, l.ep = p.ep, l.etp = p.etp, l.dp = b.dp();
  l.nodes = b.cluster.nodes;
  l.gpus_per_node = b.cluster.gpus_per_node;
  l.world = b.cluster.world_size();
  l.mbs = b.runtime.micro_batch_size;
  l.seq = b.runtime.seq_length;
  l.gbs = b.runtime.global_batch_size;
  l.num_layers = b.model.num_layers();
  l.hidden = static_cast<int>(b.model.hidden_size);
  for (const LayerSpec& ls : b.model.layers)
    l.num_experts = std::max(l.num_experts, ls.moe.num_experts);
  l.pp_rank = pp_rank;
  l.layers_on_rank = layers;
  l.microbatches = b.num_microbatches();
}

int layers_on_rank(const JobSpec& b, int r) {
  int n = 0;
  for (int c = 0; c < b.parallel.vpp; ++c) n += b.parallel.stage(r, c).num_layers;
  return n;
}

void add_fitted(ModelComparison& mc, const MeasuredProfile& p, const JobSpec& b) {
  const AcceleratorSpec::Calibration& cal = b.cluster.accelerator.calibration;
  const std::string src = fmt::format(
      "fitted by `projector profile` from {} (kernel model / measured kernel time over the "
      "trace's kernels of the class)",
      p.trace);
  auto fit = [&](CostClass c, const std::string& key, double current) {
    const double meas = mc.measured_kernel_ms[static_cast<std::size_t>(c)];
    const double model = mc.model_ms[static_cast<std::size_t>(c)];
    if (meas <= 0.0 || model <= 0.0 || current <= 0.0) return;
    mc.fitted.push_back({key, current, current * model / meas, src});
  };
  const Dtype g = b.runtime.precision.gemm_dtype();
  fit(CostClass::kGemm, fmt::format("calibration.gemm_peak_fraction.{}", to_string(g)),
      cal.gemm_peak_fraction[static_cast<std::size_t>(g)]);
  const bool fa2 = b.runtime.attention_kernel == AttentionKernel::kFa2 &&
                   cal.attention_fa2_fwd_fraction.value > 0.0;
  fit(CostClass::kAttentionFwd,
      fa2 ? "calibration.attention_fa2_fwd_fraction" : "calibration.attention_fwd_fraction",
      fa2 ? cal.attention_fa2_fwd_fraction.value : cal.attention_fwd_fraction.value);
  fit(CostClass::kAttentionBwd,
      fa2 ? "calibration.attention_fa2_bwd_fraction" : "calibration.attention_bwd_fraction",
      fa2 ? cal.attention_fa2_bwd_fraction.value : cal.attention_bwd_fraction.value);
  fit(CostClass::kElementwise, "calibration.hbm_elementwise_fraction",
      cal.hbm_elementwise_fraction.value);
  fit(CostClass::kPermute, "calibration.hbm_permute_fraction", cal.hbm_permute_fraction.value);
  fit(CostClass::kOptimizer, "calibration.hbm_optimizer_fraction",
      cal.hbm_optimizer_fraction.value);
  fit(CostClass::kLoss, "calibration.hbm_loss_fraction", cal.hbm_loss_fraction.value);
}

// Measured per cost class (wall time for the ratios, kernel time for fitted efficiencies), the
// collectives matched to the model's groups, and what no modelled op stands for.
void measure_classes(MeasuredProfile& p, ModelTimes& mt) {
  ModelComparison& mc = p.model;
  for (int k = 0; k < kNumKernelClasses; ++k) {
    const auto kc = static_cast<KernelClass>(k);
    const ClassTime& ct = p.classes[static_cast<std::size_t>(k)];
    if (ct.kernels <= 0.0) continue;
    CostClass c;
    if (cost_class_of(kc, c)) {
      mc.measured_ms[static_cast<std::size_t>(c)] += ct.wall_ms;
      mc.measured_kernel_ms[static_cast<std::size_t>(c)] += ct.kernel_ms;
    } else if (is_collective(kc)) {
      bool matched = false;
      for (CollectiveRatio& cr : mt.coll) {
        if (cr.kind == collective_kind(kc) && cr.model_ms > 0.0 && !matched) {
          cr.measured_ms += ct.kernel_ms;
          matched = true;
        }
      }
      if (!matched) mc.unmapped_ms += ct.wall_ms;
    } else {
      mc.unmapped_ms += ct.wall_ms;
    }
  }
}

}  // namespace

JobSpec reduce_to_bench(const JobSpec& target, int benchmark_gpus,
                        std::vector<std::string>& reductions) {
  const ParallelSpec& t = target.parallel;
  const int n = benchmark_gpus;
  if (n <= 0) return target;
  sweep::Candidate c;
  c.tp = t.tp, c.pp = t.pp, c.vpp = t.vpp, c.cp = t.cp, c.ep = t.ep, c.etp = t.etp;
  c.mbs = target.runtime.micro_batch_size;
  c.schedule = target.runtime.schedule;
  c.bucket_bytes = t.ddp_bucket_size_bytes;
  if (min_gpus(t) > n) {
    c.pp = 1;
    c.vpp = 1;
    if (t.pp > 1) {
      reductions.push_back(fmt::format("PP {} -> 1 (flattened; the pipeline is simulated)", t.pp));
    }
    if (c.tp * (c.ep > 1 ? c.ep : c.cp) > n && c.ep > 1) {
      c.ep = std::min(c.ep, std::max(1, n / (c.tp * c.cp)));
      reductions.push_back(fmt::format("EP {} -> {} (experts per rank kept)", t.ep, c.ep));
    }
    if (c.tp * (c.ep > 1 ? c.ep : c.cp) > n) {
      const int m = std::max(1, n / (c.ep * c.cp));
      for (int cand : {m, m / 2, 1}) {
        if (cand >= 1 && t.tp % cand == 0) {
          c.tp = cand;
          break;
        }
      }
      reductions.push_back(fmt::format("TP {} -> {}", t.tp, c.tp));
    }
    if (c.tp * c.pp * (c.ep > 1 ? c.ep : c.cp) > n) {
      throw InputError(
          {target.source, 0, 0}, "--benchmark-gpus",
          fmt::format("cannot reduce TP {} x EP {} x CP {} to {} GPUs", t.tp, t.ep, t.cp, n));
    }
  }
  c.etp = std::min(c.etp, c.tp);
  JobSpec b = target;
  b.cluster.gpus_per_node = std::min(n, target.cluster.gpus_per_node);
  const int nodes = (n + b.cluster.gpus_per_node - 1) / b.cluster.gpus_per_node;
  sweep::apply_candidate(c, nodes, b);
  // apply_candidate also sets the policies a candidate carries; keep the job's.
  b.runtime.recompute = target.runtime.recompute;
  b.parallel.distributed_optimizer = t.distributed_optimizer;
  b.parallel.fsdp = t.fsdp;
  b.parallel.sequence_parallel = t.sequence_parallel && c.tp > 1;
  if (c.ep != t.ep) {
    for (LayerSpec& l : b.model.layers) {
      if (!l.is_moe) continue;
      const int per_rank = (l.moe.num_experts + t.ep - 1) / t.ep;
      l.moe.num_experts = std::max(c.ep * per_rank, l.moe.topk);
    }
  }
  if (b.cluster.world_size() != target.cluster.world_size()) {
    reductions.push_back(fmt::format("{} GPUs -> {} (DP {} -> {})", target.cluster.world_size(),
                                     b.cluster.world_size(), target.dp(), b.dp()));
  }
  return b;
}

void compare_with_job(MeasuredProfile& p, const JobSpec& bench, const CompareOptions& o) {
  if (o.pp_rank < 0 || o.pp_rank >= bench.parallel.pp) {
    throw InputError(
        {}, "--pp-rank",
        fmt::format("{} is not a pipeline rank of the job (PP {})", o.pp_rank, bench.parallel.pp));
  }
  check_device(p, bench, o);
  ModelComparison& mc = p.model;
  const std::vector<std::string> reductions = mc.bench.reductions;
  const int layers = layers_on_rank(bench, o.pp_rank);
  fill_layout(mc, bench, o.pp_rank, layers);
  mc.bench.reductions = reductions;
  mc.microbatches_in_step = microbatches_in_step(p, bench, layers);
  check_hidden(p, bench);
  const VirtualStage& st = bench.parallel.stage(o.pp_rank, 0);
  mc.has_embedding = st.has_embedding &&
                     p.classes[static_cast<std::size_t>(KernelClass::kEmbedding)].kernels > 0.0;
  mc.has_output = has_output_head(p, bench);

  PerfOptions po;
  const PerfReport rep = project_performance(bench, po);
  CostCache cache(bench.cluster.accelerator, bench.cluster.network);
  ModelTimes mt = model_times(p, bench, rep, cache);
  mc.model_ms = mt.cls;
  measure_classes(p, mt);
  mc.model_step_ms = 0.0;
  for (int c = 0; c < kNumCostClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    mc.model_step_ms += mc.model_ms[i];
    const double r = mc.model_ms[i] > 0.0 ? mc.measured_ms[i] / mc.model_ms[i] : 0.0;
    if (mc.measured_ms[i] > 0.0 && mc.model_ms[i] > 0.0 && usable_ratio(r)) {
      mc.ratio[i] = r;
    } else if (mc.measured_ms[i] > 0.0 && mc.model_ms[i] > 0.0) {
      mc.warnings.push_back(fmt::format(
          "{}: measured {:.3f} ms against {:.3f} ms modelled, a ratio outside [{}, {}] (kept as "
          "modelled)",
          to_string(static_cast<CostClass>(c)), mc.measured_ms[i], mc.model_ms[i],
          kMinMeasuredRatio, kMaxMeasuredRatio));
    } else if (mc.measured_ms[i] > 0.0) {
      mc.unmapped_ms += mc.measured_ms[i];
    } else if (mc.model_ms[i] > 0.0) {
      mc.warnings.push_back(
          fmt::format("the model has {:.3f} ms of {} per step that the trace "
                      "does not show (kept as modelled)",
                      mc.model_ms[i], to_string(static_cast<CostClass>(c))));
    }
  }
  for (CollectiveRatio& cr : mt.coll) {
    mc.model_step_ms += cr.model_ms;
    if (cr.measured_ms > 0.0 && cr.model_ms > 0.0 && usable_ratio(cr.measured_ms / cr.model_ms)) {
      cr.ratio = cr.measured_ms / cr.model_ms;
    }
  }
  mc.collectives = mt.coll;
  mc.host_idle_ms = p.host_idle_ms;
  for (GemmStat& g : p.gemms) {
    g.model_us =
        gemm_time(bench.cluster.accelerator, {g.m, g.n, g.k, g.batch, g.dtype}).time_s * 1e6;
  }
  if (!rep.memory.ranks.empty()) {
    const RankMemory& rm = rep.memory.ranks[static_cast<std::size_t>(
        std::min<int>(o.pp_rank, static_cast<int>(rep.memory.ranks.size()) - 1))];
    for (int c = 0; c < kNumMemoryComponents; ++c) {
      const auto comp = static_cast<MemoryComponent>(c);
      if (!in_caching_allocator(comp)) continue;
      if (comp == MemoryComponent::kFragmentation) {
        mc.model_fragmentation_bytes += rm.point[static_cast<std::size_t>(c)];
      } else {
        mc.model_allocated_bytes += rm.point[static_cast<std::size_t>(c)];
      }
    }
  }
  add_fitted(mc, p, bench);
  mc.present = true;
}

}  // namespace projector::profile
