#include <fmt/core.h>

#include "commands.h"
#include "projector/util/error.h"

namespace projector::cli {

void add_validate_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("validate", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    fmt::print(stderr, "projector: 'validate' is not implemented yet\n");
    exit_code = kExitFailure;
  });
}

}  // namespace projector::cli
