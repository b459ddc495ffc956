// Physical ranges of the job model's numbers (model/bounds.h).
#include "projector/model/bounds.h"

#include <fmt/format.h>

#include <cmath>

#include "projector/util/bounds.h"

namespace projector {
namespace {

// Checks in listing order; the first violation is kept.
class Checker {
 public:
  void range(const char* key, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (!found_ && (v < lo || v > hi)) {
      found_ = BoundViolation{key, fmt::format("must be between {} and {}, got {}", lo, hi, v)};
    }
  }
  void fraction(const char* key, double v) {
    if (!found_ && !(std::isfinite(v) && v >= 0.0 && v <= 1.0)) {
      found_ = BoundViolation{key, fmt::format("must be a probability in [0, 1], got {}", v)};
    }
  }
  void non_negative(const char* key, double v) {
    if (!found_ && !(std::isfinite(v) && v >= 0.0)) {
      found_ = BoundViolation{key, fmt::format("must be finite and not negative, got {}", v)};
    }
  }
  void fail(const char* key, std::string message) {
    if (!found_) found_ = BoundViolation{key, std::move(message)};
  }
  bool ok() const { return !found_.has_value(); }
  std::optional<BoundViolation> result() { return std::move(found_); }

 private:
  std::optional<BoundViolation> found_;
};

void check_attention(Checker& c, const AttentionSpec& a) {
  c.range("num_attention_heads", a.num_heads, 1, kMaxHeads);
  c.range("num_query_groups", a.num_query_groups, 1, kMaxHeads);
  if (a.kind == AttentionKind::kMla) {
    c.range("q_lora_rank", a.q_lora_rank, 0, kMaxWidth);
    c.range("kv_lora_rank", a.kv_lora_rank, 1, kMaxWidth);
    c.range("qk_head_dim", a.qk_head_dim, 1, kMaxHeadDim);
    c.range("qk_pos_emb_head_dim", a.qk_pos_emb_head_dim, 0, kMaxHeadDim);
    c.range("v_head_dim", a.v_head_dim, 1, kMaxHeadDim);
  }
  if (a.kind == AttentionKind::kCompressed) {
    const CompressedAttentionSpec& x = a.compressed;
    c.range("q_lora_rank", a.q_lora_rank, 1, kMaxWidth);
    c.range("qk_pos_emb_head_dim", a.qk_pos_emb_head_dim, 0, a.head_dim);
    c.range("o_groups", x.o_groups, 1, kMaxHeads);
    c.range("o_lora_rank", x.o_lora_rank, 0, kMaxWidth);
    c.range("index_topk", x.index_topk, 0, kMaxCount);
    c.range("index_head_dim", x.index_head_dim, 0, kMaxHeadDim);
    c.range("index_n_heads", x.index_n_heads, 0, kMaxHeads);
  }
  c.range("kv_channels", a.head_dim, 1, kMaxHeadDim);
  c.range("window_size", a.sliding_window, 0, kMaxCount);
  c.range("chunk_attn_window_size", a.chunk_window, 0, kMaxCount);
}

void check_layer(Checker& c, const LayerSpec& l) {
  check_attention(c, l.attention);
  c.range("ffn_hidden_size", l.mlp.ffn_hidden_size, l.is_moe ? 0 : 1, kMaxWidth);
  if (!l.is_moe) return;
  const MoeSpec& m = l.moe;
  c.range("num_experts", m.num_experts, 1, kMaxExperts);
  c.range("moe_router_topk", m.topk, 1, std::max(1, m.num_experts));
  c.range("moe_ffn_hidden_size", m.expert_ffn_hidden_size, 1, kMaxWidth);
  c.range("moe_shared_expert_intermediate_size", m.shared_expert_ffn_hidden_size, 0, kMaxWidth);
  c.non_negative("moe_expert_capacity_factor", m.capacity_factor);
}

// An upper estimate of one layer's weights, in double (nothing can overflow here).
double layer_weights_estimate(double h, const LayerSpec& l) {
  const AttentionSpec& a = l.attention;
  const double heads = a.num_heads;
  double w = 4.0 * h * heads * a.head_dim;  // q, k, v (at most `heads` groups) and the output
  if (a.kind == AttentionKind::kMla) {
    w += h * a.q_lora_rank + (a.q_lora_rank + h) * heads * (a.qk_head_dim + a.qk_pos_emb_head_dim);
    w += (h + heads * (a.qk_head_dim + a.v_head_dim)) * (a.kv_lora_rank + a.qk_pos_emb_head_dim);
    w += heads * a.v_head_dim * h;
  }
  w += 3.0 * h * static_cast<double>(l.mlp.ffn_hidden_size);
  if (l.is_moe) {
    const MoeSpec& m = l.moe;
    w += (3.0 * static_cast<double>(m.expert_ffn_hidden_size) + 1.0) * h * m.num_experts;
    w += 3.0 * h * static_cast<double>(m.shared_expert_ffn_hidden_size);
  }
  return w;
}

void check_decoder(Checker& c, const ModelSpec& m) {
  c.range("hidden_size", m.hidden_size, 1, kMaxWidth);
  c.range("hc_mult", m.hc_mult, 1, kMaxHeads);
  c.range("vocab_size", m.vocab_size, 1, kMaxWidth);
  c.range("make_vocab_size_divisible_by", m.make_vocab_size_divisible_by, 1, kMaxWidth);
  c.range("max_position_embeddings", m.max_position_embeddings, 0, kMaxSeqLength);
  c.range("num_layers", m.num_layers(), 1, kMaxLayers);
  c.range("mtp_num_layers", m.mtp_num_layers, 0, kMaxLayers - m.num_layers());
  c.fraction("attention_dropout", m.attention_dropout);
  c.fraction("hidden_dropout", m.hidden_dropout);
  if (!c.ok()) return;
  const double h = static_cast<double>(m.hidden_size);
  double weights = h * (2.0 * static_cast<double>(m.vocab_size) + m.max_position_embeddings);
  for (const LayerSpec& l : m.layers) {
    check_layer(c, l);
    if (!c.ok()) return;
    weights += layer_weights_estimate(h, l);
  }
  if (!m.layers.empty()) weights += m.mtp_num_layers * layer_weights_estimate(h, m.layers.back());
  if (weights > kMaxParameters) {
    c.fail("hidden_size",
           fmt::format("the model would have about {:.3g} parameters, more than the {:.0e} this "
                       "tool models",
                       weights, kMaxParameters));
  }
}

void check_recommendation(Checker& c, const RecommendationSpec& r) {
  c.range("dense_features", r.dense_features, 0, kMaxWidth);
  for (const EmbeddingTableSpec& t : r.tables) {
    c.range("num_embeddings_per_feature", t.num_embeddings, 1, std::int64_t{1} << 40);
    c.range("embedding_dim", t.embedding_dim, 1, kMaxWidth);
    c.range("multi_hot_sizes", t.pooling_factor, 1, kMaxCount);
  }
  for (const DenseStackSpec* s : {&r.bottom_mlp, &r.top_mlp}) {
    for (const std::int64_t w : s->layer_sizes) c.range("layer_sizes", w, 1, kMaxWidth);
  }
  c.range("dcn_num_layers", r.dcn_num_layers, 0, kMaxLayers);
  c.range("dcn_low_rank_dim", r.dcn_low_rank_dim, 0, kMaxWidth);
}

}  // namespace

std::optional<BoundViolation> check_model_bounds(const ModelSpec& model) {
  Checker c;
  if (model.family == ModelFamily::kDecoderLm) {
    check_decoder(c, model);
  } else {
    check_recommendation(c, model.recommendation);
  }
  return c.result();
}

std::optional<BoundViolation> check_runtime_bounds(const RuntimeSpec& rt, const ParallelSpec& p,
                                                   std::int64_t num_microbatches) {
  Checker c;
  c.range("micro_batch_size", rt.micro_batch_size, 1, kMaxGlobalBatch);
  c.range("global_batch_size", rt.global_batch_size, 1, kMaxGlobalBatch);
  c.range("seq_length", rt.seq_length, 1, kMaxSeqLength);
  c.range("num_vocab_tiling", rt.vocab_tiles, 1, kMaxCount);
  if (!c.ok()) return c.result();
  const std::int64_t tokens = static_cast<std::int64_t>(rt.micro_batch_size) * rt.seq_length;
  if (tokens > kMaxMicrobatchTokens) {
    c.fail("micro_batch_size",
           fmt::format("micro_batch_size x seq_length = {} x {} = {} tokens per microbatch is "
                       "more than the {} this tool models",
                       rt.micro_batch_size, rt.seq_length, tokens, kMaxMicrobatchTokens));
  }
  const std::int64_t m = num_microbatches;
  const double chunks = static_cast<double>(m) * p.pp * p.vpp;
  if (m > kMaxMicrobatches || chunks > static_cast<double>(kMaxScheduledChunks)) {
    c.fail("global_batch_size",
           fmt::format("{} microbatches per iteration (global batch / (MBS x DP)) over {} virtual "
                       "stages: more than the {} microbatches or {} microbatch-stages this tool "
                       "simulates",
                       m, static_cast<std::int64_t>(p.pp) * p.vpp, kMaxMicrobatches,
                       kMaxScheduledChunks));
  }
  const RecomputeSpec& rc = rt.recompute;
  c.range("recompute_num_layers", rc.num_layers, 0, kMaxLayers);
  for (const int id : rc.layer_ids) c.range("recompute_layer_ids", id, 0, kMaxLayers - 1);
  return c.result();
}

}  // namespace projector
