// Parameter and FLOP accounting: the one place that knows how many weights each module has and how
// many FLOPs a pass costs. Memory, workload and reports all call these.
#pragma once

#include <cstdint>

#include "projector/model/job.h"

namespace projector {

// Weights of one decoder layer, split by how they are sharded.
struct LayerParams {
  std::int64_t attention = 0;        // QKV / MLA projections, output projection, their biases
  std::int64_t attention_norms = 0;  // input norm, q/k norms, MLA latent norms (replicated over TP)
  std::int64_t mlp = 0;          // dense MLP, or the shared experts of an MoE layer (TP-sharded)
  std::int64_t mlp_norm = 0;     // pre-MLP norm (replicated over TP)
  std::int64_t router = 0;       // MoE router (replicated over TP and EP)
  std::int64_t expert_each = 0;  // one routed expert
  std::int64_t experts = 0;      // all routed experts (sharded over EP x ETP)

  std::int64_t total() const {
    return attention + attention_norms + mlp + mlp_norm + router + experts;
  }
  // Weights touched by one token: the routed experts count topk times, not num_experts times.
  std::int64_t active(int topk) const {
    return attention + attention_norms + mlp + mlp_norm + router + expert_each * topk;
  }
};

LayerParams layer_params(const ModelSpec& model, const LayerSpec& layer);

// Model-wide totals (padded vocabulary given explicitly so callers decide TP padding).
struct ModelParams {
  std::int64_t embedding = 0;     // word (+ learned position) embeddings
  std::int64_t output_layer = 0;  // 0 when tied to the embedding
  std::int64_t final_norm = 0;
  std::int64_t decoder = 0;  // all decoder layers
  std::int64_t mtp = 0;      // MTP modules (projection, norms, their layer)
  std::int64_t total = 0;
  std::int64_t active = 0;  // per token (MoE: topk routed experts + shared)
};

ModelParams model_params(const ModelSpec& model, std::int64_t padded_vocab);
// Convenience: padded to make_vocab_size_divisible_by x 1 (what published totals use: the raw
// vocabulary when it already is a multiple).
ModelParams model_params(const ModelSpec& model);

// Params of one MTP module: eh projection (2h x h), two input norms, one decoder layer and a norm.
std::int64_t mtp_module_params(const ModelSpec& model);

}  // namespace projector
