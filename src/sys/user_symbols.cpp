// SPDX-License-Identifier: Apache-2.0
#include "sys/user_symbols.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <fmt/core.h>
#include <sstream>
#include <sys/mman.h>

#include "core/eh_frame.hpp"
#include "sys/fs.hpp"

namespace shootdown::sys {

namespace {

struct Mapping {
  std::uint64_t end = 0, pgoff = 0;
  std::uint32_t maj = 0, min = 0;
  std::uint64_t ino = 0;
  std::string perms;  // "r-xp"
  std::string path;   // kAnonExec for anonymous executable memory
};

// Anonymous executable memory (perf's name for it in MMAP2 records): JIT
// code caches, a JVM's interpreter. Real code, no file to symbolize from.
const std::string kAnonExec = "//anon";

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

// The .eh_frame_hdr and .eh_frame sections of a module's ELF (empty when absent).
bool eh_sections(Elf* elf, EhSection& hdr, EhSection& eh) {
  std::size_t shstrndx = 0;
  if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!name) continue;
    EhSection* into = std::strcmp(name, ".eh_frame_hdr") == 0 ? &hdr
                      : std::strcmp(name, ".eh_frame") == 0   ? &eh
                                                              : nullptr;
    if (!into) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d || !d->d_buf) continue;
    into->bytes = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(d->d_buf), d->d_size);
    into->addr = sh.sh_addr;
  }
  return !hdr.bytes.empty() && !eh.bytes.empty();
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
      if (m.path != kAnonExec)
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
    if (path.empty() && perms[2] == 'x') {  // anonymous executable memory (JIT code)
      Impl::insert(p, start, Mapping{end, 0, 0, 0, 0, perms, kAnonExec});
      continue;
    }
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
  if (auto pit = impl_->procs.find(pid); pit != impl_->procs.end()) {
    auto it = pit->second.maps.upper_bound(ip);
    if (it != pit->second.maps.begin() && ip < std::prev(it)->second.end && std::prev(it)->second.path == kAnonExec &&
        std::prev(it)->second.perms.size() > 2 && std::prev(it)->second.perms[2] == 'x') {
      f.jit = true;
      return f;
    }
  }
  Dwfl* d = impl_->dwfl_for(pid);
  if (!d) return f;
  const Dwarf_Addr lookup = return_address && ip > 0 ? ip - 1 : ip;
  Dwfl_Module* mod = dwfl_addrmodule(d, lookup);
  if (!mod) return f;
  const char* mname = dwfl_module_info(mod, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  f.module = printable(basename_of(mname ? mname : ""));
  f.module_path = printable(mname ? mname : "");
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);
  if (elf) f.offset = ip - bias;
  GElf_Off off = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(mod, lookup, &off, &sym, nullptr, nullptr, nullptr);
  f.function = printable(demangle(name));
  if (f.function.empty()) {
    // No symbol (a static function of a stripped library): the .eh_frame
    // FDE holding the address gives the function's start, so every
    // address of one function is one frame, not one call site per instruction.
    EhSection hdr, eh;
    if (elf && eh_sections(elf, hdr, eh))
      if (auto start = eh_frame_function_start(hdr, eh, lookup - bias)) f.function_start = *start;
  }
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
