// The resolved job as JSON: what `projector config --json` prints and `--export_config` writes.
#pragma once

#include <string>

#include "projector/model/job.h"

namespace projector {

inline constexpr int kJobJsonSchemaVersion = 1;

std::string job_json(const JobSpec& job, int indent = 2);

}  // namespace projector
