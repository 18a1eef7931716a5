#include "sys/user_symbols.hpp"

#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fmt/core.h>
#include <sstream>
#include <sys/mman.h>

#include "sys/fs.hpp"

namespace shootdown::sys {

namespace {

struct Mapping {
  std::uint64_t end = 0, pgoff = 0;
  std::uint32_t maj = 0, min = 0;
  std::uint64_t ino = 0;
  std::string perms;  // "r-xp"
  std::string path;
};

char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kCallbacks = {
    dwfl_linux_proc_find_elf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &g_debuginfo_path,
};

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? strip_parameters(d) : std::string(name);
  std::free(d);
  // "(anonymous namespace)::munmap_often" -> "munmap_often": shorter stacks.
  static const std::string kAnon = "(anonymous namespace)::";
  for (auto p = out.find(kAnon); p != std::string::npos; p = out.find(kAnon)) out.erase(p, kAnon.size());
  return out;
}

// Names come from the target's files, which a hostile target controls: keep
// terminal control bytes (escape sequences that could rewrite what a root
// user sees) and runaway lengths out of the report.
std::string printable(std::string s) {
  constexpr std::size_t kMax = 512;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

std::string basename_of(const std::string& p) {
  const auto s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

struct UserSymbols::Impl {
  struct Proc {
    std::map<std::uint64_t, Mapping> maps;  // start -> mapping
    Dwfl* dwfl = nullptr;
    bool built = false;
  };
  std::map<int, Proc> procs;

  static void insert(Proc& p, std::uint64_t start, Mapping m) {
    // The new mapping replaces what it overlaps, as mmap(MAP_FIXED) does:
    // ld.so maps a whole ELF span at offset 0 and then maps segments over
    // it, so keep the parts outside [start, end) (the r--p head at offset 0
    // is what gives libdwfl the load bias).
    const std::uint64_t end = m.end;
    auto it = p.maps.lower_bound(start);
    if (it != p.maps.begin() && std::prev(it)->second.end > start) it = std::prev(it);
    std::vector<std::pair<std::uint64_t, Mapping>> keep;
    while (it != p.maps.end() && it->first < end) {
      const std::uint64_t s = it->first;
      const Mapping old = it->second;
      it = p.maps.erase(it);
      if (s < start) {
        Mapping head = old;
        head.end = start;
        keep.emplace_back(s, head);
      }
      if (old.end > end) {
        Mapping tail = old;
        tail.pgoff = old.pgoff + (end - s);
        keep.emplace_back(end, tail);
      }
    }
    for (auto& [s, mm] : keep) p.maps.emplace(s, std::move(mm));
    p.maps.emplace(start, std::move(m));
  }

  Dwfl* dwfl_for(int pid) {
    Proc& p = procs[pid];
    if (p.built) return p.dwfl;
    p.built = true;
    std::string text;
    for (const auto& [start, m] : p.maps)
      text += fmt::format("{:x}-{:x} {} {:08x} {:02x}:{:02x} {} {}\n", start, m.end, m.perms, m.pgoff, m.maj, m.min,
                          m.ino, m.path);
    if (text.empty()) return nullptr;
    p.dwfl = dwfl_begin(&kCallbacks);
    if (!p.dwfl) return nullptr;
    FILE* f = fmemopen(text.data(), text.size(), "r");
    if (!f) return p.dwfl;
    dwfl_report_begin(p.dwfl);
    dwfl_linux_proc_maps_report(p.dwfl, f);
    dwfl_report_end(p.dwfl, nullptr, nullptr);
    std::fclose(f);
    return p.dwfl;
  }
};

UserSymbols::UserSymbols() : impl_(std::make_unique<Impl>()) {}
UserSymbols::~UserSymbols() {
  for (auto& [pid, p] : impl_->procs)
    if (p.dwfl) dwfl_end(p.dwfl);
}

void UserSymbols::add_maps_text(int pid, const std::string& text) {
  auto& p = impl_->procs[pid];
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long start = 0, end = 0, off = 0, ino = 0;
    unsigned maj = 0, min = 0;
    char perms[8] = {};
    int n = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min, &ino, &n) <
        7)
      continue;
    std::string path =
        n > 0 && static_cast<std::size_t>(n) <= line.size() ? trim(line.substr(static_cast<std::size_t>(n))) : "";
    if (path.empty() || path[0] != '/' || ino == 0) continue;
    Impl::insert(p, start, Mapping{end, off, maj, min, ino, perms, path});
  }
}

void UserSymbols::add_mapping(const MmapRecord& m) {
  std::string perms;
  perms += (m.prot & PROT_READ) ? 'r' : '-';
  perms += (m.prot & PROT_WRITE) ? 'w' : '-';
  perms += (m.prot & PROT_EXEC) ? 'x' : '-';
  perms += 'p';
  Impl::insert(impl_->procs[m.pid], m.start, Mapping{m.start + m.len, m.pgoff, m.maj, m.min, m.ino, perms, m.path});
}

bool UserSymbols::has_mappings(int pid) const {
  auto it = impl_->procs.find(pid);
  return it != impl_->procs.end() && !it->second.maps.empty();
}

bool UserSymbols::executable(int pid, std::uint64_t ip) const {
  auto pit = impl_->procs.find(pid);
  if (pit == impl_->procs.end()) return false;
  const auto& maps = pit->second.maps;
  auto it = maps.upper_bound(ip);
  if (it == maps.begin()) return false;
  --it;
  return ip < it->second.end && it->second.perms.size() > 2 && it->second.perms[2] == 'x';
}

UserFrame UserSymbols::symbolize(int pid, std::uint64_t ip, bool return_address) {
  UserFrame f;
  f.ip = ip;
  Dwfl* d = impl_->dwfl_for(pid);
  if (!d) return f;
  const Dwarf_Addr lookup = return_address && ip > 0 ? ip - 1 : ip;
  Dwfl_Module* mod = dwfl_addrmodule(d, lookup);
  if (!mod) return f;
  const char* mname = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  f.module = printable(basename_of(mname ? mname : ""));
  Dwarf_Addr bias = 0;
  if (dwfl_module_getelf(mod, &bias)) f.offset = ip - bias;
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, lookup, &off, &sym, nullptr, nullptr, nullptr);
  f.function = printable(demangle(name));
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, lookup)) {
    int lineno = 0;
    const char* src = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (src) {
      f.file = printable(basename_of(src));
      f.line = lineno;
    }
  }
  return f;
}

std::optional<std::string> read_proc_maps(int pid) {
  return read_file("/proc/" + std::to_string(pid) + "/maps");
}

}  // namespace shootdown::sys
