// SPDX-License-Identifier: Apache-2.0
#include "sink/atomic_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/expected.hpp"

namespace shootdown::sink {

namespace {

Status mkdir_p(const std::string& path) {
  if (path.empty()) return Ok{};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Error{"exists and is not a directory"};
    return Ok{};
  }
  const auto slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    Status parent = mkdir_p(path.substr(0, slash));
    if (!parent) return parent;
  }
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Error{std::strerror(errno)};
  return Ok{};
}

void write_all(int fd, const std::string& content, const std::string& tmp) {
  std::size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw RuntimeError("writing " + tmp + ": " + err);
    }
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

OutputDir::OutputDir(std::string path) : path_(std::move(path)) {
  while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
  if (const Status made = mkdir_p(path_); !made)
    throw UsageError("--out " + path_ + ": cannot create directory: " + made.error() +
                     " (accepted: a directory this user can write)");
  const std::string probe = path_ + "/.shootdown-probe." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) throw UsageError("--out " + path_ + ": directory is not writable: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError("cannot create " + tmp + ": " + std::strerror(errno));
  write_all(fd, content, tmp);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw RuntimeError("cannot flush " + tmp + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw RuntimeError("cannot rename " + tmp + " to " + path + ": " + err);
  }
}

AtomicStream::AtomicStream(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError("cannot create " + tmp_ + ": " + std::strerror(errno));
  file_ = ::fdopen(fd, "w");
  if (!file_) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp_.c_str());
    throw RuntimeError("cannot open " + tmp_ + ": " + err);
  }
}

AtomicStream::~AtomicStream() {
  if (!file_) return;
  std::fclose(file_);
  ::unlink(tmp_.c_str());
}

void AtomicStream::commit() {
  if (!file_) throw RuntimeError(path_ + ": already committed");
  std::FILE* f = file_;
  file_ = nullptr;
  bool written = std::fflush(f) == 0 && !std::ferror(f) && ::fsync(::fileno(f)) == 0;
  std::string err = written ? "" : std::strerror(errno);
  if (std::fclose(f) != 0 && written) {
    written = false;
    err = std::strerror(errno);
  }
  if (!written) throw RuntimeError("cannot write " + tmp_ + ": " + err + " (what was written is kept there)");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw RuntimeError("cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno) +
                       " (the output is kept in " + tmp_ + ")");
}

void OutputDir::write(const std::string& name, const std::string& content) {
  write_file_atomic(path_ + "/" + name, content);
  written_.push_back(path_ + "/" + name);
}

}  // namespace shootdown::sink
