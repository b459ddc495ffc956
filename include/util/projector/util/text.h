// Small text helpers shared by the parsers.
#pragma once

#include <string>
#include <string_view>

namespace projector {

// ASCII lower case (config keys, names and free-text keywords are ASCII).
std::string to_lower(std::string_view s);

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF):
// what the JSON writers need of every key and string they emit.
bool is_valid_utf8(std::string_view s);

// `s` with each byte that is not part of well-formed UTF-8 written as \xHH (for error messages).
std::string escape_invalid_utf8(std::string_view s);

}  // namespace projector
