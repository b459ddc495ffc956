// The hardware catalogue: data/hardware/accelerators/*.yaml and data/hardware/networks/*.yaml.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "projector/hardware/hardware.h"
#include "projector/util/error.h"

namespace projector {

// The bundled data directory: this source tree's data/ (compiled in), or in a relocatable build
// (the pip package) the data/ installed beside the binary. Callers may pass another one.
std::string default_data_dir();

// A catalogue name ("mi300x"), an alias ("gfx942", "h100") or a path to a YAML file.
AcceleratorSpec load_accelerator(const std::string& name_or_path, const std::string& data_dir);
// A catalogue name or a path to a network YAML; Primus `hardware_config:` files load unchanged.
NetworkSpec load_network(const std::string& name_or_path, const std::string& data_dir);
// The network that goes with an accelerator when none is given (its `default_network:` key).
NetworkSpec default_network_for(const AcceleratorSpec& accelerator, const std::string& data_dir);

std::vector<std::string> list_accelerators(const std::string& data_dir);
std::vector<std::string> list_networks(const std::string& data_dir);

// Every accelerator in the catalogue, loaded, in list_accelerators() order.
std::vector<AcceleratorSpec> load_accelerator_catalog(const std::string& data_dir);

// Maps free text ("NVIDIA A100 SXM4 80GB", "AMD Instinct MI300X (192GB HBM3)", "Google TPU v4")
// to a catalogue name. Words are compared case-insensitively; the entry whose name, display name
// or alias matches the longest run of consecutive words wins. nullopt when nothing matches or
// when two entries match equally well (ambiguous text).
std::optional<std::string> match_accelerator_name(const std::string& text,
                                                  const std::string& data_dir);

// The names every catalogue entry answers to, read once: use it when mapping many strings (the
// validation harness), since each free-function look-up above re-reads the catalogue.
class AcceleratorIndex {
 public:
  explicit AcceleratorIndex(const std::string& data_dir);
  // As match_accelerator_name().
  std::optional<std::string> match(const std::string& text) const;
  // As load_accelerator() (name, alias, free text or path).
  AcceleratorSpec load(const std::string& name_or_path) const;
  const std::string& data_dir() const { return data_dir_; }

  struct Entry {
    std::string name;
    std::vector<std::string> phrases;  // name, display name and aliases
  };

 private:
  std::string data_dir_;
  std::vector<Entry> entries_;
};

// One framework device's share of a chip with devices_per_chip > 1 (TPU7x: each TensorCore is a
// JAX device): peaks, HBM capacity and bandwidth, scale-up, scale-out and host bandwidth divided
// by devices_per_chip; the accelerator itself when it has one device per chip. The share keeps
// devices_per_chip, so reports can convert per-device figures back to the chip.
AcceleratorSpec device_share(const AcceleratorSpec& chip);

// Loads one network file (Primus `hardware_config:` format or flat) from a path.
NetworkSpec load_network_file(const std::string& path);
// Loads one accelerator file from a path.
AcceleratorSpec load_accelerator_file(const std::string& path);

}  // namespace projector
