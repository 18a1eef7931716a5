// SPDX-License-Identifier: Apache-2.0
// comm and cgroup v2 path of a process, from /proc/PID/comm and the "0::"
// line of /proc/PID/cgroup, cached (monitor looks a process up for every
// traced event). Entries older than max_age_ns are re-read (PIDs are
// reused); the cache is cleared when it holds more than max_entries.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/monitor_attrib.hpp"

namespace shootdown::sys {

// The cgroup v2 path in the text of /proc/PID/cgroup ("0::/user.slice/x"),
// or "" when there is no v2 line (cgroup v1 only).
std::string parse_cgroup_v2(const std::string& proc_pid_cgroup);

class TaskInfoCache {
 public:
  explicit TaskInfoCache(std::int64_t max_age_ns = 10LL * 1000000000LL, std::size_t max_entries = 4096)
      : max_age_ns_(max_age_ns), max_entries_(max_entries) {}
  TaskInfo get(int pid, std::int64_t now_ns);

 private:
  struct Cached {
    TaskInfo info;
    std::int64_t read_ns = 0;
  };
  std::int64_t max_age_ns_;
  std::size_t max_entries_;
  std::unordered_map<int, Cached> cache_;
};

}  // namespace shootdown::sys
