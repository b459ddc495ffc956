// A published run's own framework config (RunEntry::config): reading `config:` / `args:` and the
// configs index, and turning the args into the loader's request. Internal to validate.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "projector/frontend/loader.h"
#include "projector/validate/validate.h"

namespace projector::validate_detail {

// `config:` (a path, relative to `file`'s directory) and `args:` (a mapping of CLI long option
// names without dashes to a value, `set` to a value or a list) of a runs entry or an index item.
// Throws InputError naming `file`, the line and the key of a malformed value or a missing file.
RunConfig read_run_config(const YAML::Node& config, const YAML::Node& args,
                          const std::string& file);

// The request `projector performance -c CONFIG --ARG VALUE ...` would make, with `data_dir` as
// the catalogue and no environment (a validation never depends on the shell it runs in). Throws
// InputError at the arg's line for an unknown option or a bad value.
LoadRequest load_request_of(const RunConfig& config, const std::string& data_dir);

// config_run.cpp: a run with `description: config`, mapped from its config alone (the job, the
// regime labels, the FLOP convention of its measurement). Not mapped, with the loader's error as
// the reason, when the config does not load.
MappedRun map_config_run(const RunEntry& e, MappingCatalogue& catalogue);

}  // namespace projector::validate_detail
