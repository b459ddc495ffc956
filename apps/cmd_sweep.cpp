#include <fmt/core.h>

#include "commands.h"
#include "projector/util/error.h"

namespace projector::cli {

void add_sweep_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("sweep", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    fmt::print(stderr, "projector: 'sweep' is not implemented yet\n");
    exit_code = kExitFailure;
  });
}

}  // namespace projector::cli
