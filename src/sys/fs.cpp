// SPDX-License-Identifier: Apache-2.0
#include "sys/fs.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace shootdown::sys {

namespace {
std::string g_root;
std::string full(const std::string& path) {
  return g_root.empty() || path.empty() || path[0] != '/' ? path : g_root + path;
}
}  // namespace

void set_root(std::string root) {
  g_root = std::move(root);
}
const std::string& root() {
  return g_root;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(full(path), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_file_or(const std::string& path, std::string fallback) {
  auto s = read_file(path);
  return s ? *s : std::move(fallback);
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

Status write_file(const std::string& path, const std::string& content) {
  std::ofstream out(full(path), std::ios::binary | std::ios::trunc);
  if (!out) return Error{std::strerror(errno)};
  out << content;
  out.flush();
  if (!out) return Error{std::strerror(errno)};
  return Ok{};
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(full(path).c_str(), &st) == 0;
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(full(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status writable_directory(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error{std::strerror(errno)};
  if (!S_ISDIR(st.st_mode)) return Error{"not a directory"};
  // access(W_OK) reports EROFS even for root.
  if (::access(path.c_str(), W_OK | X_OK) != 0) return Error{std::strerror(errno)};
  return Ok{};
}

RereadableFile::RereadableFile(const std::string& path) {
  fd_ = ::open(full(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    error_ = "cannot open " + path + ": " + std::strerror(errno);
    return;
  }
  buf_.assign(64 * 1024, '\0');
  if (!read()) return;
  if (buf_.size() < 4 * len_) buf_.assign(4 * len_, '\0');  // written: no first-touch fault later
  len_ = 0;
}

RereadableFile::~RereadableFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool RereadableFile::read() {
  if (fd_ < 0) return false;
  len_ = 0;
  for (;;) {
    if (len_ == buf_.size()) buf_.resize(buf_.size() * 2);
    const ssize_t n = ::pread(fd_, buf_.data() + len_, buf_.size() - len_, static_cast<off_t>(len_));
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = std::string("read: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) return true;
    len_ += static_cast<std::size_t>(n);
  }
}

}  // namespace shootdown::sys
