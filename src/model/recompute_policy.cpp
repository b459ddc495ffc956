#include "projector/model/recompute_policy.h"

#include <vector>

#include "projector/model/accounting.h"

namespace projector {
namespace {

// Counts the matmuls of a block in forward order; odd ones are saved.
class MatmulCounter {
 public:
  bool next() { return ++count_ % 2 == 1; }

 private:
  int count_ = 0;
};

double fused_share(const std::vector<std::pair<bool, double>>& parts) {
  double saved = 0.0, total = 0.0;
  for (const auto& [keep, width] : parts) {
    total += width;
    if (keep) saved += width;
  }
  return total > 0.0 ? saved / total : 0.0;
}

}  // namespace

OpPolicySaved op_policy_saved(const LayerSpec& layer, const PrecisionSpec& precision) {
  OpPolicySaved s;
  // fp8 linears run scaled_mm, outside the save list: nothing of theirs is kept as an output.
  if (precision.fp8 != Fp8Recipe::kNone && precision.fp8_dense) return s;
  MatmulCounter mm;
  const AttentionSpec& a = layer.attention;
  auto saved = [&mm] { return mm.next() ? 1.0 : 0.0; };
  if (a.kind == AttentionKind::kMla) {
    if (a.q_lora_rank > 0) {
      s.q_down = saved();
      s.q_up = saved();
    } else {
      s.q_proj = saved();
    }
    s.kv_down = saved();
    s.kv_up = saved();
  } else {
    const double q = static_cast<double>(a.num_heads) * a.head_dim;
    const double kv = static_cast<double>(a.num_query_groups) * a.head_dim;
    const bool wq = mm.next();
    const bool wk = mm.next();
    const bool wv = mm.next();
    s.qkv = fused_share({{wq, q}, {wk, kv}, {wv, kv}});
  }
  s.out_proj = saved();
  const bool has_dense = !layer.is_moe;
  const bool has_shared = layer.is_moe && layer.moe.shared_expert_ffn_hidden_size > 0;
  if (has_dense || has_shared) {
    // w1 (gate) then w3 (up) when gated, then w2; the router gate is forced to recompute and
    // the routed experts run grouped GEMMs: neither is counted.
    const bool gate = layer.mlp.gated && mm.next();
    const bool up = mm.next();
    const bool down = mm.next();
    const double fc1 = layer.mlp.gated ? fused_share({{gate, 1.0}, {up, 1.0}}) : (up ? 1.0 : 0.0);
    (has_dense ? s.fc1 : s.shared_fc1) = fc1;
    (has_dense ? s.fc2 : s.shared_fc2) = down ? 1.0 : 0.0;
  }
  return s;
}

double op_policy_replayed_flops(const ModelSpec& model, const LayerSpec& layer,
                                const PrecisionSpec& precision, const RecomputeSpec& recompute,
                                const LayerFlops& f) {
  if (recompute.memory_budget >= 0.0) return (1.0 - recompute.memory_budget) * f.total();
  const OpPolicySaved s = op_policy_saved(layer, precision);
  const AttentionSpec& a = layer.attention;
  const double h = static_cast<double>(model.hidden_size);
  double attn = 0.0;
  if (a.kind == AttentionKind::kMla) {
    const double heads = a.num_heads;
    const double qk = a.qk_head_dim + a.qk_pos_emb_head_dim;
    attn += a.q_lora_rank > 0 ? (1.0 - s.q_down) * 2.0 * h * a.q_lora_rank +
                                    (1.0 - s.q_up) * 2.0 * a.q_lora_rank * heads * qk
                              : (1.0 - s.q_proj) * 2.0 * h * heads * qk;
    attn += (1.0 - s.kv_down) * 2.0 * h * (a.kv_lora_rank + a.qk_pos_emb_head_dim);
    attn += (1.0 - s.kv_up) * 2.0 * a.kv_lora_rank * heads * (a.qk_head_dim + a.v_head_dim);
  } else {
    attn += (1.0 - s.qkv) * f.qkv_flops;
  }
  attn += (1.0 - s.out_proj) * f.attn_out_flops;
  // A gated MLP's FLOPs are 2/3 in the fused fc1 (gate + up) and 1/3 in fc2.
  const double up = layer.mlp.gated ? 2.0 / 3.0 : 0.5;
  const double fc1 = layer.is_moe ? s.shared_fc1 : s.fc1;
  const double fc2 = layer.is_moe ? s.shared_fc2 : s.fc2;
  const double mlp = (1.0 - fc1) * up * f.mlp_flops + (1.0 - fc2) * (1.0 - up) * f.mlp_flops;
  return attn + mlp + f.router_flops + f.experts_flops;
}

}  // namespace projector
