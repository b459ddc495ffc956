#include "projector/util/input_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <utility>

namespace projector {
namespace {

using FileId = std::pair<dev_t, ino_t>;

// The inputs read so far; a mutex because sweeps load jobs on several threads.
struct InputRegistry {
  std::mutex mutex;
  std::set<FileId> files;
};

InputRegistry& registry() {
  static InputRegistry r;
  return r;
}

bool file_id(const std::string& path, FileId& id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  id = {st.st_dev, st.st_ino};
  return true;
}

void remember_input(const std::string& path) {
  FileId id;
  if (!file_id(path, id)) return;
  InputRegistry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  r.files.insert(id);
}

}  // namespace

bool is_input_file(const std::string& path) {
  FileId id;
  if (!file_id(path, id)) return false;
  InputRegistry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  return r.files.count(id) > 0;
}

std::uint64_t check_input_file(const std::string& path, std::uint64_t max_bytes,
                               const SourceLocation& referenced_from, const std::string& key) {
  namespace fs = std::filesystem;
  const SourceLocation where =
      referenced_from.file.empty() ? SourceLocation{path, 0, 0} : referenced_from;
  const std::string name = referenced_from.file.empty() ? "" : path + ": ";
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec == std::errc::too_many_symbolic_link_levels) {
    throw InputError(where, key, name + "a loop of symbolic links, not a file");
  }
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    throw InputError(where, key, name + "cannot be read: " + ec.message());
  }
  if (ec || !fs::exists(st)) {
    std::error_code link_ec;
    const bool dangling = fs::is_symlink(fs::symlink_status(path, link_ec));
    throw InputError(where, key,
                     name + (dangling ? "a symbolic link to a missing file" : "file not found"));
  }
  if (!fs::is_regular_file(st)) {
    throw InputError(where, key,
                     name + (fs::is_directory(st) ? "is a directory, not a file"
                                                  : "is not a regular file (a device, FIFO or "
                                                    "socket cannot be read as input)"));
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw InputError(where, key, name + "cannot read the file size");
  if (size > max_bytes) {
    throw InputError(where, key,
                     fmt::format("{}the file has {} bytes, more than the {} MiB an input may have",
                                 name, size, max_bytes >> 20));
  }
  remember_input(path);
  return size;
}

std::string read_input_file(const std::string& path, std::uint64_t max_bytes,
                            const SourceLocation& referenced_from, const std::string& key) {
  const std::uint64_t size = check_input_file(path, max_bytes, referenced_from, key);
  std::ifstream in(path, std::ios::binary);
  const SourceLocation where =
      referenced_from.file.empty() ? SourceLocation{path, 0, 0} : referenced_from;
  if (!in) throw InputError(where, key, "cannot open the file for reading");
  std::string text;
  // One byte more than the size checked: a file that grew since is still refused.
  text.resize(static_cast<std::size_t>(size) + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw InputError(where, key, "cannot read the file");
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > size) throw InputError(where, key, "the file changed while it was read");
  return text;
}

}  // namespace projector
