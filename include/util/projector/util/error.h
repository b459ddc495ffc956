// Errors for bad input. Every user-facing failure is an InputError that names the file, the line
// and the key, prints as one line, and makes the CLI exit with code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace projector {

struct SourceLocation {
  std::string file;  // path as the user gave it; empty when the value came from the command line
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown
};

class InputError : public std::runtime_error {
 public:
  InputError(SourceLocation where, std::string key, const std::string& message);
  const SourceLocation& where() const { return where_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string message_;
};

// "file:line:col: key: message" with the empty parts left out; never contains a newline.
std::string format_input_error(const SourceLocation& where, const std::string& key,
                               const std::string& message);

// Exit codes of the CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // a gate failed (validate --max-mape, OOM with --strict)
inline constexpr int kExitBadInput = 2;  // InputError
inline constexpr int kExitInternal = 3;  // a bug: an unexpected exception
inline constexpr int kExitInterrupted = 130;  // stopped by SIGINT (128 + 2, the shell's convention)

}  // namespace projector
