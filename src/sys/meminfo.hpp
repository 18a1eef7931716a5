// SPDX-License-Identifier: Apache-2.0
// /proc/meminfo and huge page facts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sys/fs.hpp"

namespace shootdown::sys {

struct MemInfo {
  std::map<std::string, std::int64_t> bytes;  // "MemAvailable" -> bytes (kB fields scaled), counts unscaled
  std::int64_t get(const std::string& key, std::int64_t fallback = 0) const {
    auto it = bytes.find(key);
    return it == bytes.end() ? fallback : it->second;
  }
  std::int64_t mem_available() const { return get("MemAvailable"); }
  std::int64_t hugepages_free() const { return get("HugePages_Free"); }        // count
  std::int64_t hugepage_size() const { return get("Hugepagesize", 2 << 20); }  // bytes
};

MemInfo parse_meminfo(const std::string& text);

// The memory limit of this process's cgroup (a container, a systemd slice):
// MemAvailable says what the machine has, but the kernel OOM-kills a process
// whose cgroup exceeds its limit long before that.
struct CgroupMemory {
  std::string path;         // the cgroup, as /proc/self/cgroup names it ("/docker/abc")
  int version = 0;          // 1 (memory controller) or 2 (unified)
  std::int64_t limit = -1;  // effective limit in bytes (the lowest on the way to the root); -1 = none
  std::int64_t usage = 0;   // bytes charged to the cgroup now
};
// From /proc/self/cgroup and /proc/self/mountinfo text and a reader of files
// under the cgroup mount (relative path -> content): testable on fixtures.
// nullopt when no memory cgroup is mounted or found.
// One line of /proc/PID/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS
// ... - FSTYPE SOURCE SUPEROPTS" (the fields the cgroup readers need).
struct MountInfo {
  std::string root, mountpoint, fstype, superopts;
};
std::vector<MountInfo> parse_mountinfo(const std::string& text);

std::optional<CgroupMemory> parse_cgroup_memory(
    const std::string& proc_cgroup, const std::string& mountinfo,
    const std::function<std::optional<std::string>(const std::string&)>& read);
std::optional<CgroupMemory> read_cgroup_memory();

// The process's resident set from /proc/self/statm, read into a buffer made
// up front (a RereadableFile: no allocation, so safe inside a measured span).
class ResidentSet {
 public:
  ResidentSet();
  long long bytes();  // -1 when unreadable

 private:
  RereadableFile statm_;
  long page_;
};
MemInfo read_meminfo();
// "always", "madvise" or "never": the bracketed word of the THP sysfs file.
std::string read_thp_mode(const std::string& file = "enabled");
std::string parse_bracketed(const std::string& text);

}  // namespace shootdown::sys
