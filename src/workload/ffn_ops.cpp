// The feed-forward part of a decoder layer (layer_ops.h): the dense MLP, MoE (token-choice
// dispatch over EP, grouped expert GEMMs, combine; MaxText's dense capacity dispatch).
#include <algorithm>
#include <cmath>

#include "projector/cost/moe_routing.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "workload/layer_ops.h"

namespace projector::workload_detail {

// `width`: the MLP's input / output features (0: the hidden size). `sequential`: the `groups`
// experts run as one GEMM each (Megatron's SequentialMLP when moe_grouped_gemm is false: MG8
// experts.py), not as one grouped GEMM.
void add_mlp(const Ctx& c, std::vector<Op>& f, const std::string& prefix, const MlpSpec& mlp,
             std::int64_t rows, std::int64_t ffn_per_rank, int groups, std::int64_t width = 0,
             bool sequential = false) {
  const std::int64_t h = width > 0 ? width : c.job.model.hidden_size;
  const std::int64_t up = mlp.gated ? 2 * ffn_per_rank : ffn_per_rank;
  const std::size_t first = f.size();
  push_gemm(c, f, prefix + ".fc1", rows, up, h, groups);
  // Activation (and gating product): read the fc1 output, write the activated half; a GLU moves
  // what its implementation moves per gated element (glu_forward_bytes_per_element).
  const double act_bytes =
      mlp.gated ? ffn_per_rank * glu_forward_bytes_per_element(mlp.activation, c.act_b)
                : static_cast<double>(up + ffn_per_rank) * c.act_b;
  f.push_back(mem_op(prefix + ".act", static_cast<double>(rows) * groups * act_bytes));
  push_gemm(c, f, prefix + ".fc2", rows, h, ffn_per_rank, groups);
  if (!sequential && groups == 1 && prefix == "moe.experts") {
    // One local expert still runs the grouped kernel (torch._grouped_mm, TE GroupedLinear).
    for (std::size_t i = first; i < f.size(); ++i) {
      if (f[i].kind == OpKind::kGemm) f[i].kind = OpKind::kGroupedGemm;
    }
  }
  if (!sequential || groups <= 1) return;
  for (std::size_t i = first; i < f.size(); ++i) {
    Op& op = f[i];
    if (op.kind != OpKind::kGroupedGemm) continue;
    // One kernel per expert: a GEMM of the expert's rows, run `groups` times.
    op.kind = OpKind::kGemm;
    op.gemm.batch = 1;
    op.steps = groups;
  }
}

// Dense MoE dispatch (MoeDispatchKind::kDenseCapacity / kDenseAll), as MaxText's dense_matmul
// computes it. Capacity: per sequence of S tokens each expert takes C = ceil(S topk / E) x cf
// slots; the dispatch einsum [S, E C] x [S, h] and the combine einsum cost 2 S E C h FLOPs each
// per sequence, the experts run as a batched GEMM over their E x C slots (over the expert-parallel
// group's sequences after an all-to-all). Dense all: every expert computes every token.
void add_dense_moe(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const JobSpec& job = c.job;
  const ParallelSpec& p = job.parallel;
  const MoeSpec& m = layer.moe;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t local = c.tokens / c.tp;
  const int ep = std::max(1, p.ep);
  const int local_experts = std::max(1, m.num_experts / ep);
  const std::int64_t fe = m.expert_ffn_hidden_size / std::max(1, p.etp);
  const std::int64_t up_e = layer.mlp.gated ? 2 * fe : fe;
  f.push_back(act_gemm_op(c, "moe.router", local, m.num_experts, h));
  f.push_back(mem_op("moe.topk", 3.0 * static_cast<double>(local) * m.num_experts * 4.0));
  if (job.runtime.moe_dispatch == MoeDispatchKind::kDenseAll) {
    push_gemm(c, f, "moe.experts.fc1", local, up_e * local_experts, h);
    f.push_back(mem_op("moe.experts.act",
                       static_cast<double>(local) * local_experts * (up_e + fe) * c.act_b));
    push_gemm(c, f, "moe.experts.fc2", local, h, fe, local_experts);
    f.back().kind = OpKind::kGemm;  // a batched einsum over the experts, not a grouped kernel
    f.push_back(
        mem_op("moe.weight_sum", static_cast<double>(local) * (local_experts + 1) * h * c.act_b));
  } else {
    const std::int64_t seq = std::max<std::int64_t>(1, job.runtime.seq_length / p.cp);
    const int sequences = static_cast<int>(std::max<std::int64_t>(1, local / seq));
    const double cf = m.capacity_factor > 0.0 ? m.capacity_factor : 1.0;
    const std::int64_t per_expert = (seq * m.topk + m.num_experts - 1) / m.num_experts;
    const auto capacity =
        static_cast<std::int64_t>(std::max(cf, std::floor(static_cast<double>(per_expert) * cf)));
    const std::int64_t slots = m.num_experts * capacity;
    f.push_back(einsum_op(c, "moe.dispatch", slots, h, seq, sequences));
    const double buffer = static_cast<double>(slots) * sequences * h * c.act_b;
    if (ep > 1) {
      f.push_back(
          comm_op("moe.dispatch_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, ep, buffer));
    }
    const std::int64_t rows = capacity * sequences * ep;  // per local expert
    add_mlp(c, f, "moe.experts", layer.mlp, rows, fe, local_experts);
    for (Op& op : f) {
      if (op.kind == OpKind::kGroupedGemm && op.name.rfind("moe.experts.", 0) == 0) {
        op.kind = OpKind::kGemm;  // einsum over equal capacity buffers
      }
    }
    if (ep > 1) {
      f.push_back(
          comm_op("moe.combine_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, ep, buffer));
    }
    f.push_back(einsum_op(c, "moe.combine", seq, h, slots, sequences));
  }
  if (m.shared_expert_ffn_hidden_size > 0) {
    tp_enter(c, f, "moe.shared");
    add_mlp(c, f, "moe.shared", layer.mlp, c.tokens, m.shared_expert_ffn_hidden_size / c.tp, 1);
    tp_exit(c, f, "moe.shared");
  }
}

// The EP collectives of one direction (dispatch or combine) for the layer's dispatcher
// (MG8 token_dispatcher.py): allgather gathers every token over ETP x EP (:281-303) and
// reduce-scatters the outputs back (:355-369); alltoall exchanges the routed copies over EP
// (:682-726, :837-880) with an all-gather / reduce-scatter over ETP behind / before it (:728-760,
// :796-835); flex runs one fused dispatch / combine over ETP x EP (:1809-2030), deduplicated per
// destination. Overlap: with moe_shared_expert_overlap the shared experts hide dispatch / combine;
// with overlap_moe_expert_parallel_comm another microbatch's compute does (the schedule pairs F
// and B; the EP part of each phase is what the pair can hide).
struct MoeComm {
  double local_tokens = 0.0;   // tokens entering the layer on this rank (sequence-parallel)
  double width_bytes = 0.0;    // bytes of one token in the dispatch width (h, or the latent)
  double routed_bytes = 0.0;   // routed copies of the local tokens x width bytes
  double a2a_bytes = 0.0;      // routed bytes after deduplication (flex)
  double forward_ratio = 0.0;  // node-aggregated over nodes: CommGroup::node_forward_ratio
  // Wire bytes over activation bytes of the forward dispatch and of the combine's backward
  // (RuntimeSpec::moe_dispatch_fwd_fp8 / moe_combine_bwd_fp8); 1: the activation dtype.
  double dispatch_fwd_wire = 1.0;
  double combine_bwd_wire = 1.0;
};

// MXFP8 on the wire: 1 byte per element and one E8M0 scale byte per block of 32 elements (the
// same 1.03 bytes as DeepEP's FP8 dispatch: 1 byte and an fp32 scale per 128 elements).
constexpr double kMxfp8WireBytes = 1.0 + 1.0 / 32.0;

// Fused permute / unpermute kernels gather whole token rows in one pass (priced as row gathers,
// like embedding lookups); unfused, PyTorch's sort / index_select / scatter (the permute class).
MemOpClass permute_class(const JobSpec& job) {
  return job.runtime.moe_permute_fusion ? MemOpClass::kEmbedding : MemOpClass::kPermute;
}

Overlap ep_overlap(const JobSpec& job) {
  return job.runtime.moe_overlap.has(MoeOverlap::kSharedExperts) ? Overlap::kWithSharedExperts
                                                                 : Overlap::kExposed;
}

void moe_dispatch(const Ctx& c, std::vector<Op>& f, const MoeSpec& m, const MoeComm& mc) {
  const ParallelSpec& p = c.job.parallel;
  const Overlap ov = ep_overlap(c.job);
  const int tp_ep = p.etp * p.ep;
  switch (c.job.runtime.moe_dispatcher) {
    case MoeDispatcher::kAllGather:
      if (tp_ep > 1) {
        // Routing map (1 byte) and probabilities (4 bytes) of every token, then the tokens.
        f.push_back(comm_op("moe.dispatch_all_gather_probs", GroupKind::kEtpEp,
                            CollectiveKind::kAllGather, tp_ep,
                            mc.local_tokens * m.num_experts * 5.0 * tp_ep));
        f.push_back(comm_op("moe.dispatch_all_gather", GroupKind::kEtpEp,
                            CollectiveKind::kAllGather, tp_ep,
                            mc.local_tokens * mc.width_bytes * tp_ep));
      }
      break;
    case MoeDispatcher::kAllToAll:
      if (p.ep > 1) {
        f.push_back(comm_op("moe.dispatch_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, p.ep,
                            mc.a2a_bytes, ov));
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      if (p.etp > 1) {
        f.push_back(comm_op("moe.etp_all_gather", GroupKind::kEtp, CollectiveKind::kAllGather,
                            p.etp, mc.routed_bytes * p.etp));
      }
      break;
    case MoeDispatcher::kFlex:
      if (tp_ep > 1) {
        // Quantized forward; its backward (the gradient coming back) in the activation dtype.
        f.push_back(comm_op("moe.dispatch", GroupKind::kEtpEp, CollectiveKind::kAllToAll, tp_ep,
                            mc.a2a_bytes * p.etp * mc.dispatch_fwd_wire, ov));
        f.back().bwd_bytes = mc.a2a_bytes * p.etp;
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      break;
  }
}

void moe_combine(const Ctx& c, std::vector<Op>& f, const MoeComm& mc) {
  const ParallelSpec& p = c.job.parallel;
  const Overlap ov = ep_overlap(c.job);
  const int tp_ep = p.etp * p.ep;
  switch (c.job.runtime.moe_dispatcher) {
    case MoeDispatcher::kAllGather:
      if (tp_ep > 1) {
        // Reduce-scattered in the probabilities' dtype (MG8 token_dispatcher.py:365-367).
        const double b = c.job.runtime.moe_probs_fp32 ? 4.0 : c.act_b;
        f.push_back(comm_op("moe.combine_reduce_scatter", GroupKind::kEtpEp,
                            CollectiveKind::kReduceScatter, tp_ep,
                            mc.local_tokens * mc.width_bytes / c.act_b * b * tp_ep));
      }
      break;
    case MoeDispatcher::kAllToAll:
      if (p.etp > 1) {
        f.push_back(comm_op("moe.etp_reduce_scatter", GroupKind::kEtp,
                            CollectiveKind::kReduceScatter, p.etp, mc.routed_bytes * p.etp));
      }
      if (p.ep > 1) {
        f.push_back(comm_op("moe.combine_a2a", GroupKind::kEp, CollectiveKind::kAllToAll, p.ep,
                            mc.a2a_bytes, ov));
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      break;
    case MoeDispatcher::kFlex:
      if (tp_ep > 1) {
        f.push_back(comm_op("moe.combine", GroupKind::kEtpEp, CollectiveKind::kAllToAll, tp_ep,
                            mc.a2a_bytes * p.etp, ov));
        f.back().bwd_bytes = mc.a2a_bytes * p.etp * mc.combine_bwd_wire;
        f.back().node_aggregated = c.job.runtime.moe_dedup_dispatch;
        f.back().node_forward_ratio = mc.forward_ratio;
      }
      break;
  }
}

void add_moe(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const JobSpec& job = c.job;
  const ParallelSpec& p = job.parallel;
  const MoeSpec& m = layer.moe;
  const std::int64_t h = job.model.hidden_size;
  const std::int64_t width = m.latent_size > 0 ? m.latent_size : h;
  // Tokens enter the MoE block sequence-parallel (Megatron requires SP with MoE and TP > 1).
  const std::int64_t local = c.tokens / c.tp;
  const bool shared = m.shared_expert_ffn_hidden_size > 0;
  auto shared_experts = [&] {
    tp_enter(c, f, "moe.shared");
    add_mlp(c, f, "moe.shared", layer.mlp, c.tokens, m.shared_expert_ffn_hidden_size / c.tp, 1);
    tp_exit(c, f, "moe.shared");
    if (m.shared_expert_gate) {
      f.push_back(act_gemm_op(c, "moe.shared.gate", local, 1, h));
      f.push_back(mem_op("moe.shared.gate_mul", 3.0 * static_cast<double>(local) * h * c.act_b));
    }
  };
  // Without an EP overlap the shared experts run before the router (MG2 transformer_config.py
  // :701-711); with one, between the router and the routed experts, beside the dispatch.
  const bool shared_beside_dispatch = !job.runtime.moe_overlap.empty();
  if (shared && !shared_beside_dispatch) shared_experts();
  f.push_back(act_gemm_op(c, "moe.router", local, m.num_experts, h));
  f.push_back(mem_op("moe.topk", 3.0 * static_cast<double>(local) * m.num_experts * 4.0));
  if (m.latent_size > 0) push_gemm(c, f, "moe.latent_down", local, width, h);
  const double routed =
      static_cast<double>(local) * m.topk * (m.capacity_factor > 0.0 ? m.capacity_factor : 1.0);
  MoeComm mc;
  mc.local_tokens = static_cast<double>(local);
  mc.width_bytes = static_cast<double>(width) * c.act_b;
  mc.routed_bytes = routed * mc.width_bytes;
  mc.a2a_bytes = mc.routed_bytes;
  if (job.runtime.moe_dispatch_fwd_fp8) mc.dispatch_fwd_wire = kMxfp8WireBytes / c.act_b;
  if (job.runtime.moe_combine_bwd_fp8) mc.combine_bwd_wire = kMxfp8WireBytes / c.act_b;
  if (job.runtime.moe_dedup_dispatch && p.ep > 1) {
    const CommGroup g = job_group(job, GroupKind::kEp);
    const MoePlacement place = job.runtime.moe_placement;
    mc.a2a_bytes *= dedup_dispatch_factor(m, p.ep, g.nodes, place);
    if (g.nodes > 1 && g.ranks_per_node > 1 && m.topk > 0) {
      // Each GPU's own copies (deduplicated per GPU) arrive through its node's counterparts.
      const double k = g.ranks_per_node;
      const double forwarded =
          mc.routed_bytes / m.topk * expected_destinations(m, p.ep, place) * (k - 1.0) / k;
      mc.forward_ratio = forwarded / mc.a2a_bytes;
    }
  }
  // Uneven routing: the busiest rank receives `load` times the mean routed rows; every rank waits
  // for it at the dispatch and combine, so its exchange and its experts' GEMMs set the pace.
  const double load = moe_rank_load_factor(job, m);
  mc.a2a_bytes *= load;
  if (job.runtime.moe_dispatcher != MoeDispatcher::kAllGather) {
    f.push_back(mem_op("moe.permute", 2.0 * mc.routed_bytes, permute_class(job)));
  }
  if (shared && shared_beside_dispatch) shared_experts();
  moe_dispatch(c, f, m, mc);
  // Static worst-case receive buffers (RuntimeSpec::moe_static_recv_factor): the local sort
  // after the dispatch (a gather into the expert-sorted layout) and the fan-in before the
  // combine stream the whole buffer.
  const double static_rows =
      p.ep > 1 ? std::max(0.0, job.runtime.moe_static_recv_factor) * mc.routed_bytes : 0.0;
  if (static_rows > 0.0) f.push_back(mem_op("moe.static_sort", 2.0 * static_rows));
  const int local_experts = std::max(1, m.num_experts / p.ep);
  if (job.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
    // The local experts' rows picked out of every gathered token.
    f.push_back(
        mem_op("moe.permute", 2.0 * routed * load * p.etp * mc.width_bytes, permute_class(job)));
  }
  const auto rows_total = static_cast<std::int64_t>(std::llround(routed * load * p.etp));
  const std::int64_t rows_per_expert = std::max<std::int64_t>(1, rows_total / local_experts);
  add_mlp(c, f, "moe.experts", layer.mlp, rows_per_expert, m.expert_ffn_hidden_size / p.etp,
          local_experts, width, !m.grouped_gemm);
  if (job.runtime.moe_dispatcher == MoeDispatcher::kAllGather) {
    f.push_back(
        mem_op("moe.unpermute", 2.0 * routed * load * p.etp * mc.width_bytes, permute_class(job)));
  }
  if (static_rows > 0.0) f.push_back(mem_op("moe.static_fan_in", 2.0 * static_rows));
  moe_combine(c, f, mc);
  if (job.runtime.moe_dispatcher != MoeDispatcher::kAllGather) {
    f.push_back(mem_op("moe.unpermute", 2.0 * mc.routed_bytes, permute_class(job)));
  }
  if (m.latent_norm) f.push_back(mem_op("moe.latent_norm", norm_bytes(c, local, width)));
  if (m.latent_size > 0) push_gemm(c, f, "moe.latent_up", local, h, width);
}

void add_ffn(const Ctx& c, std::vector<Op>& f, const LayerSpec& layer) {
  const std::int64_t h = c.job.model.hidden_size;
  add_hc_pre(c, f, "mlp");
  f.push_back(mem_op("mlp.norm", norm_bytes(c, c.tokens_sp, h)));
  if (!layer.is_moe) {
    tp_enter(c, f, "mlp");
    add_mlp(c, f, "mlp", layer.mlp, c.tokens, layer.mlp.ffn_hidden_size / c.tp, 1);
    tp_exit(c, f, "mlp");
  } else if (c.job.runtime.moe_dispatch != MoeDispatchKind::kPermute) {
    add_dense_moe(c, f, layer);
  } else {
    add_moe(c, f, layer);
  }
  add_hc_post(c, f, "mlp");
}

}  // namespace projector::workload_detail
