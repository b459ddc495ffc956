// Sub-command registration for the `projector` CLI. Each command lives in its own cmd_*.cpp and
// only parses options, calls projector_core and prints; all logic is in the library.
#pragma once

#include <CLI/CLI.hpp>

namespace projector::cli {

// Each function adds one (or a few) sub-commands; their callbacks store an exit code in
// `exit_code`.
void add_config_command(CLI::App& app, int& exit_code);
void add_models_command(CLI::App& app, int& exit_code);
void add_hardware_command(CLI::App& app, int& exit_code);
void add_hardware_compare_command(CLI::App* hardware, int& exit_code);  // `hardware compare`
void add_memory_command(CLI::App& app, int& exit_code);
void add_workload_command(CLI::App& app, int& exit_code);
void add_performance_commands(CLI::App& app, int& exit_code);  // `performance` and `both`
void add_validate_command(CLI::App& app, int& exit_code);
void add_sweep_command(CLI::App& app, int& exit_code);
void add_profile_command(CLI::App& app, int& exit_code);
void add_kernels_command(CLI::App& app, int& exit_code);  // `kernels`

}  // namespace projector::cli
