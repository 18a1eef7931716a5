// SPDX-License-Identifier: Apache-2.0
// An owned child process: spawned with posix_spawnp, polled without blocking,
// and never left behind — the destructor sends SIGTERM to a child still
// running and reaps it (waitpid retried on EINTR).
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace shootdown::sys {

class ChildProcess {
 public:
  ChildProcess() = default;
  // Starts argv[0] (PATH search) with argv; env empty = this process's
  // environment. Throws std::runtime_error "cannot run 'CMD': reason".
  static ChildProcess spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  ~ChildProcess();
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool valid() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }
  // Reaps the child if it has exited (WNOHANG); true once it has.
  bool poll();
  bool done() const noexcept { return done_; }
  // SIGTERM to a child still running, then wait for it.
  void terminate();
  int status() const noexcept { return status_; }  // waitpid status, valid once done()
  bool exited_ok() const noexcept;                 // done, exited with status 0
  // "" for exit status 0, else "exited with status N" / "killed by signal N".
  std::string describe_exit() const;

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  int status_ = 0;
};

// Whether process `pid` exists and is not a zombie (/proc/PID/stat).
bool process_alive(int pid);
// Whether thread `tid` of process `pid` exists (tgkill with signal 0).
bool thread_alive(int pid, int tid);

}  // namespace shootdown::sys
