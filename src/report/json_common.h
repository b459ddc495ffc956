// JSON pieces shared by every document the report module writes (internal).
#pragma once

#include <nlohmann/json.hpp>

#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector::report_detail {

using Json = nlohmann::ordered_json;  // keeps fields in the documented order

// tp, pp, vpp, cp, ep, etp, dp, expert_dp and the sharding / overlap switches.
Json parallel_json(const JobSpec& job);
// [{"key", "value", "reason"}] of every default the tool applied.
Json defaults_json(const JobSpec& job);

}  // namespace projector::report_detail
