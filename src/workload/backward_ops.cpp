// The backward of a block (layer_ops.h): the mirror of the forward op list, and what each
// recompute policy (full, selective modules, op policy, per-tensor) replays before it.
#include <algorithm>
#include <array>
#include <cmath>

#include "projector/cost/gemm.h"
#include "projector/job/spec.h"
#include "projector/model/accounting.h"
#include "projector/model/recompute_policy.h"
#include "workload/build_detail.h"
#include "workload/layer_ops.h"

namespace projector::workload_detail {

// The backward of a forward op list: B ops (input gradients, attention backward, collectives
// mirrored) in reverse order, then W ops (weight gradients).
void add_backward(const std::vector<Op>& fwd, std::vector<Op>& out, bool sp) {
  std::vector<Op> w_ops;
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    const Op& f = *it;
    if (f.forward_only) continue;
    Op b = f;
    b.phase = WorkPhase::kB;
    b.recompute = false;
    if (f.backward_only) {
      out.push_back(b);
      continue;
    }
    switch (f.kind) {
      case OpKind::kGemm:
      case OpKind::kGroupedGemm: {
        if (f.weightless) {
          // d(left) = dC . right^T and d(right) = left^T . dC: both activation gradients.
          const std::array<GemmShape, 2> g = weightless_backward_shapes(f.gemm);
          b.name = f.name + ".dgrad_a";
          b.gemm = g[0];
          b.flops = b.gemm.flops();
          out.push_back(b);
          b.name = f.name + ".dgrad_b";
          b.gemm = g[1];
          out.push_back(b);
          break;
        }
        b.name = f.name + ".dgrad";
        b.gemm = GemmShape{f.gemm.m, f.gemm.k, f.gemm.n, f.gemm.batch, f.gemm.dtype, f.gemm.out};
        b.gemm.blockwise = f.gemm.blockwise;
        b.flops = b.gemm.flops() * f.steps;
        out.push_back(b);
        Op w = f;
        w.phase = WorkPhase::kW;
        w.recompute = false;
        w.name = f.name + ".wgrad";
        w.gemm = GemmShape{f.gemm.n, f.gemm.k, f.gemm.m, f.gemm.batch, f.gemm.dtype, Dtype::kFp32};
        w.gemm.blockwise = f.gemm.blockwise;
        w.flops = w.gemm.flops() * f.steps;
        w_ops.push_back(w);
        break;
      }
      case OpKind::kAttention:
        b.name = f.name + ".bwd";
        b.flops = attention_bwd_flops(f.attention);
        out.push_back(b);
        break;
      case OpKind::kMemoryBound:
        b.name = f.name + ".bwd";
        b.bytes = f.bwd_bytes >= 0.0 ? f.bwd_bytes : 1.5 * f.bytes;
        out.push_back(b);
        break;
      case OpKind::kCollective:
        b.name = f.name + ".bwd";
        if (f.bwd_bytes >= 0.0) b.bytes = f.bwd_bytes;  // e.g. a quantized dispatch's gradient
        if (f.collective == CollectiveKind::kAllGather && f.group == GroupKind::kTp && sp) {
          b.collective = CollectiveKind::kReduceScatter;
        } else if (f.collective == CollectiveKind::kReduceScatter) {
          b.collective = CollectiveKind::kAllGather;
        } else if (f.collective == CollectiveKind::kAllGather) {
          b.collective = CollectiveKind::kReduceScatter;
        }
        out.push_back(b);
        break;
      case OpKind::kHostTransfer:
        break;  // offload copies are added per phase by the layer (offload_ops)
    }
  }
  // Without SP the conjugate of the forward all-reduce after a row-parallel GEMM is an all-reduce
  // of the input gradient of the column-parallel GEMM: same count and size, already mirrored.
  for (Op& w : w_ops) out.push_back(std::move(w));
}

bool layer_fully_recomputed(const JobSpec& job, int layer_index) {
  const RecomputeSpec& r = job.runtime.recompute;
  if (std::find(r.layer_ids.begin(), r.layer_ids.end(), layer_index) != r.layer_ids.end()) {
    return true;
  }
  if (r.granularity != RecomputeGranularity::kFull) return false;
  if (r.method == RecomputeMethod::kUniform) return true;
  // Block: the first num_layers layers of each model chunk are recomputed (none for 0, as
  // Megatron's recompute.py block loop, and as memory and FLOP accounting count it).
  if (r.num_layers <= 0) return false;
  for (const VirtualStage& st : job.parallel.stages) {
    if (layer_index >= st.first_layer && layer_index < st.first_layer + st.num_layers) {
      return layer_index - st.first_layer < r.num_layers;
    }
  }
  return false;
}

bool module_selected(const JobSpec& job, RecomputeModule module) {
  const RecomputeSpec& r = job.runtime.recompute;
  return r.granularity == RecomputeGranularity::kSelective && r.modules.has(module);
}

// Which forward ops a selective recompute replays. The moe module (and mlp on a MoE layer)
// checkpoints the MoE layer's whole forward, its token dispatch and combine included (MG8
// moe_layer.py: custom_forward under tensor_parallel.checkpoint); no other module replays a
// collective.
bool selectively_recomputed(const JobSpec& job, const Op& op) {
  const std::string& n = op.name;
  const bool moe_block = n.rfind("moe.", 0) == 0;
  if (moe_block && (module_selected(job, RecomputeModule::kMoe) ||
                    module_selected(job, RecomputeModule::kMlp))) {
    return true;
  }
  if (op.kind == OpKind::kCollective) return false;
  if (module_selected(job, RecomputeModule::kCoreAttn) && n == "attn.core") return true;
  if (module_selected(job, RecomputeModule::kLayernorm) &&
      (n == "attn.input_norm" || n == "mlp.norm"))
    return true;
  if (module_selected(job, RecomputeModule::kMlaUpProj) && (n == "attn.q_up" || n == "attn.kv_up"))
    return true;
  if (module_selected(job, RecomputeModule::kMoeAct) && n == "moe.experts.act") return true;
  if (module_selected(job, RecomputeModule::kMlp) && n.rfind("mlp.", 0) == 0 && n != "mlp.residual")
    return true;
  if (module_selected(job, RecomputeModule::kSharedExperts) && n.rfind("moe.shared", 0) == 0)
    return true;
  return false;
}

// The share of a forward op that per-op selective checkpointing replays (model/recompute_policy.h):
// the attention core and the collectives are saved, GEMMs keep the saved share of their output
// features, every other op is recomputed. 0: nothing replayed.
double op_policy_replay(const OpPolicySaved& s, const Op& op) {
  if (op.kind == OpKind::kCollective || op.kind == OpKind::kAttention) return 0.0;
  if (op.kind != OpKind::kGemm) return 1.0;
  const std::pair<const char*, double> saved[] = {{"attn.qkv", s.qkv},
                                                  {"attn.q_proj", s.q_proj},
                                                  {"attn.q_down", s.q_down},
                                                  {"attn.q_up", s.q_up},
                                                  {"attn.kv_down", s.kv_down},
                                                  {"attn.kv_up", s.kv_up},
                                                  {"attn.out_proj", s.out_proj},
                                                  {"mlp.fc1", s.fc1},
                                                  {"mlp.fc2", s.fc2},
                                                  {"moe.shared.fc1", s.shared_fc1},
                                                  {"moe.shared.fc2", s.shared_fc2}};
  for (const auto& [name, share] : saved) {
    if (op.name == name) return 1.0 - share;
  }
  return 1.0;  // the router and anything else outside the save list
}

// Bytes of PyTorch's eager decompositions relative to the fused kernels priced above (each op
// reads and writes whole tensors): RMSNorm as upcast, pow, mean, rsqrt, multiply, downcast,
// weight multiply = 36 bytes per bf16 element against 4 fused; rotary embedding through fp32
// complex numbers (upcast, complex multiply, downcast) = 28 against 4; SwiGLU as silu then
// multiply = 10 bytes per intermediate element against 6.
void apply_eager_elementwise(std::vector<Op>& fwd) {
  for (Op& op : fwd) {
    if (op.kind != OpKind::kMemoryBound) continue;
    const std::string& n = op.name;
    double factor = 1.0;
    if (n.ends_with("norm") || n.ends_with("norms")) factor = 36.0 / 4.0;
    if (n == "attn.rope") factor = 28.0 / 4.0;
    if (n.ends_with(".act")) factor = 10.0 / 6.0;
    op.bytes *= factor;
    if (op.bwd_bytes >= 0.0) op.bwd_bytes *= factor;
  }
}

void finish_block(const JobSpec& job, std::vector<Op>& fwd, bool full_recompute, LayerWork& lw,
                  bool sp, const LayerSpec* layer) {
  if (!job.runtime.fused_elementwise) apply_eager_elementwise(fwd);
  std::vector<Op> ops;
  for (const Op& f : fwd) {
    if (!f.backward_only) ops.push_back(f);
  }
  const bool op_policy = layer != nullptr && !full_recompute &&
                         job.runtime.recompute.granularity == RecomputeGranularity::kOpPolicy;
  if (op_policy) {
    const OpPolicySaved saved = op_policy_saved(*layer, job.runtime.precision);
    for (const Op& f : fwd) {
      const double share = f.backward_only ? 0.0 : op_policy_replay(saved, f);
      if (share <= 0.0) continue;
      Op r = f;
      r.phase = WorkPhase::kB;
      r.recompute = true;
      r.name = f.name + ".recompute";
      if (share < 1.0 && r.kind == OpKind::kGemm) {
        // The replayed linears of a fused GEMM: the same rows and inputs, fewer output features.
        r.gemm.n = std::max<std::int64_t>(1, std::llround(static_cast<double>(f.gemm.n) * share));
        r.flops = r.gemm.flops();
        r.bytes *= share;
      }
      ops.push_back(r);
    }
  }
  // distribute_saved_activations: the checkpoint's hidden states are all-gathered over TP before
  // the replay, once per checkpoint (a group of num_layers layers with the uniform method).
  const RecomputeSpec& rcs = job.runtime.recompute;
  if (full_recompute && rcs.distribute_saved && job.parallel.tp > 1) {
    const double per_checkpoint = rcs.method == RecomputeMethod::kUniform
                                      ? static_cast<double>(std::max(1, rcs.num_layers))
                                      : 1.0;
    const Ctx c = make_ctx(job);
    Op g = comm_op("layer.checkpoint_all_gather", GroupKind::kTp, CollectiveKind::kAllGather, c.tp,
                   static_cast<double>(c.tokens) * job.model.hidden_size * c.act_b / per_checkpoint,
                   Overlap::kExposed);
    g.phase = WorkPhase::kB;
    ops.push_back(g);
  }
  // Recompute forward, replayed at the start of the backward.
  const bool tensor_policy = job.runtime.recompute.granularity == RecomputeGranularity::kTensors;
  for (const Op& f : fwd) {
    if (op_policy) break;
    if (f.backward_only) continue;
    if (full_recompute || selectively_recomputed(job, f) ||
        (tensor_policy && workload_detail::recomputed_by_tensor_policy(job, f))) {
      Op r = f;
      r.phase = WorkPhase::kB;
      r.recompute = true;
      r.name = f.name + ".recompute";
      ops.push_back(r);
    }
  }
  add_backward(fwd, ops, sp);
  if (job.runtime.precision.wgrad_in_params_dtype()) {
    // rowwise_with_gw_hp, or fp8_wgrad off: the weight-gradient GEMMs run in the activation
    // dtype.
    for (Op& op : ops) {
      if (op.phase == WorkPhase::kW && op.gemm.dtype != job.runtime.precision.params_dtype &&
          (op.kind == OpKind::kGemm || op.kind == OpKind::kGroupedGemm)) {
        op.gemm.dtype = job.runtime.precision.params_dtype;
      }
    }
  }
  lw.ops = std::move(ops);
}

}  // namespace projector::workload_detail
