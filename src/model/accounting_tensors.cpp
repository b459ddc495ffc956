// Sizes of the saved-tensor vocabulary (model/accounting.h layer_tensor_bytes).
#include <algorithm>

#include "projector/model/accounting.h"

namespace projector {

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
