// Rendering of memory projections: the per-rank breakdown table and the versioned JSON document.
#pragma once

#include <string>

#include "projector/memory/memory.h"
#include "projector/model/job.h"

namespace projector {

// Per-rank component table in GiB, the peak, the verdict, remedies, assumptions and defaults.
std::string memory_summary_text(const JobSpec& job, const MemoryReport& rep);
// schema_version MemoryReport::kSchemaVersion; every size in bytes.
std::string memory_json(const JobSpec& job, const MemoryReport& rep, int indent = 2);

}  // namespace projector
