// The shipped hardware catalogue (data/hardware) for tests: every cost-model test prices on the
// accelerator and network files users get, so a change to a calibration value is seen by the
// tests that depend on it. Expected values are derived by hand from the files' numbers (quoted in
// each test) or are published measurements with a tolerance.
#pragma once

#include <map>
#include <string>

#include "projector/hardware/catalog.h"

namespace projector::testing {

// Loaded once per name and test binary.
inline const AcceleratorSpec& accelerator(const std::string& name) {
  static std::map<std::string, AcceleratorSpec> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_accelerator(name, default_data_dir())).first;
  return it->second;
}

inline const NetworkSpec& network(const std::string& name) {
  static std::map<std::string, NetworkSpec> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_network(name, default_data_dir())).first;
  return it->second;
}

// An accelerator as it runs in isolation (a microbenchmark): the catalogue's kernel fractions are
// isolated-kernel fits (scripts/fit_kernels.py), so this is the catalogue entry itself.
inline AcceleratorSpec isolated(const std::string& name) {
  return accelerator(name);
}

}  // namespace projector::testing
