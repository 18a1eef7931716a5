// /proc/meminfo and huge page facts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

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
MemInfo read_meminfo();
// "always", "madvise" or "never": the bracketed word of the THP sysfs file.
std::string read_thp_mode(const std::string& file = "enabled");
std::string parse_bracketed(const std::string& text);

}  // namespace shootdown::sys
