// The memory projection of the recommendation family (memory/recsys.cpp). Internal to memory.
#pragma once

#include "projector/job/spec.h"
#include "projector/memory/memory.h"

namespace projector::memory_detail {

// FITS / AT RISK / OOM from the point and upper peaks against the capacity (memory.cpp).
MemoryVerdict verdict_of(double point, double upper, double capacity);

// Per-rank memory of a TorchRec DLRM job; `ranks` sorted heaviest first. The caller adds the
// calibration sources and the largest components.
MemoryReport project_recsys_memory(const JobSpec& job, const MemoryOptions& options);

}  // namespace projector::memory_detail
