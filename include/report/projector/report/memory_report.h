// Rendering of memory projections: the per-rank breakdown table and the versioned JSON document.
#pragma once

#include <string>

#include "projector/job/spec.h"
#include "projector/memory/memory.h"
#include "projector/model/job.h"

namespace projector {

// Per-rank component table in GiB, the peak, the verdict, remedies, assumptions and defaults.
// The defaults applied are listed when they decide memory (recompute, batch, sharding, offload,
// hardware) and counted otherwise; `all_defaults` (--verbose) lists every one.
std::string memory_summary_text(const JobSpec& job, const MemoryReport& rep,
                                bool all_defaults = false);
// schema_version MemoryReport::kSchemaVersion; every size in bytes.
std::string memory_json(const JobSpec& job, const MemoryReport& rep, int indent = 2);

}  // namespace projector
