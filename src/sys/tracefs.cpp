// SPDX-License-Identifier: Apache-2.0
#include "sys/tracefs.hpp"

#include <cerrno>
#include <cstring>
#include <sstream>
#include <sys/mount.h>
#include <unistd.h>

#include "sys/fs.hpp"

namespace shootdown::sys {

namespace {
constexpr const char* kDefaultMount = "/sys/kernel/tracing";

// A mounted tracefs has an "events" directory; an unmounted mount point is empty.
bool looks_mounted(const std::string& dir) {
  return ::access((dir + "/events").c_str(), R_OK | X_OK) == 0;
}
}  // namespace

bool plausible_event_format(const std::string& text) {
  if (text.empty() || text.size() > 65536) return false;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u != '\n' && u != '\t' && (u < 0x20 || u > 0x7e)) return false;
  }
  if (!(text.rfind("name: ", 0) == 0 && text.find("\nID: ") != std::string::npos &&
        text.find("\nformat:") != std::string::npos && text.find("\nprint fmt: ") != std::string::npos))
    return false;
  // Every field line exactly as the kernel writes it (kernel/trace/trace_events.c
  // f_show): "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:0|1;", N decimal.
  // libtraceevent 1.7.1 divides by zero on a mangled one
  // ("offset:2t", found by fuzz_tracefs_format): nothing else reaches it.
  std::istringstream in(text);
  std::string line;
  auto number = [](const std::string& l, std::size_t& i, const char* key, bool positive) {
    const std::string k = std::string("\t") + key + ":";
    if (l.compare(i, k.size(), k) != 0) return false;
    i += k.size();
    const std::size_t start = i;
    while (i < l.size() && l[i] >= '0' && l[i] <= '9') ++i;
    if (i == start || i - start > 9 || i >= l.size() || l[i] != ';') return false;
    if (positive && std::stol(l.substr(start, i - start)) <= 0) return false;
    ++i;
    return true;
  };
  while (std::getline(in, line)) {
    if (line.rfind("\tfield:", 0) != 0) continue;
    const std::size_t semi = line.find(';');
    if (semi == std::string::npos) return false;
    std::size_t i = semi + 1;
    if (!number(line, i, "offset", false) || !number(line, i, "size", false)) return false;
    if (line.compare(i, 9, "\tsigned:0") != 0 && line.compare(i, 9, "\tsigned:1") != 0) return false;
    i += 9;
    if (i >= line.size() || line[i] != ';' || i + 1 != line.size()) return false;
  }
  return true;
}

std::string fields_only_format(const std::string& text) {
  const auto at = text.find("\nprint fmt: ");
  if (at == std::string::npos) return text;
  return text.substr(0, at + 1) + "print fmt: \"\"\n";
}

std::string find_tracefs_mount(const std::string& proc_mounts) {
  std::istringstream in(proc_mounts);
  std::string line;
  std::string fallback;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev, dir, type;
    if (!(f >> dev >> dir >> type)) continue;
    if (type != "tracefs") continue;
    if (dir == kDefaultMount) return dir;  // prefer the canonical one
    if (fallback.empty()) fallback = dir;  // e.g. /sys/kernel/debug/tracing
  }
  return fallback;
}

Expected<std::unique_ptr<Tracefs>> Tracefs::acquire() {
  const std::string existing = find_tracefs_mount(read_file_or("/proc/mounts", ""));
  if (!existing.empty() && looks_mounted(existing)) return std::unique_ptr<Tracefs>(new Tracefs(existing, false));
  if (::access(kDefaultMount, F_OK) != 0)
    return Error{std::string("tracefs not mounted and ") + kDefaultMount +
                 " does not exist (kernel without CONFIG_TRACING?)"};
  // mount(2) needs CAP_SYS_ADMIN; tracefs ignores the source ("nodev" by convention).
  if (::mount("nodev", kDefaultMount, "tracefs", 0, nullptr) != 0)
    return Error{std::string("tracefs not mounted and mount -t tracefs failed: ") + std::strerror(errno)};
  auto t = std::unique_ptr<Tracefs>(new Tracefs(kDefaultMount, true));
  if (!looks_mounted(t->path_))
    return Error{"tracefs mounted but has no events/ directory"};  // t's destructor unmounts
  return t;
}

Tracefs::~Tracefs() {
  if (!mounted_by_us_) return;
  if (::umount2(path_.c_str(), 0) != 0 && errno == EBUSY) {
    // Someone (a shell cd-ed into it, another tracer) holds it: detach so the
    // mount disappears from the namespace now and is freed when released.
    ::umount2(path_.c_str(), MNT_DETACH);
  }
}

std::optional<int> Tracefs::event_id(const std::string& system, const std::string& name) const {
  auto s = read_file(path_ + "/events/" + system + "/" + name + "/id");
  if (!s) return std::nullopt;
  try {
    return std::stoi(trim(*s));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> Tracefs::event_format(const std::string& system, const std::string& name) const {
  return read_file(path_ + "/events/" + system + "/" + name + "/format");
}

}  // namespace shootdown::sys
