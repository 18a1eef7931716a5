// SPDX-License-Identifier: Apache-2.0
// `shootdown monitor`: who initiates and who receives shootdowns, per process
// and per cgroup v2 path, with bounded label sets (core/bounded_series.hpp).
//
//   tlb_flush reason 4 (remote IPI send) runs in the initiating task's
//   context: it counts as "initiated" for its process and its cgroup.
//   reason 1 (remote shootdown) runs in the IPI handler on the receiving CPU:
//   it counts as "received" for the process and cgroup of the task it
//   interrupted (pid 0, the idle task, is the pseudo-cgroup "(idle)").
//   Time goes the same way: an initiator's wait (caused) and the handler
//   time of the interrupts that stopped a task (suffered).
// Pure: the task's comm and cgroup come from a lookup the command supplies
// (sys/task_info.hpp reads /proc/PID/{comm,cgroup}).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/bounded_series.hpp"
#include "core/monitor.hpp"

namespace shootdown {

struct TaskInfo {
  std::string comm;    // "?" when the process is gone
  std::string cgroup;  // cgroup v2 path ("/system.slice/x.service"), "?" when unknown
};
using TaskLookup = std::function<TaskInfo(int pid)>;

inline constexpr const char* kIdleCgroup = "(idle)";

class MonitorAttribution {
 public:
  // max_series: named processes and named cgroups each (plus "other");
  // idle_ns: a name silent that long may lose its slot to a new one.
  explicit MonitorAttribution(std::size_t max_series, std::int64_t idle_ns = 300LL * 1000000000LL);

  // One tlb:tlb_flush event (reason, tgid of the current task). Reasons
  // other than 1 and 4 are ignored.
  void add_flush(int reason, int pid, std::int64_t now_ns, const TaskLookup& lookup) {
    add(reason, pid, 1, 0, now_ns, lookup);
  }
  // n such events at once (counts aggregated in the kernel, read as
  // deltas), and ns of time (reason 4: the initiator's wait; reason 1: the
  // handler time of the interrupted task); reason 4 also the time its
  // flushes ran on their targets (inflicted, and on other cgroups' tasks).
  void add(int reason, int pid, std::int64_t n, std::int64_t ns, std::int64_t now_ns, const TaskLookup& lookup,
           std::int64_t inflicted_ns = 0, std::int64_t inflicted_other_ns = 0);

  // Kernel-range flushes of a process or kernel thread (pid 0: the idle
  // task, interrupted only): flushes it initiated and the IPIs (csds) those
  // queued, or kernel-flush interrupts that stopped it and their handler
  // time. A series of its own, bounded as the others.
  void add_kernel_flush(int pid, std::int64_t flushes, std::int64_t ipis, std::int64_t hit_irqs, std::int64_t hit_ns,
                        std::int64_t now_ns, const TaskLookup& lookup);

  // Copies the cumulative tables into t.processes, t.process_other,
  // t.cgroups, t.cgroup_other, t.kernel_flushers and t.kernel_flusher_other.
  void fill(MonitorTotals& t) const;

 private:
  BoundedSeries
      processes_;  // key pid, attrs {comm, cgroup}, counts {initiated, wait, received, handler, inflicted, ...other}
  BoundedSeries cgroups_;  // key cgroup path, same counts
  BoundedSeries kflush_;   // key pid, attrs {comm}, counts {flushes, ipis, hit_irqs, hit_ns}
};

}  // namespace shootdown
