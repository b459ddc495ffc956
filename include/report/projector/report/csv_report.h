// CSV renderings of the JSON documents (`--csv FILE`; columns in docs/json-schema.md). Each takes
// the document's JSON text, so a CSV cell and the JSON field it comes from are the same number.
#pragma once

#include <string>

namespace projector {

// `memory --json` document -> one row per pipeline rank class, sizes in GiB.
std::string memory_csv(const std::string& memory_json);
// `performance --json` / `both --json` document -> one row per pipeline rank class; `both` adds
// that rank's memory columns.
std::string performance_csv(const std::string& performance_json);
// `validate --json` document -> one row per run of the runs file.
std::string validation_csv(const std::string& validate_json);

}  // namespace projector
