// `shootdown monitor`: cumulative per-CPU counters (from /proc/interrupts and
// tlb:tlb_flush tracepoints) and the interval view computed from two of them.
// Pure: the command fills MonitorTotals, everything else is computed here
// and unit-tested.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/events.hpp"

namespace shootdown {

struct MonitorCpu {
  int cpu = -1;
  std::int64_t tlb = 0;                                // /proc/interrupts TLB (since boot)
  std::int64_t cal = 0;                                // /proc/interrupts CAL (since boot)
  std::array<std::int64_t, kTlbFlushReasons> flush{};  // tlb:tlb_flush since the monitor started
};

struct MonitorInitiator {
  int pid = 0;
  std::string comm;
  std::int64_t flushes = 0;  // reason-4 (remote IPI send) flushes
};

struct MonitorTotals {
  std::int64_t mono_ns = 0;
  std::int64_t wall_ns = 0;  // CLOCK_REALTIME, for Influx timestamps
  std::vector<MonitorCpu> cpus;
  bool trace = false;  // flush counts are valid
  std::int64_t lost_events = 0;
  std::map<int, MonitorInitiator> initiators;  // pid -> cumulative
};

struct MonitorInterval {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t wall_ns = 0;
  double seconds = 0;
  struct Cpu {
    int cpu = -1;
    std::int64_t tlb = 0, cal = 0;  // deltas
    double tlb_per_s = 0, cal_per_s = 0;
    std::int64_t tlb_total = 0, cal_total = 0;
    std::array<std::int64_t, kTlbFlushReasons> flush{};  // deltas
  };
  std::vector<Cpu> cpus;
  bool trace = false;
  std::int64_t lost_events = 0;       // delta
  std::vector<MonitorInitiator> top;  // deltas, most first, at most top_n
};

// cur - prev per CPU (CPUs matched by number; a CPU missing from prev counts
// from zero). Negative deltas (counter reset, CPU hotplug) are clamped to 0.
MonitorInterval monitor_interval(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n = 5);

}  // namespace shootdown
