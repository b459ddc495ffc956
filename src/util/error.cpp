#include "projector/util/error.h"

#include <fmt/format.h>

namespace projector {

std::string format_input_error(const SourceLocation& where, const std::string& key,
                               const std::string& message) {
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0) out += fmt::format(":{}", where.line);
    if (where.column > 0) out += fmt::format(":{}", where.column);
    out += ": ";
  }
  if (!key.empty()) out += key + ": ";
  out += message;
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
