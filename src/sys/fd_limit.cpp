// SPDX-License-Identifier: Apache-2.0
#include "sys/fd_limit.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sys/fs.hpp"

namespace shootdown::sys {
namespace {

std::mutex g_mu;
bool g_saved = false;
rlimit g_original{};  // the limit before the first raise

std::uint64_t open_fds() {
  std::uint64_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

}  // namespace

Status raise_fd_limit(std::uint64_t more) {
  std::lock_guard<std::mutex> lock(g_mu);
  rlimit cur{};
  if (::getrlimit(RLIMIT_NOFILE, &cur) != 0)
    return Error{std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno)};
  const std::uint64_t need = open_fds() + more + 32;  // 32: files, sockets, the result writer
  if (cur.rlim_cur == RLIM_INFINITY || cur.rlim_cur >= need) return Ok{};
  if (!g_saved) {
    g_original = cur;
    g_saved = true;
  }
  rlimit want = cur;
  want.rlim_cur = need;
  if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < need) {
    // Above the hard limit: CAP_SYS_RESOURCE may raise it up to fs.nr_open.
    std::uint64_t nr_open = 1 << 20;
    if (auto s = read_file("/proc/sys/fs/nr_open")) nr_open = std::strtoull(s->c_str(), nullptr, 10);
    want.rlim_max = std::min<std::uint64_t>(need, nr_open);
    want.rlim_cur = want.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &want) != 0) {
      want.rlim_max = cur.rlim_max;
      want.rlim_cur = cur.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &want);
      return Error{"RLIMIT_NOFILE hard limit " + std::to_string(cur.rlim_max) + " below the " + std::to_string(need) +
                   " descriptors needed (ulimit -Hn; root can raise it)"};
    }
    if (want.rlim_cur >= need) return Ok{};
    return Error{"fs.nr_open " + std::to_string(nr_open) + " below the " + std::to_string(need) +
                 " descriptors needed"};
  }
  if (::setrlimit(RLIMIT_NOFILE, &want) != 0)
    return Error{std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno)};
  return Ok{};
}

OriginalFdLimit::OriginalFdLimit() {
  std::lock_guard<std::mutex> lock(g_mu);
  rlimit cur{};
  if (!g_saved || ::getrlimit(RLIMIT_NOFILE, &cur) != 0 || cur.rlim_cur == g_original.rlim_cur) return;
  raised_soft_ = cur.rlim_cur;
  rlimit orig = cur;
  orig.rlim_cur = g_original.rlim_cur;  // the hard limit stays: lowering it could not be undone
  changed_ = ::setrlimit(RLIMIT_NOFILE, &orig) == 0;
}

OriginalFdLimit::~OriginalFdLimit() {
  if (!changed_) return;
  std::lock_guard<std::mutex> lock(g_mu);
  rlimit cur{};
  if (::getrlimit(RLIMIT_NOFILE, &cur) != 0) return;
  cur.rlim_cur = raised_soft_;
  ::setrlimit(RLIMIT_NOFILE, &cur);
}

}  // namespace shootdown::sys
