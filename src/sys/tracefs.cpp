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
  return text.rfind("name: ", 0) == 0 && text.find("\nID: ") != std::string::npos &&
         text.find("\nformat:") != std::string::npos && text.find("\nprint fmt: ") != std::string::npos;
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

std::unique_ptr<Tracefs> Tracefs::acquire(std::string* why) {
  const std::string existing = find_tracefs_mount(read_file_or("/proc/mounts", ""));
  if (!existing.empty() && looks_mounted(existing)) return std::unique_ptr<Tracefs>(new Tracefs(existing, false));
  if (::access(kDefaultMount, F_OK) != 0) {
    if (why)
      *why =
          std::string("tracefs not mounted and ") + kDefaultMount + " does not exist (kernel without CONFIG_TRACING?)";
    return nullptr;
  }
  // mount(2) needs CAP_SYS_ADMIN; tracefs ignores the source ("nodev" by convention).
  if (::mount("nodev", kDefaultMount, "tracefs", 0, nullptr) != 0) {
    if (why) *why = std::string("tracefs not mounted and mount -t tracefs failed: ") + std::strerror(errno);
    return nullptr;
  }
  auto t = std::unique_ptr<Tracefs>(new Tracefs(kDefaultMount, true));
  if (!looks_mounted(t->path_)) {
    if (why) *why = "tracefs mounted but has no events/ directory";
    return nullptr;  // destructor unmounts
  }
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
