// The driver registers only the sub-command its first argument names (start-up time); help,
// --version and a mistyped command still see every command.
#include <gtest/gtest.h>

#include <string>

#include "support/cli_runner.h"

namespace projector {
namespace {

using testing::run_cli;

// Every sub-command the driver offers (apps/commands.h).
const char* const kCommands[] = {"config",   "models",      "hardware", "memory",
                                 "workload", "performance", "both",     "validate",
                                 "sweep",    "profile",     "kernels"};

TEST(Driver, TopLevelHelpListsEveryCommand) {
  const testing::CliResult r = run_cli("--help");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* c : kCommands) {
    EXPECT_NE(r.out.find(std::string("\n  ") + c + " "), std::string::npos) << c << "\n" << r.out;
  }
  EXPECT_EQ(run_cli("--version").out, "projector 0.1.0\n");
}

TEST(Driver, EachCommandRegistersItsOwnOptions) {
  for (const char* c : kCommands) {
    const testing::CliResult r = run_cli(std::string(c) + " --help");
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("Usage: ")), std::string::npos) << c;
    EXPECT_NE(r.out.find(std::string(" ") + c + " "), std::string::npos) << c << ": " << r.out;
  }
  // A nested command of a scoped one.
  EXPECT_EQ(run_cli("hardware compare --help").exit_code, 0);
  // The one command registered refuses another's option, as with all registered.
  const testing::CliResult bad = run_cli("models list --nodes 2");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}

TEST(Driver, UnknownCommandIsOneLineInputError) {
  for (const char* args : {"perfomance", "", "-x"}) {
    const testing::CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("projector: error: ", 0), 0u) << args << ": " << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace projector
