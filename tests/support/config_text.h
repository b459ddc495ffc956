// Test helper: a job loaded from config text written to a scratch directory, with the bundled
// catalogue and an optional accelerator (empty: the loader's default).
#pragma once

#include <string>

#include "projector/frontend/config_value.h"
#include "projector/frontend/loader.h"
#include "support/temp_dir.h"

namespace projector::testing {

// A load request for a config file with the bundled catalogue, an empty environment and an
// optional accelerator (empty: the loader's default).
inline LoadRequest bundled_request(const std::string& path, const std::string& hardware = "") {
  LoadRequest r;
  r.config_path = path;
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.env = fixed_environment({});
  r.hardware = hardware;
  return r;
}

inline JobSpec load_config_text(const TempDir& dir, const std::string& text,
                                const std::string& hardware = "") {
  LoadRequest r;
  r.config_path = dir.write("exp.yaml", text);
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.hardware = hardware;
  return load_job(r);
}

}  // namespace projector::testing
