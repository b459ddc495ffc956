// projector: will a training job fit, and how fast will it run. A thin driver over projector_core.
#include <fmt/core.h>

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
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line like every other input error; CLI11's own text names the option.
    fmt::print(stderr, "projector: error: {} (see --help)\n", e.what());
    return projector::kExitBadInput;
  } catch (const projector::InputError& e) {
    fmt::print(stderr, "projector: error: {}\n", e.what());
    return projector::kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "projector: internal error: {}\n", e.what());
    return projector::kExitInternal;
  }
  return exit_code;
}
