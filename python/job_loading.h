// The module's one call into the front-end's loading API (LoadRequest, load_job): after a
// refactor of that API, only job_loading.cpp needs re-pointing.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "projector/model/job.h"

namespace projector::python {

// `projector.load(path, overrides)`: the experiment file with the overrides applied as the CLI
// applies its flags. Keys named like the CLI's layout flags (tp, pp, vpp, cp, ep, etp, nodes,
// gpus_per_node, mbs, gbs, seq, pipeline_schedule, hardware, hardware_config, data_dir,
// primus_path, ...) set those; any other key is a Megatron argument, as `--set key=value`. The
// Primus environment variables are not read: a notebook states everything in `overrides`.
JobSpec load(const std::string& path, const pybind11::dict& overrides);

}  // namespace projector::python
