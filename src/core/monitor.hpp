// SPDX-License-Identifier: Apache-2.0
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
  std::string cgroup;        // cgroup v2 path when known
};

// Shootdowns initiated by tasks of a cgroup (reason 4) and received while
// one of its tasks was interrupted (reason 1). path "other": every cgroup
// beyond the bounded set (core/monitor_attrib.hpp).
struct MonitorCgroup {
  std::string path;
  std::int64_t initiated = 0;
  std::int64_t received = 0;
};

struct MonitorTotals {
  std::int64_t mono_ns = 0;
  std::int64_t wall_ns = 0;  // CLOCK_REALTIME, for Influx timestamps
  std::vector<MonitorCpu> cpus;
  bool trace = false;       // flush counts are valid
  bool attributed = false;  // per-process/cgroup tables are valid (not with --trace count)
  std::int64_t lost_events = 0;
  std::map<int, MonitorInitiator> initiators;    // pid -> cumulative (bounded: at most max_series)
  std::int64_t initiators_other = 0;             // reason-4 flushes of processes beyond the bounded set
  std::map<std::string, MonitorCgroup> cgroups;  // path -> cumulative (bounded)
  MonitorCgroup cgroup_other{"other", 0, 0};
  std::size_t max_series = 0;
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
  bool attributed = false;
  std::int64_t lost_events = 0;       // delta
  std::vector<MonitorInitiator> top;  // deltas, most first, at most top_n
  std::int64_t initiators_other = 0;  // delta of the "other" process series
  struct Cgroup {
    std::string path;                          // or "other"
    std::int64_t initiated = 0, received = 0;  // deltas
    std::vector<MonitorInitiator> top;         // its top initiating processes (deltas), at most top_n
  };
  std::vector<Cgroup> cgroups;  // non-zero ones, most active first (initiated + received)
};

// cur - prev per CPU (CPUs matched by number; a CPU missing from prev counts
// from zero). Negative deltas (counter reset, CPU hotplug) are clamped to 0.
MonitorInterval monitor_interval(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n = 5);

}  // namespace shootdown
