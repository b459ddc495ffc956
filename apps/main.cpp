// projector: will a training job fit, and how fast will it run. A thin driver over projector_core.
#include <fmt/core.h>

#include <cstdio>
#include <exception>

#include "commands.h"
#include "projector/util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"projector: memory and performance projection for large-model training jobs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "projector 0.1.0");
  int exit_code = projector::kExitOk;
  projector::cli::add_config_command(app, exit_code);
  projector::cli::add_models_command(app, exit_code);
  projector::cli::add_hardware_command(app, exit_code);
  projector::cli::add_memory_command(app, exit_code);
  projector::cli::add_workload_command(app, exit_code);
  projector::cli::add_performance_commands(app, exit_code);
  projector::cli::add_validate_command(app, exit_code);
  projector::cli::add_sweep_command(app, exit_code);
  projector::cli::add_profile_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line like every other bad input, naming the option (or the command line).
    fmt::print(stderr, "projector: error: {}\n",
               projector::format_input_error({"command line", 0, 0}, "",
                                             std::string(e.what()) + " (see --help)"));
    return projector::kExitBadInput;
  } catch (const projector::InputError& e) {
    fmt::print(stderr, "projector: error: {}\n", e.what());
    return projector::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "projector: internal error: {}\n", e.what());
    return projector::kExitInternal;
  }
  // Output is part of the result: a failed write to stdout (a full disk, a closed pipe) is bad
  // output, not success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    fmt::print(stderr, "projector: error: <stdout>: cannot write the output\n");
    return projector::kExitBadInput;
  }
  return exit_code;
}
