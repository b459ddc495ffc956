// Test helper: the AdapterInput the loader hands a back-end adapter for a resolved configuration
// (its namespace, the keys the user wrote, the adapter's framework profile), for tests that call
// BackendAdapter::normalize directly.
#pragma once

#include <string>

#include "projector/frontend/adapter.h"
#include "projector/frontend/loader.h"

namespace projector::testing {

inline AdapterInput adapter_input(const ResolvedConfig& rc, const BackendAdapter& a,
                                  const std::string& data_dir) {
  AdapterInput in;
  in.args = rc.args;
  in.user_keys = rc.user_keys;
  in.source = rc.source;
  in.model_name = "m";
  in.profile = *load_framework_profiles(data_dir).find(a.profile(rc.primus_experiment));
  in.data_dir = data_dir;
  in.env = fixed_environment({});
  return in;
}

}  // namespace projector::testing
