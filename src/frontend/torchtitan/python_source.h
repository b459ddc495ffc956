// Reading the literal parts of torchtitan's Python source: the flavor tables
// (`name = {"8B": Args(dim=4096, ...), ...}`) and dataclass field defaults (`dim: int = 4096`).
// Only literals are understood: numbers, strings, True / False / None, lists, dicts, calls with
// keyword arguments (read as maps) and products / sums of numbers (`4096 * 4`). Anything else is
// kept as its source text. Internal to the torchtitan adapter.
#pragma once

#include <string>
#include <string_view>

#include "projector/frontend/config_value.h"

namespace projector::frontend_detail {

// Parses one Python expression starting at `text[pos]`; advances `pos` past it. `file` and
// `first_line` (the line of text[0]) locate values. Throws InputError on malformed input.
ConfigValue parse_python_expression(std::string_view text, std::size_t& pos,
                                    const std::string& file, int first_line);

// The dict literal assigned to `variable` at the top level of `source` (`variable = {...}`), as a
// map from its keys to their values; nullopt-like empty map with kind kNull when absent.
ConfigValue python_dict_assignment(const std::string& source, const std::string& file,
                                   const std::string& variable);

// The field defaults of dataclass `class_name` in `source`: `name: type = value` lines of its
// body (a `field(default_factory=X)` default is read as the call). kNull when the class is absent.
// True for a plain Python identifier (what a class or variable name must be before it becomes part
// of a pattern).
bool is_python_identifier(std::string_view name);

ConfigValue python_dataclass_defaults(const std::string& source, const std::string& file,
                                      const std::string& class_name);

}  // namespace projector::frontend_detail
