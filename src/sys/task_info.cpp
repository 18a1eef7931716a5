// SPDX-License-Identifier: Apache-2.0
#include "sys/task_info.hpp"

#include <sstream>

#include "sys/fs.hpp"

namespace shootdown::sys {

std::string parse_cgroup_v2(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

TaskInfo TaskInfoCache::get(int pid, std::int64_t now_ns) {
  auto it = cache_.find(pid);
  if (it != cache_.end() && now_ns - it->second.read_ns < max_age_ns_) return it->second.info;
  if (cache_.size() >= max_entries_) cache_.clear();
  const std::string base = "/proc/" + std::to_string(pid);
  TaskInfo ti;
  ti.comm = trim(read_file_or(base + "/comm", "?"));
  if (ti.comm.empty()) ti.comm = "?";
  auto cg = read_file(base + "/cgroup");
  ti.cgroup = cg ? parse_cgroup_v2(*cg) : "";
  if (ti.cgroup.empty()) ti.cgroup = "?";
  cache_[pid] = Cached{ti, now_ns};
  return ti;
}

}  // namespace shootdown::sys
