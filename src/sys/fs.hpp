// SPDX-License-Identifier: Apache-2.0
// Small file helpers for /proc and /sys. A root prefix lets tests point the
// readers at fixture trees (tests/fixtures/...).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace shootdown::sys {

// Prefix prepended to absolute /proc and /sys paths; "" in production.
// Tests set it to a fixture tree. Not thread-safe: set before use.
void set_root(std::string root);
const std::string& root();

std::optional<std::string> read_file(const std::string& path);  // path under root()
std::string read_file_or(const std::string& path, std::string fallback);
std::string trim(std::string s);
Status write_file(const std::string& path, const std::string& content);  // the error: strerror
bool path_exists(const std::string& path);
bool is_directory(const std::string& path);
// An existing directory this process may create files in (else the error:
// "not a directory", "read-only file system", "permission denied").
Status writable_directory(const std::string& path);

// A /proc file read again and again without allocating: opened once, its
// buffer sized (4x the first read, at least 64 KiB) and written up front, each
// read() a pread loop into it. For reads at the boundaries of a measured span,
// where a malloc, a free or a first write to a fresh page would itself flush
// remote TLBs. Grows (allocates) only when the file outgrew the buffer.
class RereadableFile {
 public:
  explicit RereadableFile(const std::string& path);  // path under root()
  ~RereadableFile();
  RereadableFile(const RereadableFile&) = delete;
  RereadableFile& operator=(const RereadableFile&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  bool read();  // false + error() on failure
  std::string_view text() const { return {buf_.data(), len_}; }

 private:
  int fd_ = -1;
  std::vector<char> buf_;
  std::size_t len_ = 0;
  std::string error_;
};

}  // namespace shootdown::sys
