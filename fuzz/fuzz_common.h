// Shared by the libFuzzer targets: the contract every input must meet. A clean InputError (exit 2
// in the CLI) must name where the problem is; anything else that escapes, any sanitizer report,
// and any non-finite or negative figure in a successful projection is a finding (abort, so
// libFuzzer keeps the input).
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "projector/util/error.h"

namespace projector::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

// An InputError that names no file, flag or environment variable is a finding.
inline void require_location(const InputError& e) {
  if (e.where().file.empty()) finding(std::string("error without a location: ") + e.what());
}

inline void require_finite(double v, const char* what) {
  if (!std::isfinite(v) || v < 0.0) finding(std::string(what) + " is " + std::to_string(v));
}

// A scratch file per process (inputs that are read by path), rewritten for each input.
inline std::string scratch_file(const char* suffix, const std::string& bytes) {
  const std::string path = "/tmp/projector-fuzz-" + std::to_string(::getpid()) + suffix;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace projector::fuzz
