// Model families behind one interface: each projection stage (parameter / FLOP accounting, memory,
// workload) asks here whether the job's family is modelled, and dispatches on ModelSpec::family.
// Adding a family: its data types in model/, a case in each stage's dispatch, and a row below.
#pragma once

#include <cstdint>
#include <string_view>

#include "projector/model/job.h"
#include "projector/util/error.h"

namespace projector {

enum class ProjectionStage : std::uint8_t { kAccounting, kMemory, kWorkload };
std::string_view to_string(ProjectionStage s);

// True when `stage` has a provider for `family`.
bool family_modelled(ModelFamily family, ProjectionStage stage);

// A model the projections do not model yet (an InputError with key "model", exit code 2), so
// callers such as the validation harness can tell it apart from bad input.
class NotModelledError : public InputError {
 public:
  using InputError::InputError;
};

// Throws NotModelledError "<family> models are not modelled yet by the <stage>" unless the
// model's family is modelled by `stage`.
void require_modelled(const ModelSpec& model, ProjectionStage stage);

}  // namespace projector
