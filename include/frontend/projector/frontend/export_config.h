// `--export_config FILE.yaml`: the resolved experiment written back in Primus' own keys, so that
// what the projection read can be launched (or diffed against the experiment) as is.
#pragma once

#include <string>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"

namespace projector {

// A Primus experiment YAML: `modules.<trainer>.framework` and, under `overrides:`, every argument
// of the merged trainer namespace (module preset, model preset, the module's keys, overrides,
// --set), with the layout the job was projected at (environment and CLI flags applied) written
// over the Megatron parallel and batch arguments. The presets are inlined, so the file needs no
// Primus checkout.
std::string resolved_config_yaml(const ResolvedConfig& config, const JobSpec& job);

}  // namespace projector
