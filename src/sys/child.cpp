// SPDX-License-Identifier: Apache-2.0
#include "sys/child.hpp"
#include "core/errors.hpp"
#include "sys/fd_limit.hpp"
#include "sys/fs.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <spawn.h>
#include <stdexcept>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <utility>

extern char** environ;

namespace shootdown::sys {

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  if (argv.empty()) throw RuntimeError("cannot run an empty command");
  std::vector<char*> av;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  std::vector<char*> ev;
  for (const auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  ChildProcess c;
  // The child inherits no perf fds (PERF_FLAG_FD_CLOEXEC) and, spawned before
  // the caller pins itself, the caller's original affinity.
  // ... and the descriptor limit the tool started with, not the one raised
  // for its perf events (sys/fd_limit.hpp).
  int rc = 0;
  {
    const OriginalFdLimit original;
    rc = ::posix_spawnp(&c.pid_, av[0], nullptr, nullptr, av.data(), env.empty() ? environ : ev.data());
  }
  if (rc != 0) {
    c.pid_ = -1;
    throw RuntimeError("cannot run '" + argv[0] + "': " + std::strerror(rc));
  }
  return c;
}

ChildProcess::~ChildProcess() {
  terminate();
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), done_(o.done_), status_(o.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    terminate();
    pid_ = std::exchange(o.pid_, -1);
    done_ = o.done_;
    status_ = o.status_;
  }
  return *this;
}

bool ChildProcess::poll() {
  if (pid_ <= 0 || done_) return done_;
  if (::waitpid(pid_, &status_, WNOHANG) == pid_) done_ = true;
  return done_;
}

void ChildProcess::terminate() {
  if (pid_ <= 0 || done_) return;
  ::kill(pid_, SIGTERM);
  while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {}
  done_ = true;
}

bool ChildProcess::exited_ok() const noexcept {
  return done_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

std::string ChildProcess::describe_exit() const {
  if (!done_) return "still running";
  if (WIFEXITED(status_))
    return WEXITSTATUS(status_) == 0 ? "" : "exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "stopped";
}

bool process_alive(int pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  const auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  const std::string& line = *stat;
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

bool thread_alive(int pid, int tid) {
  if (pid <= 0 || tid <= 0) return false;
  return ::syscall(SYS_tgkill, pid, tid, 0) == 0 || errno == EPERM;
}

}  // namespace shootdown::sys
