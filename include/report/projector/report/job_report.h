// The resolved job as JSON: what `projector config --json` prints and `--export_config` writes.
#pragma once

#include <string>

#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

inline constexpr int kJobJsonSchemaVersion = 1;

// Model (layer runs, parameter counts), parallel layout and stages, runtime, cluster, every
// applied default and warning.
std::string job_json(const JobSpec& job, int indent = 2);
std::string job_summary_text(const JobSpec& job);

}  // namespace projector
