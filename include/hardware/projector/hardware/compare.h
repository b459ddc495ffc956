// Two accelerators' facts side by side (`projector hardware compare A B`).
#pragma once

#include <string>
#include <vector>

#include "projector/hardware/hardware.h"

namespace projector {

// One compared fact. Values are formatted for display: "-" when unknown or unsupported, a
// leading "~" when the entry's source marks the value as an estimate.
struct ComparedFact {
  std::string field;  // the accelerator file's key, e.g. "peak_tflops.bf16", "hbm_capacity"
  std::string label;  // e.g. "bf16 dense peak (TFLOP/s)"
  std::string a;
  std::string b;
  double ratio = 0.0;  // b / a for numbers known on both sides, else 0
};

// Identity, status, every dense peak either side publishes (model dtypes and informational
// formats), compute, memory, scale-up and scale-out facts, and where the calibration comes from.
std::vector<ComparedFact> compare_accelerators(const AcceleratorSpec& a, const AcceleratorSpec& b);

// "own" or "borrowed from <entry>": where an entry's efficiencies come from.
std::string calibration_origin(const AcceleratorSpec& acc);

// True when `field`'s source marks it as an estimate ("estimate: ...").
bool is_estimated(const AcceleratorSpec& acc, const std::string& field);

}  // namespace projector
