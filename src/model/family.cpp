#include "projector/model/family.h"

#include <fmt/format.h>

#include "projector/util/error.h"

namespace projector {

std::string_view to_string(ProjectionStage s) {
  switch (s) {
    case ProjectionStage::kAccounting:
      return "parameter and FLOP accounting";
    case ProjectionStage::kMemory:
      return "memory projection";
    case ProjectionStage::kWorkload:
      return "workload model";
  }
  return "?";
}

bool family_modelled(ModelFamily family, ProjectionStage /*stage*/) {
  switch (family) {
    case ModelFamily::kDecoderLm:
      return true;
    case ModelFamily::kRecommendation:
      return true;  // the TorchRec DLRM back-end's providers (accounting_recsys, memory/recsys.cpp,
                    // workload/recsys.cpp)
  }
  return false;
}

void require_modelled(const ModelSpec& model, ProjectionStage stage) {
  if (family_modelled(model.family, stage)) return;
  throw NotModelledError(
      {}, "model",
      fmt::format("{} models ({}) are not modelled yet by the {}", to_string(model.family),
                  model.name.empty() ? "-" : model.name, to_string(stage)));
}

}  // namespace projector
