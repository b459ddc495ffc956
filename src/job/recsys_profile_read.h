// Reading the `recsys:` block of a framework profile (job/recsys_profile.h). Internal to job.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "projector/job/recsys_profile.h"

namespace projector::job_detail {

// `{key: {value, source}}` entries into `out` (replacing inherited ones). InputError naming the
// file, line and key for an unknown key, a missing source or a value that is not a scalar or a
// list of scalars.
void read_recsys_profile(const std::string& file, const YAML::Node& block, RecsysProfile& out);

}  // namespace projector::job_detail
