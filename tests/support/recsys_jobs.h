// Recommendation jobs for tests: the bundled TorchRec fixtures (tests/data/torchrec/) loaded
// through the front-end, with optional `--set` overrides and hardware.
#pragma once

#include <string>
#include <vector>

#include "projector/frontend/loader.h"
#include "projector/job/spec.h"

namespace projector::testing {

inline std::string torchrec_fixture(const std::string& name) {
  return std::string(PROJECTOR_TEST_DATA_DIR) + "/torchrec/" + name + ".yaml";
}

inline JobSpec load_recsys(const std::string& name, std::vector<std::string> set = {},
                           const std::string& hardware = "a100_40gb",
                           std::optional<int> nodes = std::nullopt) {
  LoadRequest r;
  r.config_path = torchrec_fixture(name);
  r.data_dir = PROJECTOR_DEFAULT_DATA_DIR;
  r.env = fixed_environment({});
  r.hardware = hardware;
  r.set_overrides = std::move(set);
  r.cli.nodes = nodes;
  return load_job(r);
}

}  // namespace projector::testing
