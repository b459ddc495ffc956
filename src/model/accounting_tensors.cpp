// Sizes of the saved-tensor vocabulary (model/accounting.h layer_tensor_bytes).
#include <algorithm>

#include "projector/model/accounting.h"

namespace projector {

double layer_tensor_bytes(const JobSpec& job, const LayerSpec& layer, LayerTensor t) {
  const ParallelSpec& p = job.parallel;
  const RuntimeSpec& rt = job.runtime;
  const double e = bytes_per_element(rt.precision.params_dtype);
  const double cp = std::max(1, p.cp);
  const double tp = std::max(1, p.tp);
  const double sp = p.sequence_parallel ? tp : 1.0;
  const double seq = static_cast<double>(rt.seq_length) / cp;
  const double tokens = rt.micro_batch_size * seq;
  const double h = static_cast<double>(job.model.hidden_size);
  const AttentionSpec& a = layer.attention;
  const bool mla = a.kind == AttentionKind::kMla;
  const double heads = std::max(1.0, a.num_heads / tp);
  const double kv_heads = mla ? heads : p.kv_heads_per_rank(a.num_query_groups);
  const double d_qk = mla ? a.qk_head_dim + a.qk_pos_emb_head_dim : a.head_dim;
  const double d_v = mla ? a.v_head_dim : a.head_dim;
  const MoeSpec& m = layer.moe;
  const double dense_ffn = layer.is_moe ? static_cast<double>(m.shared_expert_ffn_hidden_size)
                                        : layer.mlp.ffn_hidden_size;
  const double etp = std::max(1, p.etp);
  const double cf = m.capacity_factor > 0.0 ? m.capacity_factor : 1.0;
  // Dense-all dispatch runs every expert on every token.
  const double routed = rt.moe_dispatch == MoeDispatchKind::kDenseAll ? m.num_experts : m.topk * cf;
  const double expert_tokens = layer.is_moe ? tokens / sp * routed * etp : 0.0;
  switch (t) {
    case LayerTensor::kLayerInput:
    case LayerTensor::kAttentionOut:
    case LayerTensor::kMlpOut:
      return tokens * h * e / sp;
    case LayerTensor::kQueryLatent:
      return mla ? tokens * a.q_lora_rank * e : 0.0;
    case LayerTensor::kKvLatent:
      return mla ? tokens * (a.kv_lora_rank + a.qk_pos_emb_head_dim) * e : 0.0;
    case LayerTensor::kQuery:
      return tokens * heads * d_qk * e;
    case LayerTensor::kKey:
      return tokens * kv_heads * d_qk * e;
    case LayerTensor::kValue:
      return tokens * kv_heads * d_v * e;
    case LayerTensor::kContext:
      return tokens * heads * d_v * e + rt.micro_batch_size * heads * seq * 4.0;
    case LayerTensor::kMlpGate:
      return layer.mlp.gated ? tokens * dense_ffn / tp * e : 0.0;
    case LayerTensor::kMlpUp:
      return tokens * dense_ffn / tp * e;
    case LayerTensor::kMoeGate:
      return layer.is_moe && layer.mlp.gated
                 ? expert_tokens * static_cast<double>(m.expert_ffn_hidden_size) / etp * e
                 : 0.0;
    case LayerTensor::kMoeUp:
      return layer.is_moe ? expert_tokens * static_cast<double>(m.expert_ffn_hidden_size) / etp * e
                          : 0.0;
    case LayerTensor::kMoeOut:
      return layer.is_moe ? expert_tokens * h * e : 0.0;
    case LayerTensor::kCount:
      break;
  }
  return 0.0;
}

bool layer_tensor_needed(const LayerSpec& layer, LayerTensor t) {
  switch (t) {
    case LayerTensor::kMlpOut:
      return false;
    case LayerTensor::kQueryLatent:
    case LayerTensor::kKvLatent:
      return layer.attention.kind == AttentionKind::kMla;
    case LayerTensor::kMoeGate:
    case LayerTensor::kMoeUp:
    case LayerTensor::kMoeOut:
      return layer.is_moe;
    case LayerTensor::kMlpGate:
      return layer.mlp.gated && (!layer.is_moe || layer.moe.shared_expert_ffn_hidden_size > 0);
    case LayerTensor::kMlpUp:
      return !layer.is_moe || layer.moe.shared_expert_ffn_hidden_size > 0;
    default:
      return true;
  }
}

}  // namespace projector
