// SPDX-License-Identifier: Apache-2.0
// Thin wrappers for loading a shared library privately (dlopen RTLD_LOCAL:
// its symbols stay out of the process's global scope, so only code that asks
// this handle for an entry point uses it) and for setting an environment
// variable for a moment. They decide nothing: experiment/ chooses what to
// load and with which settings.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "core/expected.hpp"

namespace shootdown::sys {

class SharedLibrary {
 public:
  // dlopen(soname, RTLD_NOW | RTLD_LOCAL); the error is dlerror()'s.
  static Expected<SharedLibrary> open(const std::string& soname);
  SharedLibrary(SharedLibrary&& o) noexcept : handle_(o.handle_), path_(std::move(o.path_)) { o.handle_ = nullptr; }
  SharedLibrary& operator=(SharedLibrary&& o) noexcept {
    std::swap(handle_, o.handle_);
    std::swap(path_, o.path_);
    return *this;
  }
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  // Never dlclose'd: an allocator cannot be unloaded while memory it handed
  // out or threads it started may still exist.
  ~SharedLibrary() = default;

  void* symbol(const char* name) const;              // nullptr when the library lacks it
  const std::string& path() const { return path_; }  // the file the loader chose (realpath)

 private:
  SharedLibrary(void* h, std::string path) : handle_(h), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

// Sets (value) or unsets (nullopt) one environment variable until destroyed,
// then restores what was there. Not thread-safe (setenv): the experiment's
// set-up runs it before any thread reads the environment.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// glibc fixes its optional static TLS surplus at process start; a library
// with initial-exec TLS larger than it (jemalloc) cannot be dlopen'ed later.
// Ok when GLIBC_TUNABLES already asks for at least `bytes`; otherwise
// re-executes /proc/self/exe with argv and the tunable added (returns only
// when the exec failed, with the error).
Status ensure_static_tls(std::size_t bytes, char** argv);

}  // namespace shootdown::sys
