#include "projector/report/job_report.h"

#include <nlohmann/json.hpp>

namespace projector {

// TEMPORARY: replaced by the full rendering from `projector config` once it moves here.
std::string job_json(const JobSpec& job, int indent) {
  nlohmann::ordered_json j;
  j["schema_version"] = kJobJsonSchemaVersion;
  j["source"] = job.source;
  return j.dump(indent);
}

}  // namespace projector
