#include "report_outputs.h"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "projector/util/error.h"
#include "projector/util/input_file.h"

namespace projector::cli {

// Refuses what must not be written: an input of this run (writing would destroy it) and an
// existing path that is not a regular file (a FIFO would block forever, a device is no report).
void check_output(const std::string& path, const std::string& flag) {
  if (path.empty() || path == "-") return;
  if (is_input_file(path)) {
    throw InputError({path, 0, 0}, flag,
                     "is an input of this run; refusing to overwrite it (choose another file)");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    throw InputError({path, 0, 0}, flag,
                     S_ISDIR(st.st_mode) ? "is a directory, not a file"
                                         : "is not a regular file (a FIFO, device or socket "
                                           "cannot take a report)");
  }
}

namespace {

// The file an output path stands for: a symlink's target (replaced, not the link), else the path.
std::filesystem::path output_target(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path, ec);
  return ec ? std::filesystem::path(path) : target;
}

// Permission bits for a new file: what the existing one had, else 0666 less the umask.
mode_t output_mode(const std::filesystem::path& target) {
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) return st.st_mode & 07777;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void write_output(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    fmt::print("{}", text);
    if (!text.empty() && text.back() != '\n') fmt::print("\n");
    return;
  }
  check_output(path, flag);
  // A temporary file in the same directory renamed over the target: a failed or interrupted write
  // never leaves a truncated report (or a destroyed file) behind.
  const std::filesystem::path target = output_target(path);
  std::filesystem::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmp = (dir / ("." + target.filename().string() + ".projector-XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw InputError({path, 0, 0}, flag, "cannot open the file for writing");
  const std::string body = !text.empty() && text.back() != '\n' ? text + '\n' : text;
  const bool ok = ::fchmod(fd, output_mode(target)) == 0 && write_all(fd, body);
  const bool closed = ::close(fd) == 0;
  if (!ok || !closed || ::rename(tmp.c_str(), target.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw InputError({path, 0, 0}, flag, "cannot write the file");
  }
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
