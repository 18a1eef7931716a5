// SPDX-License-Identifier: Apache-2.0
#include "sys/dl.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

namespace shootdown::sys {

Expected<SharedLibrary> SharedLibrary::open(const std::string& soname) {
  void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    return Error{e ? e : ("dlopen(" + soname + ") failed")};
  }
  std::string path = soname;
  struct link_map* lm = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name != nullptr && lm->l_name[0] != '\0') {
    char buf[PATH_MAX];
    path = realpath(lm->l_name, buf) ? buf : lm->l_name;
  }
  return SharedLibrary(h, std::move(path));
}

void* SharedLibrary::symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
  if (const char* v = std::getenv(name_.c_str())) old_ = v;
  if (value)
    setenv(name_.c_str(), value->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (old_)
    setenv(name_.c_str(), old_->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

Status ensure_static_tls(std::size_t bytes, char** argv) {
  static constexpr const char* kTunable = "glibc.rtld.optional_static_tls=";
  const char* cur = std::getenv("GLIBC_TUNABLES");
  std::string tunables = cur ? cur : "";
  if (const auto at = tunables.find(kTunable); at != std::string::npos) {
    if (std::strtoull(tunables.c_str() + at + std::strlen(kTunable), nullptr, 0) >= bytes) return Ok{};
  }
  tunables += (tunables.empty() ? "" : ":") + std::string(kTunable) + std::to_string(bytes);
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  execv("/proc/self/exe", argv);
  return Error{std::string("re-executing with GLIBC_TUNABLES=") + tunables + ": " + std::strerror(errno)};
}

}  // namespace shootdown::sys
