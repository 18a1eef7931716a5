// SPDX-License-Identifier: Apache-2.0
// Kernel-side counting of tlb:tlb_flush per CPU and reason: one counting
// perf event (no sampling, no ring buffer: the kernel only increments a
// counter) per CPU and reason, each with the filter "reason == R". Reading
// is one read(2) per event. What `monitor --trace count` uses: the per-CPU
// reason counts at perf-stat cost, without per-process attribution (which
// needs each event's task, hence a ring).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "core/monitor.hpp"

namespace shootdown::sys {

class TlbFlushCounter {
 public:
  // An error when tracefs, the tracepoint, perf_event_open or a filter fails.
  static Expected<std::unique_ptr<TlbFlushCounter>> open(const std::vector<int>& cpus);
  ~TlbFlushCounter();
  TlbFlushCounter(const TlbFlushCounter&) = delete;
  TlbFlushCounter& operator=(const TlbFlushCounter&) = delete;

  // Counts since open() for one CPU (zeros for a CPU not opened).
  std::array<std::int64_t, kTlbFlushReasons> read(int cpu) const;

 private:
  TlbFlushCounter() = default;
  struct Cpu {
    int cpu = -1;
    std::array<int, kTlbFlushReasons> fd{};
  };
  std::vector<Cpu> cpus_;
};

}  // namespace shootdown::sys
