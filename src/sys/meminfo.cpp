// SPDX-License-Identifier: Apache-2.0
#include "sys/meminfo.hpp"

#include <algorithm>
#include <charconv>
#include <unistd.h>
#include <sstream>
#include <vector>

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

namespace shootdown::sys {

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::optional<std::int64_t> number(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  const std::string t = trim(*text);
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 19) return std::nullopt;
  return std::stoll(t);
}

// "/a/b" under a mount whose root is "/a": "b"; nullopt when outside it.
std::optional<std::string> relative(const std::string& path, const std::string& root) {
  if (root == "/") return path.size() > 1 ? path.substr(1) : std::string();
  if (path == root) return std::string();
  if (path.rfind(root + "/", 0) == 0) return path.substr(root.size() + 1);
  return std::nullopt;
}
}  // namespace

std::vector<MountInfo> parse_mountinfo(const std::string& text) {
  std::vector<MountInfo> out;
  std::istringstream mi(text);
  for (std::string line; std::getline(mi, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream f(line);
    std::string id, parent, dev;
    MountInfo m;
    f >> id >> parent >> dev >> m.root >> m.mountpoint;
    std::istringstream tail(line.substr(dash + 3));
    std::string source;
    tail >> m.fstype >> source >> m.superopts;
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<CgroupMemory> parse_cgroup_memory(
    const std::string& proc_cgroup, const std::string& mountinfo,
    const std::function<std::optional<std::string>(const std::string&)>& read) {
  std::string v1_path, v2_path;
  bool have_v2 = false;
  std::istringstream in(proc_cgroup);
  for (std::string line; std::getline(in, line);) {
    const auto f1 = line.find(':');
    const auto f2 = f1 == std::string::npos ? f1 : line.find(':', f1 + 1);
    if (f2 == std::string::npos) continue;
    const std::string ctl = line.substr(f1 + 1, f2 - f1 - 1), path = line.substr(f2 + 1);
    if (line.compare(0, f1, "0") == 0 && ctl.empty()) {
      v2_path = path;
      have_v2 = true;
    }
    for (const auto& c : split(ctl, ','))
      if (c == "memory") v1_path = path;
  }
  for (const MountInfo& m : parse_mountinfo(mountinfo)) {
    const std::string &root = m.root, &mnt = m.mountpoint, &fstype = m.fstype, &superopts = m.superopts;
    CgroupMemory c;
    std::optional<std::string> rel;
    if (fstype == "cgroup" && !v1_path.empty()) {
      const auto opts = split(superopts, ',');
      if (std::find(opts.begin(), opts.end(), "memory") == opts.end()) continue;
      if (!(rel = relative(v1_path, root))) continue;
      const std::string dir = mnt + (rel->empty() ? "" : "/" + *rel);
      c.path = v1_path;
      c.version = 1;
      std::optional<std::int64_t> lim;
      if (const auto stat = read(dir + "/memory.stat")) {
        std::istringstream st(*stat);
        for (std::string k, v; st >> k >> v;)
          if (k == "hierarchical_memory_limit") lim = number(v);
      }
      if (!lim) lim = number(read(dir + "/memory.limit_in_bytes"));
      if (!lim) continue;
      c.limit = *lim >= (1LL << 62) ? -1 : *lim;
      c.usage = number(read(dir + "/memory.usage_in_bytes")).value_or(0);
      return c;
    }
    if (fstype == "cgroup2" && have_v2 && v1_path.empty()) {
      if (!(rel = relative(v2_path, root))) continue;
      std::string r = *rel;
      const auto current = number(read(mnt + (r.empty() ? "" : "/" + r) + "/memory.current"));
      if (!current) continue;  // the memory controller is not enabled here
      c.path = v2_path;
      c.version = 2;
      c.usage = *current;
      // The effective limit is the lowest memory.max on the way up.
      for (;;) {
        const auto max = read(mnt + (r.empty() ? "" : "/" + r) + "/memory.max");
        if (const auto n = number(max); n && (c.limit < 0 || *n < c.limit)) c.limit = *n;
        if (r.empty()) break;
        const auto slash = r.rfind('/');
        r = slash == std::string::npos ? std::string() : r.substr(0, slash);
      }
      return c;
    }
  }
  return std::nullopt;
}

std::optional<CgroupMemory> read_cgroup_memory() {
  return parse_cgroup_memory(read_file_or("/proc/self/cgroup", ""), read_file_or("/proc/self/mountinfo", ""),
                             [](const std::string& p) { return read_file(p); });
}

ResidentSet::ResidentSet() : statm_("/proc/self/statm"), page_(sysconf(_SC_PAGESIZE)) {}

long long ResidentSet::bytes() {
  if (!statm_.read()) return -1;
  // "size resident shared text lib data dt", in pages.
  const std::string_view t = statm_.text();
  const auto sp = t.find(' ');
  if (sp == std::string_view::npos) return -1;
  long long resident = 0;
  const auto [p, ec] = std::from_chars(t.data() + sp + 1, t.data() + t.size(), resident);
  if (ec != std::errc()) return -1;
  return resident * page_;
}

}  // namespace shootdown::sys
