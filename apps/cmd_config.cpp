#include <fmt/core.h>

#include "commands.h"
#include "projector/util/error.h"

namespace projector::cli {

void add_config_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("config", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    fmt::print(stderr, "projector: 'config' is not implemented yet\n");
    exit_code = kExitFailure;
  });
}

}  // namespace projector::cli
