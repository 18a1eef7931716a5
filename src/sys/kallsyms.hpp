// SPDX-License-Identifier: Apache-2.0
// Kernel symbol table from /proc/kallsyms, for naming csd functions, IPI
// callsites and callchain frames ("flush_tlb_func+0x1f"). Addresses read as
// zero (kptr_restrict, unprivileged) make the table empty: callers then print
// raw addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shootdown::sys {

class Kallsyms {
 public:
  static Kallsyms load(const std::string& path = "/proc/kallsyms");
  static Kallsyms parse(const std::string& text);  // pure, unit-tested

  bool empty() const { return syms_.empty(); }
  std::size_t size() const { return syms_.size(); }
  // "func+0xoff" (module appended as " [mod]"), "" when not covered.
  std::string symbolize(std::uint64_t addr) const;
  // Function name only, "" when not covered.
  std::string function(std::uint64_t addr) const;
  // The address of a core-kernel function by name (or its compiler clone,
  // "name.constprop.0"); 0 when absent.
  std::uint64_t address_of(const std::string& name) const;

 private:
  struct Sym {
    std::uint64_t addr;
    std::string name;  // "flush_tlb_func" or "foo [kvm]"
  };
  const Sym* lookup(std::uint64_t addr) const;
  std::vector<Sym> syms_;  // sorted by addr
};

}  // namespace shootdown::sys
