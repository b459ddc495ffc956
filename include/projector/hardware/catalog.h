// The hardware catalogue: data/hardware/accelerators/*.yaml and data/hardware/networks/*.yaml.
#pragma once

#include <string>
#include <vector>

#include "projector/hardware/hardware.h"

namespace projector {

// The bundled data directory (compiled in); callers may pass another one.
std::string default_data_dir();

// A catalogue name ("mi300x"), an alias ("gfx942", "h100") or a path to a YAML file.
AcceleratorSpec load_accelerator(const std::string& name_or_path, const std::string& data_dir);
// A catalogue name or a path to a network YAML; Primus `hardware_config:` files load unchanged.
NetworkSpec load_network(const std::string& name_or_path, const std::string& data_dir);
// The network that goes with an accelerator when none is given (its `default_network:` key).
NetworkSpec default_network_for(const AcceleratorSpec& accelerator, const std::string& data_dir);

std::vector<std::string> list_accelerators(const std::string& data_dir);
std::vector<std::string> list_networks(const std::string& data_dir);

}  // namespace projector
