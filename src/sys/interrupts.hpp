// SPDX-License-Identifier: Apache-2.0
// /proc/interrupts: per-CPU counters by row (TLB, CAL, LOC, RES, numbered IRQs).
// No root needed. parse_interrupts is pure (text in) so it is unit-tested.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "sys/fs.hpp"

namespace shootdown::sys {

struct InterruptsSnapshot {
  std::int64_t mono_ns = 0;  // CLOCK_MONOTONIC when read
  std::vector<int> cpus;     // column order (CPU numbers from the header)
  // row name ("TLB", "CAL", "LOC", "RES", "24", ...) -> count per column
  std::map<std::string, std::vector<std::int64_t>> rows;
  std::map<std::string, std::string> descriptions;  // row -> trailing text ("TLB shootdowns")

  // Count for a row and CPU number; nullopt when the row or CPU is unknown.
  std::optional<std::int64_t> get(const std::string& row, int cpu) const;
};

Expected<InterruptsSnapshot> parse_interrupts(const std::string& text);
Expected<InterruptsSnapshot> read_interrupts();  // /proc/interrupts + mono_ns

// The raw text of /proc/interrupts captured at one instant without allocating
// (RereadableFile), parsed later. run brackets its counted span with two of
// these: the span must contain nothing of the tool's own making, and under
// sanitizers even parsing (malloc writing fresh pages) sends TLB IPIs.
class InterruptsCapture {
 public:
  InterruptsCapture();
  bool capture();  // read + CLOCK_MONOTONIC stamp; false + error()
  // How long the last read took (CLOCK_MONOTONIC before to after). The file
  // is generated CPU by CPU: an interrupt on a CPU whose column was already
  // read, before the stamp, is traced inside the window but not counted.
  std::int64_t read_ns() const { return read_ns_; }
  std::int64_t mono_ns() const { return mono_ns_; }  // the stamp of the last capture (InterruptsSnapshot::mono_ns)
  const std::string& error() const { return file_.error(); }
  Expected<InterruptsSnapshot> snapshot() const;  // parse the captured text

 private:
  RereadableFile file_;
  std::int64_t mono_ns_ = 0;
  std::int64_t read_ns_ = 0;
  bool captured_ = false;
};

// after - before for one row and CPU (0 when missing).
std::int64_t interrupts_delta(const InterruptsSnapshot& before, const InterruptsSnapshot& after, const std::string& row,
                              int cpu);

}  // namespace shootdown::sys
