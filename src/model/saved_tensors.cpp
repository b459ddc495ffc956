#include "projector/model/saved_tensors.h"

#include <iterator>

namespace projector {
namespace {

constexpr std::string_view kNames[] = {
    "layer_input",   "query_latent", "kv_latent", "query",   "key",      "value",  "context",
    "attention_out", "mlp_gate",     "mlp_up",    "mlp_out", "moe_gate", "moe_up", "moe_out"};
static_assert(std::size(kNames) == kNumLayerTensors);

}  // namespace

std::string_view to_string(LayerTensor t) {
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::optional<LayerTensor> parse_layer_tensor(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<LayerTensor>(i);
  }
  return std::nullopt;
}

std::string_view to_string(TensorPlacement p) {
  switch (p) {
    case TensorPlacement::kRemat:
      return "remat";
    case TensorPlacement::kDevice:
      return "device";
    case TensorPlacement::kHost:
      return "host";
  }
  return "?";
}

}  // namespace projector
