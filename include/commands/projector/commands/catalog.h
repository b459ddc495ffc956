// The documents of the catalogue commands (`hardware list|show|compare`, `models list`), built
// once for the CLI (apps/) and the Python module (python/).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "projector/hardware/hardware.h"
#include "projector/job/spec.h"
#include "projector/model/job.h"
#include "projector/perf/perf.h"
#include "projector/util/error.h"

namespace projector {

// `hardware list --json`: every accelerator of the catalogue (the table's columns with their full
// sources) and the network names. InputError when the catalogue has no accelerator.
std::string hardware_list_json(const std::string& data_dir);

// `hardware show NAME --json` of an accelerator and of a network.
std::string accelerator_json(const AcceleratorSpec& a);
std::string network_json(const NetworkSpec& n);
// The document of NAME: a network file name wins over free-text accelerator matching
// ("h100_ib400" is a network); `network` (optional) receives the network when it is one.
std::string hardware_show_json(const std::string& name, const std::string& data_dir,
                               std::optional<NetworkSpec>* network = nullptr);

// One side of `hardware compare A B --config X`: the job projected on the accelerator, or why not.
struct AcceleratorProjection {
  std::string accelerator;
  std::optional<JobSpec> job;
  PerfReport report;
  std::string error;                  // "file:line: key: message"
  std::optional<InputError> failure;  // the error itself
};

struct HardwareComparison {
  AcceleratorSpec a;
  AcceleratorSpec b;
  std::string config;  // "": facts only
  std::optional<AcceleratorProjection> pa;
  std::optional<AcceleratorProjection> pb;
};

// Loads A and B and, with a config, projects it on each through `job_on` (the front end's loading
// path with the accelerator's file as the hardware). The same error on both sides is the config's
// and is thrown.
HardwareComparison compare_hardware(const std::string& a, const std::string& b,
                                    const std::string& data_dir, const std::string& config,
                                    const std::function<JobSpec(const AcceleratorSpec&)>& job_on);
// tokens/s per GPU of B over A (0 unless both projected).
double comparison_speedup(const AcceleratorProjection& a, const AcceleratorProjection& b);
// `hardware compare A B [--config X] --json`.
std::string hardware_compare_json(const HardwareComparison& c);

// `models list --json`: every bundled model preset with its size.
std::string models_list_json(const std::string& data_dir);

}  // namespace projector
