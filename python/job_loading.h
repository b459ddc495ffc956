// The module's one call into the front-end's loading API (LoadRequest, load_job): after a
// refactor of that API, only job_loading.cpp needs re-pointing. Also the checked conversions of
// Python arguments: every bad value is an InputError naming its key, never a pybind11 cast error.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "projector/frontend/loader.h"
#include "projector/model/job.h"

namespace projector::python {

// `projector.load(path, overrides)`: the request the overrides describe, applied as the CLI
// applies its flags. Keys named like the CLI's layout flags (tp, pp, vpp, cp, ep, etp, nodes,
// gpus_per_node, mbs, gbs, seq, pipeline_schedule, hardware, hardware_config, data_dir,
// primus_path, ...) set those; any other key is a Megatron argument, as `--set key=value`. The
// Primus environment variables are not read: a notebook states everything in `overrides`.
// `overrides`: a dict or None (anything else is an InputError naming "overrides").
LoadRequest load_request(const std::string& path, const pybind11::handle& overrides);

// An int (not a bool) in [lo, hi], of any size: InputError naming `key` otherwise.
std::int64_t int_argument(const std::string& key, const pybind11::handle& v, std::int64_t lo,
                          std::int64_t hi);
// An int or float (not a bool), finite, in [lo, hi]: InputError naming `key` otherwise.
double number_argument(const std::string& key, const pybind11::handle& v, double lo, double hi);
// A bool: InputError naming `key` otherwise.
bool bool_argument(const std::string& key, const pybind11::handle& v);
// A str: InputError naming `key` otherwise.
std::string str_argument(const std::string& key, const pybind11::handle& v);
// A str or any os.PathLike (pathlib.Path) as a path string: InputError naming `key` otherwise.
std::string path_argument(const std::string& key, const pybind11::handle& v);

}  // namespace projector::python
