// SPDX-License-Identifier: Apache-2.0
#include "sys/kallsyms.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/core.h>
#include <sstream>

#include "sys/fs.hpp"

namespace shootdown::sys {

Kallsyms Kallsyms::load(const std::string& path) {
  return parse(read_file_or(path, ""));
}

Kallsyms Kallsyms::parse(const std::string& text) {
  Kallsyms k;
  std::istringstream in(text);
  std::string line;
  bool nonzero = false;
  while (std::getline(in, line)) {
    // "ffffffff8134aec0 t flush_tlb_func" or "... t foo\t[kvm]"
    std::istringstream f(line);
    std::string addr_s, type, name, mod;
    if (!(f >> addr_s >> type >> name)) continue;
    f >> mod;
    if (type.size() != 1) continue;
    const char t = static_cast<char>(type[0] | 0x20);
    if (t != 't' && t != 'w') continue;  // text symbols only (weak code included)
    std::uint64_t addr = 0;
    auto r = std::from_chars(addr_s.data(), addr_s.data() + addr_s.size(), addr, 16);
    if (r.ec != std::errc{}) continue;
    if (addr != 0) nonzero = true;
    k.syms_.push_back({addr, mod.empty() ? name : name + " " + mod});
  }
  if (!nonzero) {
    k.syms_.clear();  // kptr_restrict: every address reads as 0
    return k;
  }
  std::stable_sort(k.syms_.begin(), k.syms_.end(), [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
  return k;
}

const Kallsyms::Sym* Kallsyms::lookup(std::uint64_t addr) const {
  auto it =
      std::upper_bound(syms_.begin(), syms_.end(), addr, [](std::uint64_t a, const Sym& s) { return a < s.addr; });
  if (it == syms_.begin()) return nullptr;
  --it;
  // The next symbol bounds this one; beyond ~1 MiB it is not a function of ours.
  if (addr - it->addr > (1u << 20)) return nullptr;
  return &*it;
}

std::string Kallsyms::symbolize(std::uint64_t addr) const {
  const Sym* s = lookup(addr);
  if (!s) return {};
  const auto sp = s->name.find(' ');
  const std::string fn = s->name.substr(0, sp);
  const std::string mod = sp == std::string::npos ? "" : s->name.substr(sp);
  return fmt::format("{}+{:#x}{}", fn, addr - s->addr, mod);
}

std::uint64_t Kallsyms::address_of(const std::string& name) const {
  std::uint64_t clone = 0;
  for (const Sym& s : syms_) {
    if (s.name == name) return s.addr;
    if (!clone && s.name.size() > name.size() && s.name.compare(0, name.size(), name) == 0 &&
        s.name[name.size()] == '.' && s.name.find(' ') == std::string::npos)
      clone = s.addr;
  }
  return clone;
}

std::string Kallsyms::function(std::uint64_t addr) const {
  const Sym* s = lookup(addr);
  if (!s) return {};
  return s->name.substr(0, s->name.find(' '));
}

}  // namespace shootdown::sys
