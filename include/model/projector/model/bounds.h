// Physical ranges of every number the models read (util/bounds.h): sizes at least 1 (0 where the
// field means "none"), widths, heads, experts, layers and the parameter count below their bounds,
// probabilities finite and in [0, 1], factors finite and non-negative. A job outside them is
// refused with the offending field named, never projected into negative, infinite or NaN
// numbers. The job builder checks a draft's model (naming the adapter's key and line) and the
// batches; check_job_invariants checks the batches of every job a projection receives (they change
// with each re-layout; the model does not).
#pragma once

#include <optional>
#include <string>

#include "projector/model/job.h"

namespace projector {

// One value out of range. `key` is the field's Megatron-LM argument name (ModelSpec's naming), so
// an adapter can map it back to its own key and line.
struct BoundViolation {
  std::string key;
  std::string message;
};

// The first model value out of range, in the order the fields are listed in model/job.h.
std::optional<BoundViolation> check_model_bounds(const ModelSpec& model);

// Batches and the schedule's size: microbatches per iteration and replica (at most
// kMaxMicrobatches), microbatches x virtual stages (kMaxScheduledChunks), tokens per microbatch
// (kMaxMicrobatchTokens), recompute layer counts. Expects the layout sizes already checked.
std::optional<BoundViolation> check_runtime_bounds(const RuntimeSpec& rt, const ParallelSpec& p,
                                                   std::int64_t num_microbatches);

}  // namespace projector
