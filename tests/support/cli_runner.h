// Runs the `projector` binary for end-to-end CLI tests (PROJECTOR_BINARY is a compile definition
// of every test binary). The Primus environment variables are cleared so the host cannot leak in.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace projector::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout, then stderr
};

// `env_assignments` ("VAR=value ...") are set after the Primus environment is cleared.
inline CliResult run_cli_env(const std::string& env_assignments, const std::string& args) {
  const std::string cmd =
      "env -u PRIMUS_TP -u PRIMUS_PP -u PRIMUS_EP -u PRIMUS_CP -u PRIMUS_VPP -u PRIMUS_ETP "
      "-u NNODES -u GPUS_PER_NODE -u PRIMUS_GPU_ARCH -u PRIMUS_GPU_CLOCK_MHZ -u PRIMUS_PATH "
      "-u BACKEND_PATH " +
      env_assignments + " " + std::string(PROJECTOR_BINARY) + " " + args + " 2>&1";
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) r.out += buf.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline CliResult run_cli(const std::string& args) {
  return run_cli_env("", args);
}

// The repository root (data/ sits in it).
inline std::string repo_root() {
  return std::string(PROJECTOR_DEFAULT_DATA_DIR) + "/..";
}

}  // namespace projector::testing
