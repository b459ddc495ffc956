#include "projector/util/error.h"

#include <fmt/format.h>

namespace projector {
namespace {

// One line stays readable however long the offending value (a 30,000-digit number, say).
constexpr std::size_t kMaxPart = 600;

std::string clip(const std::string& s) {
  return s.substr(0, kMaxPart) + fmt::format("... ({} characters)", s.size());
}

}  // namespace

std::string format_input_error(const SourceLocation& where, const std::string& key,
                               const std::string& message) {
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0) out += fmt::format(":{}", where.line);
    if (where.column > 0) out += fmt::format(":{}", where.column);
    out += ": ";
  }
  // A command-line flag is both the place and the key ("--grid"): named once.
  const bool flag_is_place = where.line == 0 && where.file == key;
  if (!key.empty() && !flag_is_place) {
    out += key.size() <= kMaxPart ? key + ": " : clip(key) + ": ";
  }
  out += message.size() <= kMaxPart ? message : clip(message);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

InputError::InputError(SourceLocation where, std::string key, const std::string& message)
    : std::runtime_error(format_input_error(where, key, message)),
      where_(std::move(where)),
      key_(std::move(key)),
      message_(message) {}

}  // namespace projector
