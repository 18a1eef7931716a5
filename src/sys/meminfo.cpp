#include "sys/meminfo.hpp"

#include <sstream>

#include "sys/fs.hpp"

namespace shootdown::sys {

MemInfo parse_meminfo(const std::string& text) {
  MemInfo m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream rest(line.substr(colon + 1));
    long long v = 0;
    std::string unit;
    if (!(rest >> v)) continue;
    rest >> unit;
    m.bytes[line.substr(0, colon)] = unit == "kB" ? v * 1024 : v;
  }
  return m;
}

MemInfo read_meminfo() {
  return parse_meminfo(read_file_or("/proc/meminfo", ""));
}

std::string parse_bracketed(const std::string& text) {
  const auto a = text.find('[');
  const auto b = text.find(']', a == std::string::npos ? 0 : a);
  if (a == std::string::npos || b == std::string::npos) return trim(text);
  return text.substr(a + 1, b - a - 1);
}

std::string read_thp_mode(const std::string& file) {
  auto t = read_file("/sys/kernel/mm/transparent_hugepage/" + file);
  return t ? parse_bracketed(*t) : "unavailable";
}

}  // namespace shootdown::sys
