// Small file helpers for /proc and /sys. A root prefix lets tests point the
// readers at fixture trees (tests/fixtures/...).
#pragma once

#include <optional>
#include <string>

namespace shootdown::sys {

// Prefix prepended to absolute /proc and /sys paths; "" in production.
// Tests set it to a fixture tree. Not thread-safe: set before use.
void set_root(std::string root);
const std::string& root();

std::optional<std::string> read_file(const std::string& path);  // path under root()
std::string read_file_or(const std::string& path, std::string fallback);
std::string trim(std::string s);
bool write_file(const std::string& path, const std::string& content, std::string* why = nullptr);
bool path_exists(const std::string& path);
// An existing directory this process may create files in (false + why:
// "not a directory", "read-only file system", "permission denied").
bool writable_directory(const std::string& path, std::string* why = nullptr);

}  // namespace shootdown::sys
