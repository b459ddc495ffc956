// Helpers for the hardware tests: scratch files and line look-ups for error-location checks.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/temp_dir.h"

namespace projector::testing {

inline std::string data_dir() {
  return PROJECTOR_DEFAULT_DATA_DIR;
}
inline std::string test_data_dir() {
  return PROJECTOR_TEST_DATA_DIR;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A per-test scratch directory (tests/support/temp_dir.h).
using ScratchDir = TempDir;

// 1-based number of the first line of `text` that contains `needle` (0 if none).
inline int line_of(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find(needle) != std::string::npos) return n;
  }
  return 0;
}

// `text` with the first occurrence of `from` replaced by `to` (fails the test if absent).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture text not found: " << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

}  // namespace projector::testing
