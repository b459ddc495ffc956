// Looking up an op of a layer's work by name (workload tests).
#pragma once

#include <string>

#include "projector/workload/workload.h"

namespace projector::testing {

inline const Op* find_op(const LayerWork& lw, const std::string& name) {
  for (const Op& op : lw.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

}  // namespace projector::testing
