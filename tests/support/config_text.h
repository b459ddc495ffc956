// Test helper: a job loaded from config text written to a scratch directory, with the bundled
// catalogue and an optional accelerator (empty: the loader's default).
#pragma once

#include <string>
#include <vector>

#include "projector/frontend/config_value.h"
#include "projector/frontend/loader.h"
#include "projector/job/spec.h"
#include "projector/util/error.h"
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

// The message of the InputError that loading `text` raises; empty when it loads.
inline std::string load_error(const TempDir& dir, const std::string& text) {
  try {
    load_config_text(dir, text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// One of the bundled Primus subset's experiment files (tests/data/primus/examples/megatron/
// configs/<rel>), resolved through that subset as a Primus checkout, on `hardware` with the
// `--set` overrides and node count (0: the config's). With `error`, a refusal is returned there
// (and an empty job) instead of thrown.
inline JobSpec load_bundled_primus_example(const std::string& rel, const std::string& hardware,
                                           const std::vector<std::string>& sets, int nodes = 0,
                                           std::string* error = nullptr) {
  LoadRequest r;
  r.config_path = std::string(PROJECTOR_TEST_DATA_DIR) + "/primus/examples/megatron/configs/" + rel;
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.primus_path = std::string(PROJECTOR_TEST_DATA_DIR) + "/primus";
  r.hardware = hardware;
  r.set_overrides = sets;
  if (nodes > 0) r.cli.nodes = nodes;
  if (error == nullptr) return load_job(r);
  try {
    return load_job(r);
  } catch (const InputError& e) {
    *error = e.what();
  }
  return {};
}

inline JobSpec load_bundled_primus_example(const std::string& rel) {
  return load_bundled_primus_example(rel, "mi300x", {});
}

}  // namespace projector::testing
