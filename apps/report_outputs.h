// The report files every projecting command can write (--json, --csv, --html) and what an HTML
// report records about how it was made.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace projector::cli {

// Writes `text` to `path` ('-': stdout) through a temporary file renamed over it; `flag` names the
// option in the error when it cannot, when `path` is an input of this run, or when it exists and
// is not a regular file.
void write_output(const std::string& path, const std::string& text, const std::string& flag);

// Throws the error write_output would for `path` ("" and '-' pass): an input of this run, an
// existing non-regular file. Commands call it once the job is loaded, before the projection.
void check_output(const std::string& path, const std::string& flag);

// A file's text for the report's "inputs" section (empty when it cannot be read).
std::string read_input_text(const std::string& path);

// "projector <command> --opt value ..." as parsed: the options the user gave, in order.
std::string command_line(const CLI::App& command);

}  // namespace projector::cli
