// Measured cost ratios: the cost provider a measured profile puts in front of the kernel models.
// A trace of the job (or of a reduced copy of it) on one node gives, per cost class, how long the
// kernels really took against what the models predict for the same ops; CostCache multiplies each
// model cost of that class by the ratio and labels it measured. For the traced configuration the
// priced ops therefore add up to the measured times; for another layout the measured efficiency
// carries over to the re-derived shapes. Collectives are only anchored on a group identical to the
// traced one; any other group (more nodes, another EP or TP size) keeps the collective model.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "projector/cost/collective.h"
#include "projector/cost/memory_ops.h"
#include "projector/cost/op_cost.h"

namespace projector {

// The classes a measured ratio is kept for: one per cost-model entry point (memory-bound ops by
// their MemOpClass). Collectives are matched separately (kind and group).
enum class CostClass : int {
  kGemm,
  kGroupedGemm,
  kAttentionFwd,
  kAttentionBwd,
  kElementwise,
  kPermute,
  kOptimizer,
  kLoss,
  kCount
};
inline constexpr int kNumCostClasses = static_cast<int>(CostClass::kCount);
std::string_view to_string(CostClass c);
CostClass cost_class(MemOpClass c);

struct MeasuredCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CommGroup group;     // the communicator the trace ran it on
  double ratio = 0.0;  // measured kernel time / collective model time on that group
};

struct MeasuredScale {
  std::string source;  // shown as the provenance detail, e.g. "trace.json.gz"
  std::array<double, kNumCostClasses> ratio{};  // measured / model; 0: not measured
  std::vector<MeasuredCollective> collectives;

  bool has(CostClass c) const { return ratio[static_cast<int>(c)] > 0.0; }
  // The model cost scaled by the class ratio (unchanged when the class was not measured).
  OpCost apply(CostClass c, OpCost model) const;
  OpCost apply(CollectiveKind kind, const CommGroup& group, OpCost model) const;
};

}  // namespace projector
