// Small text helpers shared by the parsers.
#pragma once

#include <string>
#include <string_view>

namespace projector {

// ASCII lower case (config keys, names and free-text keywords are ASCII).
std::string to_lower(std::string_view s);

}  // namespace projector
