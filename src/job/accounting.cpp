// The model's accounting over a whole job (job/accounting.h).
#include "projector/job/accounting.h"

#include <algorithm>

#include "projector/job/spec.h"
#include "projector/model/family.h"
#include "projector/model/recsys_accounting.h"

namespace projector {

ModelFlops model_flops(const JobSpec& job, const FlopOptions& options) {
  require_modelled(job.model, ProjectionStage::kAccounting);
  const std::int64_t seq = job.runtime.seq_length;
  ModelFlops r;
  r.tokens = static_cast<double>(job.tokens_per_iteration());
  if (job.model.family == ModelFamily::kRecommendation) {
    // A sample is one "token" (seq_length 1): its dense GEMMs and HSTU attention, 3x forward.
    r.forward_per_token.decoder_flops = recsys_forward_flops_per_sample(job.model.recommendation);
    r.model_flops = r.hardware_flops = 3.0 * r.forward_per_token.total() * r.tokens;
    return r;
  }
  r.forward_per_token = forward_flops_per_token(
      job.model, seq, padded_vocab_size(job.model, job.parallel.tp), options);
  r.model_flops = 3.0 * r.forward_per_token.total() * r.tokens;
  r.recompute_flops = recompute_forward_flops_per_token(
                          job.model, seq, job.runtime.recompute, job.parallel.stages,
                          job.parallel.pp * job.parallel.vpp, options, job.runtime.precision) *
                      r.tokens;
  // A vocab-tiled loss recomputes every tile's logits in its backward (RuntimeSpec::vocab_tiles).
  if (job.runtime.vocab_tiles > 1 && !job.runtime.loss_grad_in_forward) {
    r.recompute_flops += r.forward_per_token.logits_flops * r.tokens;
  }
  r.hardware_flops = r.model_flops + r.recompute_flops;
  return r;
}

double maxtext_flops(const JobSpec& job) {
  FlopOptions causal;
  causal.causal_attention_half = true;
  const ModelFlops f = model_flops(job, causal);
  const double h = static_cast<double>(job.model.hidden_size);
  const double vocab = static_cast<double>(padded_vocab_size(job.model, job.parallel.tp));
  // Per MTP module MaxText adds only the layer: not the 2h x h projection nor the logits.
  const double mtp_extra = job.model.mtp_num_layers * (2.0 * 2.0 * h * h + 2.0 * h * vocab);
  return f.model_flops - 3.0 * mtp_extra * f.tokens;
}

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

}  // namespace projector
