// Per-tensor rematerialisation (RecomputeGranularity::kTensors): which forward ops the backward
// replays, from the dependencies of the saved-tensor vocabulary, and the host copies of the
// tensors a policy offloads.
//
// The backward of a decoder layer reads: the input of every weight GEMM (its weight gradient),
// Q, K, V, the context and its logsumexp (attention backward), the norm inputs, the activation
// inputs, and, for MoE, the experts' outputs (router-weight gradient). A read tensor that the
// policy does not keep is recomputed from its producer, whose inputs must then be available in
// turn; the layer input is always available (the scan's carry). So, e.g., with nothing kept
// (MaxText "full") every op except the second MLP GEMM and the last residual add is replayed:
// their outputs are only summed into the next layer's input, which is that layer's checkpoint.
#include <string>
#include <string_view>

#include "projector/job/accounting.h"
#include "projector/model/accounting.h"
#include "workload/build_detail.h"

namespace projector::workload_detail {
namespace {

bool kept(const TensorPolicy& p, LayerTensor t) {
  return p.kept(t);
}

bool qkv_recomputed(const TensorPolicy& p) {
  return !kept(p, LayerTensor::kQuery) || !kept(p, LayerTensor::kKey) ||
         !kept(p, LayerTensor::kValue);
}

bool attention_inputs_recomputed(const TensorPolicy& p) {
  return qkv_recomputed(p) || !kept(p, LayerTensor::kQueryLatent) ||
         !kept(p, LayerTensor::kKvLatent);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Names with a leading block prefix ("mtp." for the MTP layer's inner ops are not used: they keep
// the decoder layer's names) and an fp8 cast suffix reduce to the op the rule is written for.
std::string_view base_name(std::string_view n) {
  constexpr std::string_view kCast = ".fp8_cast";
  if (n.size() > kCast.size() && n.substr(n.size() - kCast.size()) == kCast) {
    n.remove_suffix(kCast.size());
  }
  return n;
}

}  // namespace

bool recomputed_by_tensor_policy(const JobSpec& job, const Op& op) {
  const TensorPolicy& p = job.runtime.recompute.tensors;
  const std::string_view n = base_name(op.name);
  // Nothing can name these: norm outputs, rotary, residual sums, activations, routing.
  for (std::string_view always :
       {"attn.input_norm", "attn.q_norm", "attn.kv_norm", "attn.residual", "mlp.norm", "mlp.act",
        "moe.router", "moe.topk", "moe.permute", "moe.experts.act", "moe.shared.act"}) {
    if (n == always) return true;
  }
  if (n == "attn.q_down") return !kept(p, LayerTensor::kQueryLatent);
  if (n == "attn.kv_down") return !kept(p, LayerTensor::kKvLatent);
  if (n == "attn.q_up" || n == "attn.q_proj") return !kept(p, LayerTensor::kQuery);
  if (n == "attn.kv_up") return !kept(p, LayerTensor::kKey) || !kept(p, LayerTensor::kValue);
  if (n == "attn.qkv") return qkv_recomputed(p);
  if (n == "attn.rope") return !kept(p, LayerTensor::kQuery) || !kept(p, LayerTensor::kKey);
  if (n == "attn.sp_all_gather") return attention_inputs_recomputed(p);
  if (n == "attn.core" || n == "attn.scores" || n == "attn.softmax" || n == "attn.dropout" ||
      n == "attn.context" || starts_with(n, "attn.cp_")) {
    return !kept(p, LayerTensor::kContext);
  }
  if (n == "attn.out_proj" || n == "attn.sp_reduce_scatter" || n == "attn.tp_all_reduce") {
    return !kept(p, LayerTensor::kAttentionOut);
  }
  const bool mlp_in = !kept(p, LayerTensor::kMlpGate) || !kept(p, LayerTensor::kMlpUp);
  if (n == "mlp.fc1" || n == "mlp.sp_all_gather" || n == "moe.shared.fc1" ||
      n == "moe.shared.sp_all_gather") {
    return mlp_in;
  }
  const bool experts_in = !kept(p, LayerTensor::kMoeGate) || !kept(p, LayerTensor::kMoeUp);
  if (n == "moe.experts.fc1" || n == "moe.dispatch_a2a" || n == "moe.etp_all_gather" ||
      n == "moe.dispatch") {
    return experts_in;
  }
  if (n == "moe.experts.fc2" || n == "moe.etp_reduce_scatter" || n == "moe.combine_a2a" ||
      n == "moe.unpermute") {
    return !kept(p, LayerTensor::kMoeOut);
  }
  // The second MLP GEMM, the last residual add, the combine einsum, the output head, FSDP and
  // offload copies: their outputs are not read by this layer's backward.
  return false;
}

std::vector<Op> offload_ops(const JobSpec& job, const LayerSpec& layer) {
  std::vector<Op> out;
  const RecomputeSpec& rc = job.runtime.recompute;
  if (rc.granularity != RecomputeGranularity::kTensors || !rc.tensors.any_on_host()) return out;
  for (int i = 0; i < kNumLayerTensors; ++i) {
    const auto t = static_cast<LayerTensor>(i);
    if (!rc.tensors.on_host(t) || !layer_tensor_needed(layer, t)) continue;
    const double bytes = layer_tensor_bytes(job, layer, t);
    if (bytes <= 0.0) continue;
    for (const WorkPhase ph : {WorkPhase::kF, WorkPhase::kB}) {
      Op op;
      op.name = std::string(ph == WorkPhase::kF ? "offload.d2h." : "offload.h2d.") +
                std::string(to_string(t));
      op.phase = ph;
      op.kind = OpKind::kHostTransfer;
      op.bytes = bytes;
      op.overlap = Overlap::kWithBlockCompute;
      out.push_back(op);
    }
  }
  return out;
}

}  // namespace projector::workload_detail
