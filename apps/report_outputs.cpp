#include "report_outputs.h"

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>

#include "projector/util/error.h"

namespace projector::cli {

void write_output(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    fmt::print("{}", text);
    if (!text.empty() && text.back() != '\n') fmt::print("\n");
    return;
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) throw InputError({path, 0, 0}, flag, "cannot open the file for writing");
  f << text;
  if (!text.empty() && text.back() != '\n') f << '\n';
  if (!f) throw InputError({path, 0, 0}, flag, "cannot write the file");
}

std::string read_input_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`;&|<>()*?[]#~") == std::string::npos) return s;
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string option_name(const CLI::Option& opt) {
  if (!opt.get_lnames().empty()) return "--" + opt.get_lnames().front();
  if (!opt.get_snames().empty()) return "-" + opt.get_snames().front();
  return opt.get_name();
}

}  // namespace

std::string command_line(const CLI::App& command) {
  std::string out = "projector " + command.get_name();
  for (const CLI::Option* opt : command.get_options()) {
    if (opt->count() == 0 || opt->get_name() == "--help") continue;
    const bool positional = !opt->nonpositional();
    const std::string name = positional ? "" : option_name(*opt);
    if (opt->get_items_expected_max() == 0) {  // a flag
      out += " " + name;
      continue;
    }
    for (const std::string& value : opt->results()) {
      out += positional ? " " + shell_word(value) : " " + name + " " + shell_word(value);
    }
  }
  return out;
}

}  // namespace projector::cli
