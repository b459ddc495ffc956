#include "projector/perf/perf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "perf/host.h"
#include "perf/pricing.h"
#include "projector/cost/moe_routing.h"
#include "projector/job/accounting.h"
#include "projector/util/error.h"

namespace projector {
namespace {

using schedule::Phase;

CommGroup group_for(const JobSpec& job, const Op& op) {
  const int node_gpus =
      collective_node_gpus(job.cluster.accelerator, job.cluster.network, job.cluster.gpus_per_node);
  if (op.group_stride > 0) {
    return make_group(op.group_size, op.group_stride, node_gpus, job.cluster.network.pod_size);
  }
  if (op.collective == CollectiveKind::kSendRecv) {
    // A pipeline hop is the cost module's kPpPeer pair. A CP ring's neighbours are tp ranks apart
    // and every step waits for its slowest hop: across nodes when the ring leaves one.
    if (op.group == GroupKind::kPp) return job_group(job, GroupKind::kPpPeer);
    return make_group(op.group_size, job.parallel.tp, node_gpus, job.cluster.network.pod_size);
  }
  CommGroup g = job_group(job, op.group);
  g.node_aggregated = op.node_aggregated;
  g.node_forward_ratio = op.node_forward_ratio;
  return g;
}

// Compute-stream time of a kernel: its busy time and the framework's share of gaps between
// kernels (RuntimeSpec::kernel_gap_fraction).
double stream_factor(const JobSpec& job) {
  return 1.0 / (1.0 - job.runtime.kernel_gap_fraction);
}

OpCost price_compute(CostCache& cache, const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm:
      return cache.gemm(op.gemm);
    case OpKind::kGroupedGemm:
      return cache.grouped_gemm(op.gemm.batch, op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.dtype,
                                op.gemm.out);
    case OpKind::kAttention:
      return op.phase == WorkPhase::kF || op.recompute ? cache.attention_fwd(op.attention)
                                                       : cache.attention_bwd(op.attention);
    case OpKind::kMemoryBound:
      return cache.memory_bound(op.bytes, op.mem_class);
    case OpKind::kHostTransfer:
      return host_transfer_time(cache.accelerator(), op.bytes);
    case OpKind::kCollective:
      break;
  }
  return OpCost{};
}

// Communication-like ops: they run beside the compute stream and may hide behind it.
bool is_transfer(const Op& op) {
  return op.kind == OpKind::kCollective || op.kind == OpKind::kHostTransfer;
}

OpCost price_collective(const JobSpec& job, CostCache& cache, const Op& op) {
  if (op.group_size <= 1 || op.bytes <= 0.0) return OpCost{};
  OpCost c = cache.collective(op.collective, op.bytes, group_for(job, op));
  // DeepEP's normal kernels copy with the SMs they are given (moe_deepep_num_sms): with few,
  // those bound the rate, as in the kernel rows (kernels/price.cpp price_dispatch).
  if (op.node_aggregated && job.runtime.moe_dispatch_kernel == MoeDispatchKernel::kDeepEp) {
    c.time_s = std::max(c.time_s, ep_kernel_unit_bound_s(job.cluster.accelerator, op.bytes,
                                                         job.runtime.moe_comm_compute_units));
  }
  c.time_s *= op.steps;
  return c;
}

// Accumulates one phase of a chunk: compute on the stream, collectives exposed or hidden behind
// the compute they can overlap with (the overlap emerges from the two durations, never a ratio).
struct PhaseAccumulator {
  double compute_s = 0.0;
  double exposed_s = 0.0;
  double ep_hideable_s = 0.0;
  double ep_total_s = 0.0;          // every EP collective of the phase, priced
  double ep_shared_hidden_s = 0.0;  // the part the shared experts hid
  double expert_wgrad_s = 0.0;      // W phase: the routed experts' weight-gradient GEMMs
  double output_wgrad_s = 0.0;      // W phase: the output layer's weight-gradient GEMM
  // Of ep_hideable_s, what a paired microbatch cannot hide in Megatron's combined 1F1B order
  // (PairParts): subtracted from the hideable part the simulator pairs.
  double ep_pair_exposed_s = 0.0;
  ExposedComm by_group;
  perf_detail::HostClock host;  // the host issuing this phase's ops (perf/host.h)
};

// One phase of a MoE layer as Megatron's combined 1F1B interleaves it with the partner's other
// phase (MG9 combined_1f1b.py: the forward's attention beside the backward's combine, its
// dispatch beside the backward's experts, its experts beside the backward's dispatch, its combine
// beside the backward's attention): the compute outside the expert section, the first EP
// transfer (F: dispatch; B: the combine's backward), the experts' compute and the later transfers
// (F: combine; B: the dispatch's backward).
struct PairParts {
  double outer_s = 0.0;
  double first_s = 0.0;
  double inner_s = 0.0;
  double second_s = 0.0;
  int transfers = 0;
  void add_compute(double t) { (transfers == 1 ? inner_s : outer_s) += t; }
  void add_transfer(double t) {
    (transfers == 0 ? first_s : second_s) += t;
    ++transfers;
  }
};

// Each transfer hides only behind the partner's compute of the same step; what sticks out stays
// exposed. Returns {forward, backward} exposed seconds for one layer.
std::pair<double, double> pair_exposed(const PairParts& f, const PairParts& b) {
  const double fwd = std::max(0.0, f.first_s - b.inner_s) + std::max(0.0, f.second_s - b.outer_s);
  const double bwd = std::max(0.0, b.first_s - f.outer_s) + std::max(0.0, b.second_s - f.inner_s);
  return {fwd, bwd};
}

void add_exposed(ExposedComm& e, GroupKind g, double t) {
  switch (g) {
    case GroupKind::kTp:
    case GroupKind::kEtp:
      e.tp_s += t;
      break;
    case GroupKind::kCp:
      e.cp_s += t;
      break;
    case GroupKind::kEp:
    case GroupKind::kEtpEp:
      e.ep_s += t;
      break;
    case GroupKind::kPp:
      e.pp_s += t;
      break;
    default:
      e.dp_s += t;
      break;
  }
}

// Bytes of one microbatch's saved activations a decoder-layer block sends to host memory per
// layer (the same bytes come back for the backward): layer-level offloading moves every saved
// tensor of the first `offload.layers` layers of the chunk, module-level the listed inputs
// (memory.h LayerActivation::offloaded_bytes). Averaged over the block's `count` layers.
double offloaded_bytes_per_layer(const JobSpec& job, const LayerWork& lw, int chunk_first) {
  const OffloadSpec& off = job.runtime.offload;
  if (!off.any() || lw.layer < 0) return 0.0;
  const LayerActivation la =
      layer_activation(job, job.model.layers[static_cast<std::size_t>(lw.layer)]);
  const int j0 = lw.layer - chunk_first;
  const int whole = std::clamp(off.layers - j0, 0, lw.count);  // layers of the run offloaded whole
  return (whole * (la.total_bytes + la.offloaded_bytes) + (lw.count - whole) * la.offloaded_bytes) /
         lw.count;
}

// The host copies of one block's activation offload (Megatron cpu_offloading / fine-grained
// offload): D2H in the forward, H2D in the backward, each a host transfer beside the block's
// compute, priced like any other host copy (OpKind::kHostTransfer, kWithBlockCompute).
void append_offload_ops(double bytes, std::vector<Op>& ops) {
  if (bytes <= 0.0) return;
  for (const WorkPhase ph : {WorkPhase::kF, WorkPhase::kB}) {
    Op op;
    op.name = ph == WorkPhase::kF ? "offload.d2h" : "offload.h2d";
    op.phase = ph;
    op.kind = OpKind::kHostTransfer;
    op.bytes = bytes;
    op.overlap = Overlap::kWithBlockCompute;
    ops.push_back(std::move(op));
  }
}

// Share of the compute units the EP dispatch / combine kernels occupy while they run
// (RuntimeSpec::moe_comm_compute_units over the accelerator's SMs / CUs): compute overlapping
// them runs on the rest. 0 when the kernel takes none or the unit count is unpublished.
double ep_comm_compute_share(const JobSpec& job) {
  const int units = job.cluster.accelerator.compute_units;
  const int taken = job.runtime.moe_comm_compute_units;
  if (units <= 0 || taken <= 0) return 0.0;
  return std::min(1.0, static_cast<double>(taken) / units);
}

// Exposed time of one transfer op after the overlap its kind allows.
struct Budgets {
  double ep[3] = {0, 0, 0};  // shared-expert compute (moe_shared_expert_overlap)
  double comm[2] = {0, 0};   // block compute: per-layer gathers / reductions ([0] F, [1] B+W)
  double host[2] = {0, 0};   // block compute: host copies (a separate DMA engine)
};

double exposed_transfer(const JobSpec& job, const std::vector<Op>& ops,
                        const std::vector<OpCost>& costs, std::size_t i, Budgets& b) {
  const Op& op = ops[i];
  const int ph = static_cast<int>(op.phase);
  const double t = costs[i].time_s;
  if (op.overlap == Overlap::kWithBlockCompute) {
    double& budget = (op.kind == OpKind::kHostTransfer ? b.host : b.comm)[ph == 0 ? 0 : 1];
    const double hidden = std::min(t, budget);
    budget -= hidden;
    // The compute it hides behind slows down while it runs (HBM and, on GPUs, CU contention).
    return t - hidden +
           hidden * job.cluster.accelerator.calibration.comm_compute_interference.value;
  }
  if (op.overlap == Overlap::kWithCompute) {
    // Neighbouring compute op in the same phase that this collective pipelines with.
    double partner = 0.0;
    for (std::size_t j : {i + 1, i - 1}) {
      if (j < ops.size() && ops[j].phase == op.phase && ops[j].kind != OpKind::kCollective &&
          ops[j].kind != OpKind::kMemoryBound && ops[j].kind != OpKind::kHostTransfer) {
        partner = std::max(partner, costs[j].time_s);
      }
    }
    // As for the other overlaps, the compute it hides behind runs slower while it does (the
    // userbuffers / NCCL kernels of TP overlap and the CP ring hold SMs and HBM bandwidth).
    const double hidden = std::min(t, partner);
    return t - hidden +
           hidden * job.cluster.accelerator.calibration.comm_compute_interference.value;
  }
  if (op.overlap == Overlap::kWithSharedExperts) {
    const double hidden = std::min(t, b.ep[ph]);
    b.ep[ph] -= hidden;
    // The shared experts run on the units the dispatch kernel leaves: with share s the pair takes
    // max(t, shared + s t), i.e. at least s t beyond the shared compute.
    return hidden > 0.0 ? std::max(t - hidden, ep_comm_compute_share(job) * t) : t;
  }
  return t;
}

// Advances each phase's host clock through the block's `n` identical layers: two layers op by op,
// the rest at the second layer's steady rate (its host, device and busy increments).
void advance_host(const JobSpec& job, const std::vector<Op>& ops,
                  const std::vector<double>& device_s, int n, PhaseAccumulator (&acc)[3]) {
  using perf_detail::HostClock;
  std::vector<double> host_s(ops.size());
  std::vector<char> sync(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const perf_detail::HostWork w = perf_detail::host_work(job, ops[i]);
    host_s[i] = perf_detail::host_time_s(job, w);
    sync[i] = w.sync;
  }
  const int simulated = std::min(n, 2);
  HostClock before[3];
  for (int copy = 0; copy < simulated; ++copy) {
    for (int ph = 0; ph < 3; ++ph) before[ph] = acc[ph].host;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      acc[static_cast<int>(ops[i].phase)].host.issue(host_s[i], device_s[i], sync[i] != 0);
    }
  }
  const double rest = n - simulated;
  if (rest <= 0) return;
  for (int ph = 0; ph < 3; ++ph) {
    HostClock& h = acc[ph].host;
    h.host_s += rest * (h.host_s - before[ph].host_s);
    h.device_s += rest * (h.device_s - before[ph].device_s);
    h.busy_s += rest * (h.busy_s - before[ph].busy_s);
  }
}

// Prices one block's ops of one phase. Overlappable collectives hide behind the compute of the
// op they pipeline with: TP comm overlap behind the adjacent GEMM, the CP ring behind the
// attention core, EP dispatch / combine behind the shared experts (moe_shared_expert_overlap),
// per-layer FSDP traffic and host copies behind the whole block.
void price_block(const JobSpec& job, CostCache& cache, const LayerWork& lw,
                 const std::string& label, std::vector<PricedOp>* table, PhaseAccumulator (&acc)[3],
                 double offload_bytes) {
  // The block's ops, plus its activation-offload copies when it has any (copied only then: this
  // runs for every block of every projection).
  std::vector<Op> with_offload;
  if (offload_bytes > 0.0) {
    with_offload = lw.ops;
    append_offload_ops(offload_bytes, with_offload);
  }
  const std::vector<Op>& ops = offload_bytes > 0.0 ? with_offload : lw.ops;
  Budgets budgets;
  double block_compute[3] = {0, 0, 0};
  std::vector<OpCost> costs(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const int ph = static_cast<int>(op.phase);
    if (op.kind == OpKind::kCollective) {
      costs[i] = price_collective(job, cache, op);
    } else {
      costs[i] = price_compute(cache, op);
      if (op.kind != OpKind::kHostTransfer) {
        costs[i].time_s *= op.steps * stream_factor(job);  // SequentialMLP; kernel gaps
      }
    }
    if (op.name.starts_with("moe.shared.") && !is_transfer(op)) budgets.ep[ph] += costs[i].time_s;
    if (!is_transfer(op)) block_compute[ph] += costs[i].time_s;
  }
  const double n = lw.count;
  budgets.comm[0] = budgets.host[0] = block_compute[0];
  // The W of a combined backward runs with it (only zero-bubble schedules split them).
  budgets.comm[1] = budgets.host[1] = block_compute[1] + block_compute[2];
  PairParts parts[2];                        // F and B
  std::vector<double> stream_s(ops.size());  // each op's time on the compute stream
  const bool delayed_wgrad = job.runtime.moe_overlap.has(MoeOverlap::kDelayedWgrad);
  double delayed_w_s = 0.0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const int ph = static_cast<int>(op.phase);
    const double t = costs[i].time_s;
    double exposed = t;
    if (is_transfer(op)) {
      exposed = exposed_transfer(job, ops, costs, i, budgets);
      acc[ph].exposed_s += n * exposed;
      if (op.kind == OpKind::kHostTransfer) {
        acc[ph].by_group.offload_s += n * exposed;
      } else {
        add_exposed(acc[ph].by_group, op.group, n * exposed);
      }
      if (op.group == GroupKind::kEp || op.group == GroupKind::kEtpEp) {
        acc[ph].ep_hideable_s += n * exposed;  // what a paired microbatch's compute can hide
        if (ph < 2) parts[ph].add_transfer(exposed);
        acc[ph].ep_total_s += n * t;
        if (op.overlap == Overlap::kWithSharedExperts)
          acc[ph].ep_shared_hidden_s += n * (t - exposed);
      }
    } else {
      acc[ph].compute_s += n * t;
      if (ph < 2) {
        parts[ph].add_compute(t);
      } else if (op.name.starts_with("moe.experts.")) {
        // Expert weight gradients: with delay_wgrad_compute beside the backward's own dispatch
        // backward; without it they hold that dispatch back and cover nothing (w_serial_s).
        if (delayed_wgrad) delayed_w_s += t;
      } else {
        parts[1].outer_s += t;  // the attention's weight gradients, in its backward step
      }
      if (op.phase == WorkPhase::kW && op.name.starts_with("moe.experts.")) {
        acc[ph].expert_wgrad_s += n * t;
      }
      if (op.phase == WorkPhase::kW && op.name.starts_with("output.")) {
        acc[ph].output_wgrad_s += n * t;
      }
    }
    stream_s[i] = exposed;
    if (table) {
      PricedOp po;
      po.block = label;
      po.op = op;
      po.time_s = t;
      po.exposed_s = is_transfer(op) ? exposed : t;
      po.provenance = costs[i].provenance;
      po.detail = op.kind == OpKind::kHostTransfer ? std::string("host link") : costs[i].source;
      po.repeat = lw.count;
      table->push_back(std::move(po));
    }
  }
  if (job.runtime.host_dispatch.modelled()) advance_host(job, ops, stream_s, lw.count, acc);
  if (parts[0].transfers > 0 && parts[1].transfers > 0) {
    parts[1].second_s = std::max(0.0, parts[1].second_s - delayed_w_s);
    const auto [fwd, bwd] = pair_exposed(parts[0], parts[1]);
    acc[0].ep_pair_exposed_s += n * fwd;
    acc[1].ep_pair_exposed_s += n * bwd;
  }
}

// The overlapped DP collective's buckets: the stated bucket size (bytes of gradient, or Megatron's
// parameters), else the framework's rule (ParallelSpec::ddp_bucket_*: Megatron-Core's max(40M
// parameters, 1M x DP)); no rule: one bucket. `element_bytes` is the width the op moves each
// parameter at (main grads, or the parameters).
int dp_buckets(const JobSpec& job, const Op& op, double element_bytes) {
  const ParallelSpec& p = job.parallel;
  const double params =
      p.ddp_bucket_size_bytes > 0 ? static_cast<double>(p.ddp_bucket_size_bytes) /
                                        bytes_per_element(job.runtime.main_grads_dtype)
      : p.ddp_bucket_size_params > 0
          ? static_cast<double>(p.ddp_bucket_size_params)
          : std::max(static_cast<double>(p.ddp_bucket_min_params),
                     static_cast<double>(p.ddp_bucket_params_per_dp) * op.group_size);
  const double bucket_bytes = params * element_bytes;
  if (bucket_bytes <= 0.0) return 1;
  return std::max(1, static_cast<int>(std::ceil(op.bytes / bucket_bytes)));
}

int grad_buckets(const JobSpec& job, const Op& op) {
  return dp_buckets(job, op, bytes_per_element(job.runtime.main_grads_dtype));
}

Op split_bucket(const Op& op, int n) {
  Op b = op;
  b.bytes = op.bytes / n;
  return b;
}

std::string block_label(const LayerWork& lw) {
  if (lw.layer < 0) return lw.label;
  if (lw.count == 1) return fmt::format("layer {} ({})", lw.layer, lw.label);
  return fmt::format("layers {}-{} ({}x {})", lw.layer, lw.layer + lw.count - 1, lw.count,
                     lw.label);
}

// Megatron's defer_embedding_wgrad_compute (MG28 layers.py:1227-1231, 653-663; schedules.py
// finish_embedding_wgrad_compute before finalize_model_grads): the first k microbatches of the
// last stage skip the output layer's weight-gradient GEMM, which runs after the stage's last
// backward. The schedule prices one backward per chunk, so the chunk's W keeps the average
// (m - k) / m of it and the rank's tail the k deferred ones. The drain's re-gather of the
// sequence-parallel input is not moved (the backward's own gather stays priced).
void defer_output_wgrad(const JobSpec& job, double output_wgrad_s, ChunkTiming& ct) {
  const int k = job.deferred_output_wgrads();
  const int m = job.microbatches_per_flush();
  if (k <= 0 || m <= 0 || output_wgrad_s <= 0.0) return;
  const double moved = output_wgrad_s * k / m;
  ct.w_s = std::max(0.0, ct.w_s - moved);
  ct.w_serial_s = std::min(ct.w_serial_s, ct.w_s);
  ct.deferred_wgrad_s = output_wgrad_s * k;
}

// 1. Prices every chunk of every pipeline rank: F / B / W durations, the EP part a DualPipe
// partner can hide, and (per virtual stage) the exposed in-layer communication by group.
std::vector<ExposedComm> price_chunks(const JobSpec& job, CostCache& cache,
                                      const PerfOptions& options, PerfReport& rep) {
  const ParallelSpec& p = job.parallel;
  const int num_stages = p.pp * p.vpp;
  rep.chunks.resize(static_cast<std::size_t>(num_stages));
  std::vector<ExposedComm> stage_exposed(static_cast<std::size_t>(num_stages));
  for (int r = 0; r < p.pp; ++r) {
    const RankWork& rw = rep.workload.ranks[static_cast<std::size_t>(r)];
    for (int c = 0; c < p.vpp; ++c) {
      const int z = c * p.pp + r;
      ChunkTiming& ct = rep.chunks[static_cast<std::size_t>(z)];
      ct.pp_rank = r;
      ct.chunk = c;
      ct.stage = z;
      PhaseAccumulator acc[3];
      const int chunk_first = p.stage(r, c).first_layer;
      for (const LayerWork& lw : rw.chunks[static_cast<std::size_t>(c)].blocks) {
        price_block(job, cache, lw, options.keep_op_table ? block_label(lw) : std::string(),
                    options.keep_op_table ? &ct.ops : nullptr, acc,
                    offloaded_bytes_per_layer(job, lw, chunk_first));
      }
      // The device's waits for the host add to each phase (perf/host.h).
      for (int ph = 0; ph < 3; ++ph) ct.host_idle_s[ph] = acc[ph].host.idle_s();
      ct.f_s = acc[0].compute_s + acc[0].exposed_s + ct.host_idle_s[0];
      ct.b_s = acc[1].compute_s + acc[1].exposed_s + ct.host_idle_s[1];
      ct.w_s = acc[2].compute_s + acc[2].exposed_s + ct.host_idle_s[2];
      defer_output_wgrad(job, acc[2].output_wgrad_s, ct);
      ct.f_comm_s = std::max(0.0, acc[0].ep_hideable_s - acc[0].ep_pair_exposed_s);
      ct.b_comm_s = std::max(0.0, acc[1].ep_hideable_s - acc[1].ep_pair_exposed_s);
      // Combined 1F1B without delay_wgrad_compute: the backward's next dispatch waits for the
      // expert weight gradients, so they cannot cover the partner's communication (MG2
      // model_parallel_config.py:348-349).
      const RuntimeSpec& rt = job.runtime;
      // DualPipeV's pairs run the whole backward, W included, beside the partner's forward
      // (torchtitan distributed/dual_pipe_v.py overlap_callback), so nothing waits there.
      if (combined_forward_backward(job) && !rt.moe_overlap.has(MoeOverlap::kDelayedWgrad) &&
          rt.schedule != ScheduleKind::kDualPipeV) {
        ct.w_serial_s = acc[2].expert_wgrad_s;
      }
      ExposedComm& e = stage_exposed[static_cast<std::size_t>(z)];
      ct.ep_f_s = acc[0].ep_total_s;
      for (const PhaseAccumulator& a : acc) {
        ct.ep_total_s += a.ep_total_s;
        ct.ep_shared_hidden_s += a.ep_shared_hidden_s;
        e.tp_s += a.by_group.tp_s;
        e.cp_s += a.by_group.cp_s;
        e.ep_s += a.by_group.ep_s;
        e.dp_s += a.by_group.dp_s;
        e.offload_s += a.by_group.offload_s;
      }
    }
  }
  return stage_exposed;
}

// 2. The schedule table ('auto' resolved by schedule::select_schedule).
void build_table(const JobSpec& job, PerfReport& rep) {
  const ParallelSpec& p = job.parallel;
  const schedule::ScheduleSelection sel =
      schedule::select_schedule(job.runtime.schedule, p.pp, p.vpp, false);
  rep.schedule = sel.algorithm;
  rep.schedule_reason = sel.reason;
  // One accumulation round is one flush of the table; perf repeats it (fill_metrics).
  const int per_round = job.microbatches_per_flush();
  schedule::ScheduleRequest request{sel.algorithm, p.pp, p.vpp, per_round};
  request.combined_forward_backward = combined_forward_backward(job);
  request.overlapped_pairs = job.runtime.schedule_overlapped_pairs;
  rep.table = schedule::build_schedule(request);
}

// 3. Simulation input: chunk costs by the table's own stage mapping, the P2P time, interference.
schedule::SimulationInput simulation_input(const JobSpec& job, CostCache& cache,
                                           const PerfOptions& options, PerfReport& rep) {
  const ParallelSpec& p = job.parallel;
  schedule::SimulationInput in;
  in.costs.resize(static_cast<std::size_t>(p.pp * p.vpp));
  for (int r = 0; r < p.pp; ++r) {
    for (int c = 0; c < p.vpp; ++c) {
      const ChunkTiming& ct = rep.chunks[static_cast<std::size_t>(rep.table.stage_of(r, c))];
      schedule::ChunkCost& cc = in.costs[static_cast<std::size_t>(r * p.vpp + c)];
      cc.f_s = ct.f_s;
      cc.b_s = ct.b_s;
      cc.w_s = ct.w_s;
      cc.f_comm_s = ct.f_comm_s;
      cc.b_comm_s = ct.b_comm_s;
      cc.w_serial_s = ct.w_serial_s;
      if (ct.deferred_wgrad_s > 0.0) {  // drained after the rank's last backward
        if (in.tail_s.empty()) in.tail_s.assign(static_cast<std::size_t>(p.pp), 0.0);
        in.tail_s[static_cast<std::size_t>(r)] += ct.deferred_wgrad_s;
      }
    }
  }
  if (p.pp > 1) {
    Op send;
    send.kind = OpKind::kCollective;
    send.collective = CollectiveKind::kSendRecv;
    send.group = GroupKind::kPp;
    send.group_size = 2;
    send.bytes = rep.workload.ranks[0].p2p_bytes;
    rep.p2p_s = price_collective(job, cache, send).time_s;
    in.p2p_s = rep.p2p_s;
    in.blocking_p2p = !p.p2p_overlap;
  }
  rep.interference = job.cluster.accelerator.calibration.comm_compute_interference.value;
  in.interference = rep.interference;
  in.pair_comm_compute_share = ep_comm_compute_share(job);
  in.record_timeline = options.record_timeline;
  return in;
}

// The DP gradient reduction of one chunk (rank r, chunk c, stage z), as a task on the "dp" stream.
schedule::CommTask grad_sync_task(const JobSpec& job, CostCache& cache, const PerfReport& rep,
                                  const Op& op, int r, int c, int z) {
  const int last_bwd = schedule::last_action(rep.table, r, c, {Phase::kW, Phase::kBW});
  const int last_any = static_cast<int>(rep.table.rank_actions(r).size()) - 1;
  schedule::CommTask task;
  task.rank = r;
  task.stream = "dp";
  task.label = fmt::format("{} chunk {}", op.name, c);
  if (op.overlap == Overlap::kWithCompute && last_bwd >= 0) {
    // Megatron's overlap_grad_reduce: the chunk's gradients are reduced in buckets, each
    // launched as soon as the last microbatch's backward has produced it. With n equal
    // buckets ready evenly over that backward (duration t) and a FIFO stream, the last
    // bucket ends at start + max(t/n + comm, t + comm/n): one task from the action start.
    const int n = grad_buckets(job, op);
    const double bucket_comm = price_collective(job, cache, split_bucket(op, n)).time_s;
    const double comm = bucket_comm * n;
    const ChunkTiming& ct = rep.chunks[static_cast<std::size_t>(z)];
    const schedule::Action& a = rep.table.rank_actions(r)[static_cast<std::size_t>(last_bwd)];
    const double t = a.phase == Phase::kW ? ct.w_s : ct.b_s + ct.w_s;
    task.duration_s = std::max(t / n + comm, t + bucket_comm);
    task.trigger = schedule::CommTrigger::kActionStart;
    task.trigger_action = last_bwd;
  } else {
    task.duration_s = price_collective(job, cache, op).time_s;
    task.trigger = schedule::CommTrigger::kActionEnd;
    task.trigger_action = last_any;
  }
  return task;
}

// FSDP2 reduces each unit's gradients as soon as that unit's backward is done, on one stream:
// the chunk's reduce-scatters (dense, expert, HSDP all-reduce) form one sequence of `units` equal
// pieces released evenly over the chunk's last backward (the bucket rule of grad_sync_task with
// one bucket per unit).
schedule::CommTask fsdp2_grad_sync_task(const JobSpec& job, CostCache& cache, const PerfReport& rep,
                                        const std::vector<Op>& ops, int units, int r, int c,
                                        int z) {
  const int last_bwd = schedule::last_action(rep.table, r, c, {Phase::kW, Phase::kBW});
  double comm = 0.0;
  for (const Op& op : ops) comm += price_collective(job, cache, op).time_s;
  schedule::CommTask task;
  task.rank = r;
  task.stream = "dp";
  task.label = fmt::format("fsdp2.grad_sync chunk {}", c);
  const int n = std::max(1, units);
  if (last_bwd < 0) {
    task.duration_s = comm;
    task.trigger = schedule::CommTrigger::kActionEnd;
    task.trigger_action = static_cast<int>(rep.table.rank_actions(r).size()) - 1;
    return task;
  }
  const ChunkTiming& ct = rep.chunks[static_cast<std::size_t>(z)];
  const schedule::Action& a = rep.table.rank_actions(r)[static_cast<std::size_t>(last_bwd)];
  const double t = a.phase == Phase::kW ? ct.w_s : ct.b_s + ct.w_s;
  task.duration_s = std::max(t / n + comm, t + comm / n);
  task.trigger = schedule::CommTrigger::kActionStart;
  task.trigger_action = last_bwd;
  return task;
}

// Gathers issued piece by piece with one piece prefetched (FSDP2: one unit per block, the
// embedding, norm + output; Megatron-Core's overlap_param_gather: one DDP bucket each, the next
// bucket's all-gather dispatched by the forward pre-hook of the current one): only the first
// piece delays the chunk's first forward; the rest runs beside that forward and holds back the
// rank's next action. The backward's gathers (FSDP2's reshard after forward) run beside the
// chunk's first backward likewise.
void attach_streamed_gathers(const PerfReport& rep, const Op& op, double t, int r, int c, int pass,
                             int units, const char* stream, const char* piece,
                             schedule::SimulationInput& in) {
  const int count = static_cast<int>(rep.table.rank_actions(r).size());
  const int anchor = pass == 0 ? schedule::first_action(rep.table, r, c, {Phase::kF})
                               : schedule::first_action(rep.table, r, c, {Phase::kB, Phase::kBW});
  schedule::CommTask first;
  first.rank = r;
  first.stream = stream;
  first.label = fmt::format("{} chunk {} (first {})", op.name, c, piece);
  first.duration_s = t / std::max(1, units);
  schedule::CommTask rest = first;
  rest.label = fmt::format("{} chunk {} (prefetched {}s)", op.name, c, piece);
  rest.duration_s = t - first.duration_s;
  if (pass == 0) {
    first.trigger = rest.trigger = schedule::CommTrigger::kIterationStart;
    first.blocks_action = anchor;
  } else {
    // The backward gathers are issued as the backward starts; its first unit was prefetched.
    first.duration_s = 0.0;
    rest.duration_s = t;
    rest.trigger = schedule::CommTrigger::kActionStart;
    rest.trigger_action = anchor;
  }
  rest.blocks_action = anchor >= 0 && anchor + 1 < count ? anchor + 1 : -1;
  if (first.duration_s > 0.0) in.comm.push_back(std::move(first));
  in.comm.push_back(std::move(rest));
}

// 4. DP communication: gradient sync after each chunk's last backward; parameter gathers before
// its first forward (overlapped ones block it on the "dp" stream). Returns the parameter-gather
// time that cannot overlap (the largest over chunks).
double attach_dp_comm(const JobSpec& job, CostCache& cache, const PerfReport& rep,
                      schedule::SimulationInput& in) {
  const ParallelSpec& p = job.parallel;
  double gather_exposed = 0.0;
  for (int r = 0; r < p.pp; ++r) {
    for (int c = 0; c < p.vpp; ++c) {
      const int z = rep.table.stage_of(r, c);
      const RankWork& owner = rep.workload.ranks[static_cast<std::size_t>(z % p.pp)];
      const int owner_chunk = z / p.pp;
      const IterationWork& it = owner.iteration;
      const VirtualStage& st = p.stages[static_cast<std::size_t>(z)];
      const int units = st.num_layers + (st.has_embedding ? 1 : 0) + (st.has_output ? 1 : 0);
      std::vector<Op> fsdp2_sync;
      for (std::size_t i = 0; i < it.grad_sync.size(); ++i) {
        if (it.grad_sync_chunk[i] != owner_chunk) continue;
        if (p.fsdp == FsdpKind::kFsdp2 && it.grad_sync[i].overlap == Overlap::kWithCompute) {
          fsdp2_sync.push_back(it.grad_sync[i]);
          continue;
        }
        in.comm.push_back(grad_sync_task(job, cache, rep, it.grad_sync[i], r, c, z));
      }
      if (!fsdp2_sync.empty()) {
        in.comm.push_back(fsdp2_grad_sync_task(job, cache, rep, fsdp2_sync, units, r, c, z));
      }
      const int first_fwd = schedule::first_action(rep.table, r, c, {Phase::kF});
      double chunk_gather = 0.0;
      for (std::size_t i = 0; i < it.param_gather.size(); ++i) {
        if (it.param_gather_chunk[i] != owner_chunk) continue;
        const Op& op = it.param_gather[i];
        const double t = price_collective(job, cache, op).time_s;
        if (p.fsdp == FsdpKind::kFsdp2 && op.overlap == Overlap::kWithCompute) {
          const int pass = op.name.ends_with("_bwd") ? 1 : 0;  // workload: the backward's gathers
          // FSDP2 gathers on their own stream beside the reduce-scatters.
          attach_streamed_gathers(rep, op, t, r, c, pass, units, "dp_gather", "unit", in);
          continue;
        }
        if (op.overlap == Overlap::kWithCompute && p.fsdp == FsdpKind::kNone) {
          const int buckets =
              dp_buckets(job, op, bytes_per_element(job.runtime.precision.params_dtype));
          attach_streamed_gathers(rep, op, t, r, c, 0, buckets, "dp", "bucket", in);
          continue;
        }
        if (op.overlap != Overlap::kWithCompute) {
          chunk_gather += t;
          continue;
        }
        schedule::CommTask task;
        task.rank = r;
        task.stream = "dp";
        task.duration_s = t;
        task.trigger = schedule::CommTrigger::kIterationStart;
        task.blocks_action = first_fwd;
        task.label = fmt::format("{} chunk {}", op.name, c);
        in.comm.push_back(std::move(task));
      }
      gather_exposed = std::max(gather_exposed, chunk_gather);
    }
  }
  return gather_exposed;
}

// 5. Iteration time (pipeline + slowest optimizer step + exposed gathers) and throughput metrics.
void fill_metrics(const JobSpec& job, CostCache& cache, PerfReport& rep) {
  const int pp = job.parallel.pp;
  rep.optimizer_s_per_rank.resize(static_cast<std::size_t>(pp));
  for (int r = 0; r < pp; ++r) {
    rep.optimizer_s_per_rank[static_cast<std::size_t>(r)] =
        price_compute(cache, rep.workload.ranks[static_cast<std::size_t>(r)].iteration.optimizer)
            .time_s *
        stream_factor(job);
  }
  rep.optimizer_s =
      *std::max_element(rep.optimizer_s_per_rank.begin(), rep.optimizer_s_per_rank.end());
  // Accumulation rounds run the simulated flush, its exposed gathers included, back to back.
  const double rounds = std::max(1, job.runtime.accumulation_rounds);
  rep.pipeline_s = rounds * rep.simulation.makespan_s;
  rep.iteration_s = rep.pipeline_s + rep.optimizer_s + rounds * rep.param_gather_exposed_s;
  rep.tokens_per_s = static_cast<double>(job.tokens_per_iteration()) / rep.iteration_s;
  rep.tokens_per_s_per_gpu = rep.tokens_per_s / rep.world_size;
  rep.flops = model_flops(job);
  rep.model_tflops_per_gpu = rep.flops.model_flops / rep.iteration_s / rep.world_size / 1e12;
  rep.hardware_tflops_per_gpu = rep.flops.hardware_flops / rep.iteration_s / rep.world_size / 1e12;
  if (job.runtime.logged_flops == RuntimeSpec::LoggedFlops::kMaxText) {
    rep.logged_tflops_per_gpu = maxtext_flops(job) / rep.iteration_s / rep.world_size / 1e12;
  }
  rep.mfu_dtype = job.runtime.precision.params_dtype;
  const double peak = job.cluster.accelerator.peak_flops(rep.mfu_dtype);
  rep.mfu = peak > 0 ? rep.model_tflops_per_gpu * 1e12 / peak : 0.0;
  rep.palm_tflops_per_gpu =
      palm_flops_per_token(job.model, job.runtime.seq_length) * rep.tokens_per_s_per_gpu / 1e12;
  rep.palm_mfu = peak > 0 ? rep.palm_tflops_per_gpu * 1e12 / peak : 0.0;
  rep.bubble_fraction = rep.simulation.max_bubble_fraction;
  rep.bubble_over_ideal = rep.simulation.bubble_over_ideal;
  double busy = 0.0;
  for (std::size_t r = 0; r < rep.simulation.ranks.size(); ++r) {
    const double opt = r < rep.optimizer_s_per_rank.size() ? rep.optimizer_s_per_rank[r] : 0.0;
    busy += rounds * rep.simulation.ranks[r].busy_s + opt;
  }
  if (!rep.simulation.ranks.empty() && rep.iteration_s > 0.0) {
    rep.busy_fraction =
        std::min(1.0, busy / static_cast<double>(rep.simulation.ranks.size()) / rep.iteration_s);
  }
}

// Per pipeline rank: EP dispatch / combine priced, hidden by the shared experts (per block), hidden
// by a paired microbatch's compute (simulated pairs), and the rest exposed.
void fill_ep_split(const JobSpec& job, PerfReport& rep) {
  const ParallelSpec& p = job.parallel;
  const double rounds = std::max(1, job.runtime.accumulation_rounds);
  const double m = rep.num_microbatches;
  bool any = false;
  std::vector<EpCommSplit> out(static_cast<std::size_t>(p.pp));
  for (int r = 0; r < p.pp; ++r) {
    EpCommSplit& s = out[static_cast<std::size_t>(r)];
    s.pp_rank = r;
    for (int c = 0; c < p.vpp; ++c) {
      const ChunkTiming& ct = rep.chunks[static_cast<std::size_t>(rep.table.stage_of(r, c))];
      s.total_s += ct.ep_total_s * m;  // num_microbatches counts every round's microbatches
      s.hidden_shared_experts_s += ct.ep_shared_hidden_s * m;
    }
    s.hidden_paired_microbatch_s =
        rep.simulation.ranks[static_cast<std::size_t>(r)].pair_hidden_comm_s * rounds;
    s.exposed_s =
        std::max(0.0, s.total_s - s.hidden_shared_experts_s - s.hidden_paired_microbatch_s);
    any = any || s.total_s > 0.0;
  }
  if (!any) return;
  rep.ep_comm = std::move(out);
  if (rep.schedule == ScheduleKind::kDualPipeV) {
    if (job.runtime.schedule_overlapped_pairs) {
      rep.ep_pair_mechanism = "DualPipeV overlapped forward-backward pairs";
    }
  } else if (combined_forward_backward(job)) {
    rep.ep_pair_mechanism = "combined 1F1B (overlap_moe_expert_parallel_comm)";
  }
}

// 6. Exposed communication on the critical (busiest) rank: in-layer groups summed over the rank's
// chunks and microbatches, DP from the simulated stream, PP as the bubble's transfer share.
void fill_exposed(const JobSpec& job, const std::vector<ExposedComm>& stage_exposed,
                  PerfReport& rep) {
  const ParallelSpec& p = job.parallel;
  int crit = 0;
  double crit_busy = -1.0;
  for (int r = 0; r < p.pp; ++r) {
    const double busy = rep.simulation.ranks[static_cast<std::size_t>(r)].ideal_compute_s;
    if (busy > crit_busy) {
      crit_busy = busy;
      crit = r;
    }
  }
  for (int c = 0; c < p.vpp; ++c) {
    const ExposedComm& e = stage_exposed[static_cast<std::size_t>(rep.table.stage_of(crit, c))];
    rep.exposed.tp_s += e.tp_s * rep.num_microbatches;
    rep.exposed.cp_s += e.cp_s * rep.num_microbatches;
    rep.exposed.ep_s += e.ep_s * rep.num_microbatches;
    rep.exposed.dp_s += e.dp_s * rep.num_microbatches;  // per-layer FSDP collectives
    rep.exposed.offload_s += e.offload_s * rep.num_microbatches;
  }
  for (const schedule::StreamStats& s : rep.simulation.streams) {
    if (s.name == "dp" || s.name == "dp_gather") {
      rep.exposed.dp_s += s.exposed_s[static_cast<std::size_t>(crit)];
    }
  }
  const double rounds = std::max(1, job.runtime.accumulation_rounds);
  fill_ep_split(job, rep);
  // What the paired microbatches hid is not exposed (the block-level figure above is before it).
  if (!rep.ep_comm.empty()) {
    const EpCommSplit& s = rep.ep_comm[static_cast<std::size_t>(crit)];
    rep.exposed.ep_s = std::max(0.0, rep.exposed.ep_s - s.hidden_paired_microbatch_s);
  }
  rep.exposed.dp_s = rounds * (rep.exposed.dp_s + rep.param_gather_exposed_s);
  // The fill and drain's hops, and with blocking sends the time the rank waited for its own.
  const double blocked_s = rep.simulation.ranks[static_cast<std::size_t>(crit)].p2p_blocked_s;
  rep.exposed.pp_s = p.pp > 1 ? rounds * (2.0 * (p.pp - 1) * rep.p2p_s + blocked_s) : 0.0;
}

}  // namespace

namespace {

// The dropless MoE layer with the most experts per EP rank decides whether skew applies; nullptr
// when no layer routes dropless over more than one EP rank.
const MoeSpec* dropless_ep_moe(const JobSpec& job) {
  if (job.parallel.ep <= 1) return nullptr;
  const MoeSpec* best = nullptr;
  for (const LayerSpec& l : job.model.layers) {
    if (!l.is_moe || l.moe.capacity_factor > 0.0 || l.moe.num_experts < job.parallel.ep) continue;
    if (best == nullptr || l.moe.num_experts > best->num_experts) best = &l.moe;
  }
  return best;
}

// Projects `job` again with the expert-load CV at which the busiest EP rank gets `target` times
// the mean routed tokens (or the most it can receive, when that is less).
RoutingSkew project_routing_skew(const JobSpec& job, CostCache& cache, double target) {
  RoutingSkew out;
  const MoeSpec* moe = dropless_ep_moe(job);
  if (moe == nullptr || job.runtime.moe_expert_load_cv > 0.0 ||
      job.runtime.moe_routing == MoeRouting::kForced || target <= 1.0) {
    return out;
  }
  JobSpec skewed = job;
  skewed.runtime.moe_routing = MoeRouting::kLearned;
  // moe_rank_load_factor grows with the CV up to its cap: bisect for the target (or the cap).
  double lo = 0.0, hi = 64.0;
  skewed.runtime.moe_expert_load_cv = hi;
  const double reachable = std::min(target, moe_rank_load_factor(skewed, *moe));
  if (reachable <= 1.0 + 1e-9) return out;  // every rank already holds all it can receive
  for (int i = 0; i < 60; ++i) {
    skewed.runtime.moe_expert_load_cv = 0.5 * (lo + hi);
    (moe_rank_load_factor(skewed, *moe) < reachable ? lo : hi) = skewed.runtime.moe_expert_load_cv;
  }
  skewed.runtime.moe_expert_load_cv = hi;
  PerfOptions po;
  po.keep_op_table = false;
  po.with_memory = false;
  const PerfReport rep = project_performance(skewed, cache, po);
  out.applies = true;
  out.load_factor = moe_rank_load_factor(skewed, *moe);
  out.expert_load_cv = hi;
  out.iteration_s = rep.iteration_s;
  out.tokens_per_s_per_gpu = rep.tokens_per_s_per_gpu;
  return out;
}

}  // namespace

PerfReport project_performance(const JobSpec& job, CostCache& cache, const PerfOptions& options) {
  check_job_invariants(job);  // a malformed job is refused, never repaired
  PerfReport rep;
  rep.world_size = static_cast<int>(job.cluster.world_size());
  rep.num_microbatches = job.num_microbatches();
  rep.workload = build_workload(job);
  const std::vector<ExposedComm> stage_exposed = price_chunks(job, cache, options, rep);
  build_table(job, rep);
  schedule::SimulationInput in = simulation_input(job, cache, options, rep);
  rep.param_gather_exposed_s = attach_dp_comm(job, cache, rep, in);
  rep.simulation = schedule::simulate(rep.table, in);
  fill_metrics(job, cache, rep);
  fill_exposed(job, stage_exposed, rep);
  if (job.model.family == ModelFamily::kRecommendation)
    perf_detail::finish_recsys_step(job, cache, rep);
  if (options.with_memory) {
    MemoryOptions mo;
    mo.table = &rep.table;  // the in-flight states come from the table just simulated
    rep.memory = project_memory(job, mo);
    rep.has_memory = true;
  }
  if (options.routing_skew_bracket) {
    rep.routing_skew =
        project_routing_skew(job, cache, MemoryOptions{}.moe_dropless_imbalance_upper);
  }
  return rep;
}

PerfReport project_performance(const JobSpec& job, const PerfOptions& options) {
  CostCache cache(job.cluster.accelerator, job.cluster.network);
  return project_performance(job, cache, options);
}

namespace perf_detail {

OpCost price_op(const JobSpec& job, CostCache& cache, const Op& op) {
  if (op.kind == OpKind::kCollective) return price_collective(job, cache, op);
  OpCost c = price_compute(cache, op);
  if (op.kind != OpKind::kHostTransfer) c.time_s *= stream_factor(job);
  return c;
}

}  // namespace perf_detail
}  // namespace projector
