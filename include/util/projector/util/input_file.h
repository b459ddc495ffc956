// Reading a user-supplied input file (experiment configs, presets, runs files, hardware and
// framework files, measured profiles) with the checks every input gets: it must be a regular file
// (not a directory, FIFO or device such as /dev/zero) and at most `max_bytes` long. Failures are
// InputErrors naming the file, or the file and key that referred to it.
#pragma once

#include <cstdint>
#include <string>

#include "projector/util/error.h"

namespace projector {

// Text inputs (YAML, TOML, JSON documents): the largest shipped or Primus file is under 100 KiB;
// 16 MiB leaves room for generated configs while a YAML parse of it stays well under 1 GiB.
inline constexpr std::uint64_t kMaxInputFileBytes = std::uint64_t{16} << 20;

// The whole file. `referenced_from` / `key`: where the path was given (empty: the path itself).
std::string read_input_file(const std::string& path, std::uint64_t max_bytes = kMaxInputFileBytes,
                            const SourceLocation& referenced_from = {},
                            const std::string& key = "");

// Throws unless `path` is a regular file of at most `max_bytes` (for readers that stream); returns
// its size in bytes.
std::uint64_t check_input_file(const std::string& path, std::uint64_t max_bytes,
                               const SourceLocation& referenced_from = {},
                               const std::string& key = "");

// Whether `path` names a file this process has read as input (through the two functions above):
// the same file by device and inode, so a symlink, a hard link or another spelling of the path
// counts. Outputs are refused when they would overwrite one.
bool is_input_file(const std::string& path);

}  // namespace projector
