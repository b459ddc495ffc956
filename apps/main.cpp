// projector: will a training job fit, and how fast will it run. A thin driver over projector_core.

#include <array>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>

#include "commands.h"
#include "projector/util/error.h"

namespace {

// The one line a failed run prints; never throws (stderr may be full or closed too).
int report(const char* kind, const std::string& message, int exit_code) {
  std::fprintf(stderr, "projector: %s: %s\n", kind, message.c_str());
  return exit_code;
}

struct Command {
  std::string_view name;
  std::string_view also;  // a second sub-command the same adder registers, or empty
  void (*add)(CLI::App&, int&);
};

constexpr std::array<Command, 10> kCommands = {{
    {"config", "", projector::cli::add_config_command},
    {"models", "", projector::cli::add_models_command},
    {"hardware", "", projector::cli::add_hardware_command},
    {"memory", "", projector::cli::add_memory_command},
    {"workload", "", projector::cli::add_workload_command},
    {"performance", "both", projector::cli::add_performance_commands},
    {"validate", "", projector::cli::add_validate_command},
    {"sweep", "", projector::cli::add_sweep_command},
    {"profile", "", projector::cli::add_profile_command},
    {"kernels", "", projector::cli::add_kernels_command},
}};

// Registers the command `first` names alone (building every command's options is a third of a
// process's start-up); anything else (`--help`, `--version`, a typo) gets every command, so help
// and errors list them all.
void add_commands(CLI::App& app, std::string_view first, int& exit_code) {
  for (const Command& c : kCommands) {
    if (!first.empty() && (first == c.name || first == c.also)) {
      c.add(app, exit_code);
      return;
    }
  }
  for (const Command& c : kCommands) c.add(app, exit_code);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"projector: memory and performance projection for large-model training jobs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "projector 0.1.0");
  int exit_code = projector::kExitOk;
  add_commands(app, argc > 1 ? std::string_view(argv[1]) : std::string_view(), exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line like every other bad input, naming the option (or the command line).
    return report("error",
                  projector::format_input_error({"command line", 0, 0}, "",
                                                std::string(e.what()) + " (see --help)"),
                  projector::kExitBadInput);
  } catch (const projector::InputError& e) {
    return report("error", e.what(), projector::kExitBadInput);
  } catch (const std::system_error& e) {  // fmt::print to a full or closed stdout
    if (std::ferror(stdout) == 0)
      return report("internal error", e.what(), projector::kExitInternal);
    return report("error", std::string("<stdout>: cannot write the output: ") + e.what(),
                  projector::kExitBadInput);
  } catch (const std::exception& e) {
    return report("internal error", e.what(), projector::kExitInternal);
  }
  // Output is part of the result: a failed write to stdout (a full disk, a closed pipe) is bad
  // output, not success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    return report("error", "<stdout>: cannot write the output", projector::kExitBadInput);
  }
  return exit_code;
}
