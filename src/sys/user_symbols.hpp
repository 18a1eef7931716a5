// SPDX-License-Identifier: Apache-2.0
// User-space symbolization for `shootdown blame` with elfutils libdwfl:
// function (demangled), file:line where DWARF exists, module+offset
// otherwise. Mappings come from /proc/PID/maps snapshots and from
// PERF_RECORD_MMAP2 records, so a target that already exited can still be
// symbolized from the files on disk: the per-process mapping table is
// rendered back into maps(5) text and handed to dwfl_linux_proc_maps_report.
// A later mapping of the same range replaces an earlier one (dlopen after
// dlclose); files replaced on disk since the sample are read as they are now.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/blame.hpp"
#include "sys/perf_sampler.hpp"

namespace shootdown::sys {

class UserSymbols {
 public:
  UserSymbols();
  ~UserSymbols();
  UserSymbols(const UserSymbols&) = delete;
  UserSymbols& operator=(const UserSymbols&) = delete;

  void add_maps_text(int pid, const std::string& maps_text);  // /proc/PID/maps content
  void add_mapping(const MmapRecord& m);

  // ip of a frame; return_address: look up ip - 1 (the call, not the next
  // instruction). Add every mapping before the first call for that pid.
  UserFrame symbolize(int pid, std::uint64_t ip, bool return_address);
  // Whether ip lies in an executable file mapping of pid.
  bool executable(int pid, std::uint64_t ip) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

std::optional<std::string> read_proc_maps(int pid);

}  // namespace shootdown::sys
