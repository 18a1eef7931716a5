// SPDX-License-Identifier: Apache-2.0
// `shootdown monitor`: cumulative per-CPU counters (from /proc/interrupts and
// tlb:tlb_flush tracepoints) and the interval view computed from two of them.
// Pure: the command fills MonitorTotals, everything else is computed here
// and unit-tested.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/events.hpp"
#include "core/stall_model.hpp"

namespace shootdown {

struct MonitorCpu {
  int cpu = -1;
  std::int64_t tlb = 0;                                // /proc/interrupts TLB (since boot)
  std::int64_t cal = 0;                                // /proc/interrupts CAL (since boot)
  std::array<std::int64_t, kTlbFlushReasons> flush{};  // tlb:tlb_flush since the monitor started
  // Time (MonitorTotals::timed), since the monitor started:
  std::int64_t handler_ns = 0;    // in call-function IPI handlers that ran a shootdown flush (entry -> exit)
  std::int64_t handler_irqs = 0;  // those interrupts
  std::int64_t wait_ns = 0;       // initiators on this CPU waiting in native_flush_tlb_multi
  std::int64_t waits = 0;         // those waits
  std::int64_t wrong_ns = 0;      // handlers whose only flush was reason 5 (another process's mm, 6.14+)
  std::int64_t wrong_irqs = 0;
  // Kernel-range flushes (MonitorEvidence::kernel_flush_measured()), since the monitor started:
  std::int64_t kflush_ns = 0;         // in call-function IPI handlers that ran one (entry -> exit)
  std::int64_t kflush_irqs = 0;       // those interrupts
  std::int64_t kflush_initiated = 0;  // flushes initiated on this CPU
  std::int64_t kflush_ipis = 0;       // csds (IPIs) they queued for other CPUs
  std::int64_t kflush_noirq = 0;      // runs for another CPU outside a call-function interrupt (idle polling)
};

// A process (or kernel thread) that initiated kernel-range TLB flushes
// (flush_tlb_kernel_range, flush_tlb_all, CPA: on_each_cpu IPIs to every
// CPU, no tlb_flush tracepoint) or whose threads their IPIs interrupted.
struct MonitorKernelFlusher {
  int pid = 0;  // -1: "other" (beyond the bounded set); 0: the idle task (interrupted only)
  std::string comm;
  std::int64_t flushes = 0;   // initiated
  std::int64_t ipis = 0;      // csds queued for other CPUs by those
  std::int64_t hit_irqs = 0;  // kernel-flush interrupts while one of its threads ran
  std::int64_t hit_ns = 0;    // their handler time
};

// A process that initiated shootdowns (reason 4, and the time its threads
// waited for them: caused) or whose threads they interrupted (reason 1 and
// the handler time: suffered).
struct MonitorProcess {
  int pid = 0;
  std::string comm;
  std::int64_t flushes = 0;       // reason-4 (remote IPI send) flushes
  std::string cgroup;             // cgroup v2 path when known
  std::int64_t wait_ns = 0;       // caused: waits for its remote flushes
  std::int64_t received = 0;      // reason-1 flushes while one of its threads ran
  std::int64_t handler_ns = 0;    // suffered: shootdown IPI handler time while one of its threads ran (reasons 1 and 5)
  std::int64_t inflicted_ns = 0;  // csd link: its flushes' flush_tlb_func time on the targets
  std::int64_t inflicted_other_ns = 0;  // ... of it on tasks of another cgroup
};

// Shootdowns initiated by tasks of a cgroup (reason 4) and received while
// one of its tasks was interrupted (reason 1), with their time. path
// "other": every cgroup beyond the bounded set (core/monitor_attrib.hpp).
struct MonitorCgroup {
  std::string path;
  std::int64_t initiated = 0;
  std::int64_t received = 0;
  std::int64_t wait_ns = 0;             // caused
  std::int64_t handler_ns = 0;          // suffered
  std::int64_t inflicted_ns = 0;        // caused, csd link: the targets' flush_tlb_func time
  std::int64_t inflicted_other_ns = 0;  // ... of it on tasks of other cgroups
};

// What monitor's engine can tell, the same for the totals and each interval
// made from them.
struct MonitorEvidence {
  bool trace = false;                     // flush counts are valid
  bool attributed = false;                // per-process/cgroup tables are valid (not with --trace count)
  bool timed = false;                     // handler and wait times are valid (the BPF engine)
  std::string wait_unmeasured;            // timed, but the initiators' wait is not measured: why
  std::optional<StallModel> stall_model;  // --calibrate-from: estimates stall from handler time
  std::string unlinked;                   // timed, but no csd link (inflicted time): why
  std::string no_ipi_flushes;             // remote flushes here may go without IPIs (INVLPGB, arm64): doctor's finding
  std::string kernel_flush_unmeasured;    // "": kernel-range flushes counted and timed; else why not
  std::string kernel_flush_unwatched;     // counted, but these functions not (e.g. not in /proc/kallsyms)
  bool kernel_flush_measured() const { return kernel_flush_unmeasured.empty(); }
};

struct MonitorTotals : MonitorEvidence {
  std::int64_t mono_ns = 0;
  std::int64_t wall_ns = 0;  // CLOCK_REALTIME, for Influx timestamps
  std::vector<MonitorCpu> cpus;
  std::int64_t lost_events = 0;
  std::map<int, MonitorProcess> processes;                // pid -> cumulative (bounded: at most max_series)
  MonitorProcess process_other{-1, "other", 0, "other"};  // processes beyond the bounded set
  std::map<std::string, MonitorCgroup> cgroups;           // path -> cumulative (bounded)
  MonitorCgroup cgroup_other{"other"};
  std::map<int, MonitorKernelFlusher> kernel_flushers;     // pid -> cumulative (bounded: at most max_series)
  MonitorKernelFlusher kernel_flusher_other{-1, "other"};  // beyond the bounded set
  std::size_t max_series = 0;
};

struct MonitorInterval : MonitorEvidence {
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t wall_ns = 0;
  double seconds = 0;
  struct Cpu {
    int cpu = -1;
    std::int64_t tlb = 0, cal = 0;  // deltas
    double tlb_per_s = 0, cal_per_s = 0;
    std::int64_t tlb_total = 0, cal_total = 0;
    std::array<std::int64_t, kTlbFlushReasons> flush{};                     // deltas
    std::int64_t handler_ns = 0, handler_irqs = 0, wait_ns = 0, waits = 0;  // deltas
    std::int64_t wrong_ns = 0, wrong_irqs = 0;                              // deltas
    std::int64_t kflush_ns = 0, kflush_irqs = 0;                            // deltas
    std::int64_t kflush_initiated = 0, kflush_ipis = 0, kflush_noirq = 0;   // deltas
  };
  std::vector<Cpu> cpus;
  std::int64_t lost_events = 0;       // delta
  std::vector<MonitorProcess> top;    // initiators (deltas), most flushes first, at most top_n
  std::vector<MonitorProcess> hurt;   // processes interrupted (deltas), most handler time first, at most top_n
  std::int64_t initiators_other = 0;  // delta of the "other" process series' flushes
  MonitorProcess process_other;       // deltas of the "other" process series
  struct Cgroup {
    std::string path;                                       // or "other"
    std::int64_t initiated = 0, received = 0;               // deltas
    std::int64_t wait_ns = 0, handler_ns = 0;               // deltas: caused, suffered
    std::int64_t inflicted_ns = 0, inflicted_other_ns = 0;  // deltas
    std::vector<MonitorProcess> top;                        // its top initiating processes (deltas), at most top_n
  };
  std::vector<Cgroup> cgroups;  // non-zero ones, most active first (time, then initiated + received)
  std::vector<MonitorKernelFlusher> kernel_flushers;    // initiators (deltas), most flushes first, at most top_n
  std::vector<MonitorKernelFlusher> kernel_flush_hurt;  // interrupted (deltas), most handler time first, at most top_n
  MonitorKernelFlusher kernel_flusher_other{-1, "other"};  // deltas of the "other" series
};

// cur - prev per CPU (CPUs matched by number; a CPU missing from prev counts
// from zero). Negative deltas (counter reset, CPU hotplug) are clamped to 0.
MonitorInterval monitor_interval(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n = 5);

// The kernel-range flush part of monitor_interval: iv's kernel_flushers,
// kernel_flush_hurt and kernel_flusher_other from cur - prev.
void kernel_flush_deltas(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n, MonitorInterval& iv);

}  // namespace shootdown
