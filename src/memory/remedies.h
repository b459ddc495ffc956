// What would lower a job's peak: each framework's knobs, re-projected (memory/remedies.cpp).
#pragma once

#include "projector/job/spec.h"
#include "projector/memory/memory.h"

namespace projector::memory_detail {

// Appends to report.remedies every change of the job's knobs (recompute, sharding, sequence
// parallelism, micro batch, twice the stages; MaxText's own) that obeys the job builder's rules
// and lowers the projected peak by at least 1 %, re-projected with `options` minus remedies.
void add_remedies(const JobSpec& job, const MemoryOptions& options, MemoryReport& report);

}  // namespace projector::memory_detail
