// SPDX-License-Identifier: Apache-2.0
// RLIMIT_NOFILE for per-CPU perf events: the tracer opens one fd per
// tracepoint and CPU (16 x 72 CPUs = 1152, over the usual soft limit of
// 1024; 16 x 512 = 8192). raise_fd_limit() raises this process's soft limit
// to what is needed (up to the hard limit; with CAP_SYS_RESOURCE the hard
// limit too, up to /proc/sys/fs/nr_open). A program the tool starts must not
// inherit the raised limit (a select() loop breaks past fd 1024): while an
// OriginalFdLimit is alive the soft limit is the one the process started
// with, so ChildProcess::spawn holds one around posix_spawn. The limit only
// gates new descriptors: the perf fds already open stay valid.
#pragma once

#include <cstdint>
#include <string>

#include "core/expected.hpp"

namespace shootdown::sys {

// Makes room for `more` descriptors beyond those open now. An error when the
// hard limit and the privilege do not allow it; the limit is then as high as
// allowed.
Status raise_fd_limit(std::uint64_t more);

class OriginalFdLimit {
 public:
  OriginalFdLimit();
  ~OriginalFdLimit();
  OriginalFdLimit(const OriginalFdLimit&) = delete;
  OriginalFdLimit& operator=(const OriginalFdLimit&) = delete;

 private:
  bool changed_ = false;
  std::uint64_t raised_soft_ = 0;
};

}  // namespace shootdown::sys
