#include "projector/cost/measured.h"

namespace projector {
namespace {

OpCost scaled(OpCost c, double ratio, const std::string& source) {
  c.time_s *= ratio;
  c.efficiency /= ratio;  // the achieved fraction of peak at the measured speed
  c.provenance = Provenance::kMeasured;
  c.source = source;
  return c;
}

}  // namespace

std::string_view to_string(CostClass c) {
  switch (c) {
    case CostClass::kGemm:
      return "gemm";
    case CostClass::kGroupedGemm:
      return "grouped_gemm";
    case CostClass::kAttentionFwd:
      return "attention_fwd";
    case CostClass::kAttentionBwd:
      return "attention_bwd";
    case CostClass::kElementwise:
      return "elementwise";
    case CostClass::kPermute:
      return "permute";
    case CostClass::kOptimizer:
      return "optimizer";
    case CostClass::kLoss:
      return "loss";
    case CostClass::kCount:
      break;
  }
  return "?";
}

CostClass cost_class(MemOpClass c) {
  switch (c) {
    case MemOpClass::kElementwise:
      return CostClass::kElementwise;
    case MemOpClass::kPermute:
    case MemOpClass::kEmbedding:  // gathers, as the permute class measures them
      return CostClass::kPermute;
    case MemOpClass::kOptimizer:
      return CostClass::kOptimizer;
    case MemOpClass::kLoss:
      return CostClass::kLoss;
  }
  return CostClass::kElementwise;
}

OpCost MeasuredScale::apply(CostClass c, OpCost model) const {
  const double r = ratio[static_cast<int>(c)];
  return r > 0.0 ? scaled(model, r, source) : model;
}

OpCost MeasuredScale::apply(CollectiveKind kind, const CommGroup& group, OpCost model) const {
  for (const MeasuredCollective& m : collectives) {
    if (m.kind == kind && m.group == group && m.ratio > 0.0) return scaled(model, m.ratio, source);
  }
  return model;
}

}  // namespace projector
