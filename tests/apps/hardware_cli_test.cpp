// `projector hardware show NAME` prints every calibration constant an accelerator file sets, each
// with its source: the file's keys are read here independently of the catalogue loader.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "support/cli_runner.h"

namespace projector {
namespace {

using testing::run_cli;

TEST(HardwareShow, PrintsEveryCalibrationKeyTheFileSets) {
  const std::filesystem::path dir =
      std::filesystem::path(PROJECTOR_DEFAULT_DATA_DIR) / "hardware" / "accelerators";
  const std::regex key(R"(^  ([a-z0-9_]+): \{value)");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string yaml = text.str();
    const std::size_t cal = yaml.find("\ncalibration:\n");
    if (cal == std::string::npos) continue;  // a derived part prints its sibling's values
    const std::string name = entry.path().stem().string();
    const testing::CliResult r = run_cli("hardware show " + name);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.out;
    std::istringstream lines(yaml.substr(cal + 1));
    std::string line;
    std::getline(lines, line);  // "calibration:"
    while (std::getline(lines, line) && (line.empty() || line.rfind("  ", 0) == 0)) {
      std::smatch m;
      if (!std::regex_search(line, m, key)) continue;
      EXPECT_NE(r.out.find("calibration." + m[1].str() + " "), std::string::npos)
          << name << " does not show " << m[1];
    }
    ++files;
  }
  EXPECT_GT(files, 10);
}

}  // namespace
}  // namespace projector
