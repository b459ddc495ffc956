// The saved-tensor vocabulary: the tensors of one decoder layer that a rematerialisation
// (activation checkpointing) policy can keep on the device, move to host memory or recompute in
// the backward pass. One vocabulary for every framework: MaxText's checkpoint names (jax
// checkpoint_name tags, docs/maxtext.md), Megatron's recompute granularities and torchtitan's
// activation checkpointing all say which of these a layer keeps.
//
//   tensor            MaxText name(s)                       Megatron / torchtitan reading
//   layer_input       decoder_layer_input                   full recompute keeps only this
//   query_latent      query_wa_proj, mla_q                  MLA q down-projection output
//   kv_latent         kv_wa_proj, mla_kv                    MLA kv down-projection output
//   query/key/value   query_proj / key_proj / value_proj    QKV GEMM outputs (qkv_proj, kv_proj:
//                     (qkv_proj, kv_proj fused)             the fused forms)
//   context           context                               attention core output + logsumexp
//   attention_out     out_proj                              attention output projection
//   mlp_gate / mlp_up mlpwi_0 / mlpwi_1 (mlpwi fused)       first MLP GEMM outputs
//   mlp_out           mlpwo                                 second MLP GEMM output
//   moe_gate/up/out   moe_mlpwi_0 / moe_mlpwi_1 / moe_mlpwo routed experts' GEMM outputs
//
// Everything not listed (norm outputs, activation outputs, residual sums, router probabilities)
// is recomputed under any policy that keeps only named tensors, because no name can save it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace projector {

enum class LayerTensor : std::uint8_t {
  kLayerInput,
  kQueryLatent,
  kKvLatent,
  kQuery,
  kKey,
  kValue,
  kContext,
  kAttentionOut,
  kMlpGate,
  kMlpUp,
  kMlpOut,
  kMoeGate,
  kMoeUp,
  kMoeOut,
  kCount
};
inline constexpr int kNumLayerTensors = static_cast<int>(LayerTensor::kCount);
std::string_view to_string(LayerTensor t);
std::optional<LayerTensor> parse_layer_tensor(std::string_view name);

// Where a policy keeps a tensor between the forward and the backward pass.
enum class TensorPlacement : std::uint8_t { kRemat, kDevice, kHost };
std::string_view to_string(TensorPlacement p);

// A per-tensor policy (jax.checkpoint_policies.save_and_offload_only_these_names). The default
// keeps only the layer input on the device: full rematerialisation.
class TensorPolicy {
 public:
  constexpr TensorPolicy() { placement_[0] = TensorPlacement::kDevice; }
  constexpr TensorPlacement at(LayerTensor t) const {
    return placement_[static_cast<std::size_t>(t)];
  }
  constexpr void set(LayerTensor t, TensorPlacement p) {
    placement_[static_cast<std::size_t>(t)] = p;
  }
  constexpr bool kept(LayerTensor t) const { return at(t) != TensorPlacement::kRemat; }
  constexpr bool on_device(LayerTensor t) const { return at(t) == TensorPlacement::kDevice; }
  constexpr bool on_host(LayerTensor t) const { return at(t) == TensorPlacement::kHost; }
  constexpr bool any_on_host() const {
    for (TensorPlacement p : placement_) {
      if (p == TensorPlacement::kHost) return true;
    }
    return false;
  }
  friend constexpr bool operator==(const TensorPolicy&, const TensorPolicy&) = default;

 private:
  std::array<TensorPlacement, kNumLayerTensors> placement_{};
};

// A per-tensor policy a framework names (MaxText's remat_policy presets), as a re-layout may
// choose it. `searched`: a distinct memory / recompute trade a layout search should try. The
// framework's adapter owns the table (static storage); jobs refer to it.
struct NamedTensorPolicy {
  std::string_view name;
  TensorPolicy policy;
  bool searched = false;
};

}  // namespace projector
