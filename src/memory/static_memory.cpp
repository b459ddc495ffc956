// Static memory of a rank (memory_detail.h): weights, gradients, optimizer state, FSDP window,
// fp8 weight copies, communicator buffers.
#include <algorithm>
#include <cmath>

#include "memory/memory_detail.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"

namespace projector::memory_detail {

namespace {

// fp8 weight copies kept for the step per GEMM weight: the quantised weight and its transpose
// (columnwise copy) for the backward GEMMs.
double fp8_weight_copy_bytes(const PrecisionSpec& p) {
  if (!p.quantized_gemms()) return 0.0;
  const double one = gemm_input_bytes(p);
  // fp8_param: the weight itself is the rowwise copy; the transposed copy unless not kept.
  return (p.fp8_param ? 0.0 : one) + (p.fp8_transpose_cached ? one : 0.0);
}

// The largest single decoder weight tensor one rank holds (after TP / EP sharding), in parameters:
// the unit a compiled (XLA) program gathers at a time (one all-gather per weight array), where
// FSDP2 gathers a whole layer. Gated MLPs keep their two input projections as separate arrays
// (MaxText wi_0 / wi_1).
double largest_weight_tensor(const JobSpec& job) {
  const ParallelSpec& p = job.parallel;
  const double h = static_cast<double>(job.model.hidden_size);
  const double tp = std::max(1, p.tp);
  const double etp = std::max(1, p.etp);
  const double ep = std::max(1, p.ep);
  // Decoder layers' arrays only: the embedding / output table is gathered at the start of the
  // forward and for the loss, not while the layers' backward peaks.
  double best = 0.0;
  for (const LayerSpec& l : job.model.layers) {
    const AttentionSpec& a = l.attention;
    const double heads = a.num_heads / tp;
    if (a.kind == AttentionKind::kCompressed) {
      const double qd = heads * a.head_dim;
      const double ol = a.compressed.o_lora_rank;
      best = std::max(
          {best, h * a.q_lora_rank, a.q_lora_rank * qd, qd * ol, a.compressed.o_groups * ol * h});
    } else if (a.kind == AttentionKind::kMla) {
      const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
      best = std::max({best, h * std::max(a.q_lora_rank, a.kv_lora_rank + a.qk_pos_emb_head_dim),
                       std::max(a.q_lora_rank, 0) * heads * qk,
                       a.kv_lora_rank * heads * (a.qk_head_dim + a.v_head_dim),
                       heads * a.v_head_dim * h});
    } else {
      best = std::max(best, h * heads * a.head_dim);
    }
    const double ffn = l.is_moe ? static_cast<double>(l.moe.shared_expert_ffn_hidden_size)
                                : static_cast<double>(l.mlp.ffn_hidden_size);
    best = std::max(best, h * ffn / tp);
    if (l.is_moe) {
      const double local = std::ceil(l.moe.num_experts / ep);
      best = std::max(best, local * h * static_cast<double>(l.moe.expert_ffn_hidden_size) / etp);
    }
  }
  return best;
}

// Static memory of a rank: weights, gradients, optimizer, FSDP window, fp8 copies, buffers.

}  // namespace

ComponentBytes static_memory(const Context& cx, const RankMemory& rm, bool has_moe) {
  const JobSpec& job = cx.job;
  const ParallelSpec& par = job.parallel;
  const RuntimeSpec& rt = job.runtime;
  const PrecisionSpec& prec = rt.precision;
  const AcceleratorSpec::Calibration& cal = job.cluster.accelerator.calibration;
  const double pb = bytes_per_element(prec.stored_weights_dtype());
  const double gather_b = bytes_per_element(prec.params_dtype);  // gathered for the GEMMs
  const double gb = bytes_per_element(rt.main_grads_dtype);
  const OptimizerBytes opt_b = optimizer_bytes_per_param(rt);
  const double master_b = opt_b.master_bytes;
  const double state_b = opt_b.state_bytes;
  const double copy_b = fp8_weight_copy_bytes(prec);
  const bool fsdp = par.fsdp != FsdpKind::kNone;
  const bool sharded_opt = par.distributed_optimizer || fsdp;
  // Hybrid sharding (HSDP, MaxText's data axis): state is sharded within dp x cp / replicate
  // ranks (experts: expert_dp / replicate) and replicated across the replicate groups.
  const double replicate = std::max(1, par.dp_replicate);
  const double dense_shard = std::max(1.0, std::max(1, job.dp()) * std::max(1, par.cp) / replicate);
  const double expert_shard = std::max(1.0, job.expert_dp() / replicate);
  // FSDP2 with a mixed-precision policy shards the fp32 master itself: no separate sharded copy
  // of the weights in the params dtype (Megatron's FSDP2 shards bf16 weights and keeps its own
  // master: RuntimeSpec::fsdp_param_is_master).
  const bool master_is_weight =
      par.fsdp == FsdpKind::kFsdp2 && master_b > 0.0 && rt.fsdp_param_is_master;
  const RankParams& P = rm.params;
  // Layers kept out of the recipe (first_last_layers_bf16) keep their weights in params dtype
  // and need no fp8 copies.
  const double q_gemm = P.dense_gemm_params - P.bf16_gemm_params;
  const double q_expert = P.expert_params - P.bf16_expert_params;
  const bool fp8_stored = prec.fp8_param && !prec.fp8_gather_only;
  const double w_dense =
      fp8_stored ? (P.dense_params - q_gemm) * pb + q_gemm * 1.0 : P.dense_params * pb;
  const double w_exp =
      fp8_stored ? q_expert * 1.0 + P.bf16_expert_params * pb : P.expert_params * pb;
  ComponentBytes s{};
  s[idx(MemoryComponent::kWeights)] =
      master_is_weight ? 0.0
                       : (fsdp ? w_dense / dense_shard + w_exp / expert_shard : w_dense + w_exp);
  // ZeRO-2 (ParallelSpec::grads_sharded): the main gradients are sharded like the optimizer
  // state, and one unit's gradient is whole until its reduce-scatter (the largest unit the rank
  // holds: a layer, or the embedding / output layer).
  const bool zero2 = par.grads_sharded && par.distributed_optimizer && !fsdp;
  s[idx(MemoryComponent::kGradients)] =
      fsdp || zero2 ? P.dense_params * gb / dense_shard + P.expert_params * gb / expert_shard +
                          (zero2 ? P.largest_unit_params * gb : 0.0)
                    : (P.dense_params + P.expert_params) * gb;
  const double opt_params = sharded_opt
                                ? P.dense_params / dense_shard + P.expert_params / expert_shard
                                : P.dense_params + P.expert_params;
  // Offloaded optimizer state (MaxText optimizer_memory_host_offload) lives in host memory.
  const double on_device = rt.optimizer_host_offload ? 0.0 : 1.0;
  s[idx(MemoryComponent::kMasterWeights)] = opt_params * master_b * on_device;
  s[idx(MemoryComponent::kOptimizerStates)] = opt_params * state_b * on_device;
  if (fsdp) {
    // Gathered: the unit in use and the prefetched next (reshard_after_forward), else every unit
    // of the rank from its forward to its backward; unsharded: one unit's gradient before its
    // reduce-scatter. XLA's unit is one weight array (in the compute dtype, and so is the gradient
    // it reduces: fsdp_layer.cpp), FSDP2's one layer.
    const bool compiled = rt.whole_step_compiled;
    const double unit = compiled ? std::min(P.largest_unit_params, largest_weight_tensor(job))
                                 : P.largest_unit_params;
    const double gathered =
        par.reshard_after_forward ? 2.0 * unit : P.dense_params + P.expert_params;
    s[idx(MemoryComponent::kFsdpUnsharded)] =
        gathered * gather_b + unit * (compiled ? gather_b : gb);
    s[idx(MemoryComponent::kFp8WeightCopies)] = 2.0 * unit * copy_b;
  } else {
    s[idx(MemoryComponent::kFp8WeightCopies)] =
        ((prec.fp8_dense ? q_gemm : 0.0) + (prec.fp8_experts ? q_expert : 0.0)) * copy_b;
  }
  double comm = cal.comm_buffer_bytes_per_group.value * rm.communicators;
  if (rt.deepep && has_moe) {
    int topk = 0;
    for (const LayerSpec& l : job.model.layers) topk = std::max(topk, l.is_moe ? l.moe.topk : 0);
    // Dispatch + combine buffers sized for every routed copy with 2x over-provisioning.
    comm += 2.0 * (cx.geo.tokens / cx.geo.sp * topk * 2.0) * cx.geo.h * cx.geo.e;
  }
  s[idx(MemoryComponent::kCommBuffers)] = comm;
  s[idx(MemoryComponent::kRuntimeContext)] = cal.runtime_context_bytes.value;
  s[idx(MemoryComponent::kWorkspace)] = cal.workspace_bytes.value;
  return s;
}

int communicator_count(const JobSpec& job, bool holds_embedding_or_output, bool has_moe) {
  const ParallelSpec& p = job.parallel;
  int n = 0;
  if (p.tp > 1) ++n;
  if (p.cp > 1) ++n;
  if (job.dp() > 1) ++n;
  if (p.cp > 1 && job.dp() * p.cp > 1) ++n;  // DP x CP group (distributed optimizer, grads)
  if (p.pp > 1) ++n;
  if (p.pp > 1 && holds_embedding_or_output) ++n;  // embedding group (first + last stage)
  if (p.tp * p.pp * p.cp > 1) ++n;                 // model-parallel group (grad norm, loss)
  if (has_moe) {
    if (p.ep > 1) ++n;
    if (p.etp > 1) ++n;
    if (job.expert_dp() > 1) ++n;
  }
  return n;
}

}  // namespace projector::memory_detail
