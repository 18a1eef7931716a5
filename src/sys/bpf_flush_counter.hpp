// SPDX-License-Identifier: Apache-2.0
// In-kernel aggregation of tlb:tlb_flush with a BPF program (libbpf, CO-RE
// against the running kernel's BTF): the engine `monitor` prefers, because a
// fleet agent runs all the time and must cost what a bpftrace map count
// costs, not one ring record per flush. The program (src/bpf/
// flush_count.bpf.c, built into this binary) keeps per-CPU counts by reason
// and a bounded table {tgid, reason 1|4} -> count, cgroup v2 id, comm.
// It also times what the flushes cost (flush_count.bpf.c says how): the
// shootdown IPI handlers per CPU and per interrupted process, the
// initiators' wait per process.
// This wrapper loads, attaches, reads and erases; what to make of the counts
// is core/monitor_attrib's. Destruction detaches and unloads (the whole
// restore: the program and maps live only as long as their fds).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "core/monitor.hpp"

namespace shootdown::sys {

struct BpfTaskCount {
  int tgid = 0;                         // 0: the idle task (reason 1 only)
  int reason = 0;                       // 1 (received: the interrupted task) or 4 (initiated)
  std::int64_t count = 0;               // cumulative since open()
  std::int64_t ns = 0;                  // reason 1: handler time suffered; 4: wait in native_flush_tlb_multi
  std::int64_t inflicted_ns = 0;        // reason 4, csd link: its targets' flush_tlb_func time
  std::int64_t inflicted_other_ns = 0;  // ... on tasks of another cgroup
  std::uint64_t cgroup_id = 0;          // cgroup v2 id of the process when first counted (0: unknown)
  std::string comm;                     // the comm of the thread counted first ("" unknown)
};

// Per CPU, cumulative since open().
struct BpfCpuTime {
  std::int64_t handler_ns = 0;    // call-function IPI handlers that ran a shootdown flush, entry -> exit
  std::int64_t handler_irqs = 0;  // those interrupts
  std::int64_t wait_ns = 0;       // initiators' wait in native_flush_tlb_multi on this CPU
  std::int64_t waits = 0;
  std::int64_t wrong_ns = 0;  // handlers whose only flush was reason 5 (an mm no longer loaded)
  std::int64_t wrong_irqs = 0;
  // Kernel-range flushes (csd tracepoints and a watched function):
  std::int64_t kflush_ns = 0;         // call-function IPI handlers that ran one, entry -> exit
  std::int64_t kflush_irqs = 0;       // those interrupts
  std::int64_t kflush_initiated = 0;  // flushes initiated on this CPU (its own run of the function)
  std::int64_t kflush_queued = 0;     // csds they queued for other CPUs (the IPIs)
  std::int64_t kflush_noirq = 0;      // a csd's run outside a call-function interrupt (idle polling)
};

// The kernel-range flush functions on_each_cpu() runs (flush_count.bpf.c
// config[2..4]): their kallsyms addresses, 0 = not watched.
struct KernelFlushFuncs {
  std::uint64_t do_kernel_range_flush = 0;
  std::uint64_t do_flush_tlb_all = 0;
  std::uint64_t cpa_flush_tlb = 0;  // __cpa_flush_tlb
  bool any() const { return do_kernel_range_flush != 0 || do_flush_tlb_all != 0 || cpa_flush_tlb != 0; }
};

// BpfTaskCount::reason keys beyond the tlb_flush reasons (flush_count.bpf.c
// KEY_KFLUSH_*): interrupted by a kernel-range flush (count: interrupts, ns:
// handler time) and initiated ones (count: flushes, ns: the csds queued).
inline constexpr int kBpfKeyKernelFlushHit = 8;
inline constexpr int kBpfKeyKernelFlushInit = 9;

class BpfFlushCounter {
 public:
  // An error when it cannot load (no BPF permission, no BTF, verifier
  // refusal: its log's last line, the tracepoint missing). only_tgid > 0:
  // count only flushes whose current task belongs to that process.
  // flush_tlb_func: its address (kallsyms), for the csd way of ending a
  // wait; 0: not that way. kernel_flush: the kernel-range flush functions
  // to count (with the csd tracepoints only).
  static Expected<std::unique_ptr<BpfFlushCounter>> open(int only_tgid, std::uint64_t flush_tlb_func,
                                                         const KernelFlushFuncs& kernel_flush = {});
  ~BpfFlushCounter();
  BpfFlushCounter(const BpfFlushCounter&) = delete;
  BpfFlushCounter& operator=(const BpfFlushCounter&) = delete;

  using Reasons = std::array<std::int64_t, kTlbFlushReasons>;
  // Counts since open() by CPU (index = CPU number, every possible CPU).
  std::vector<Reasons> read_reasons() const;
  // Flushes of reason 1 or 4 the task table had no room for (counted by
  // reason above, not by task).
  std::int64_t unattributed() const;
  // Every {tgid, reason} counted so far.
  std::vector<BpfTaskCount> tasks() const;
  // Time by CPU (index = CPU number, every possible CPU).
  std::vector<BpfCpuTime> read_times() const;
  // Where the programs run: "tp_btf" or "raw_tp".
  const std::string& attach_point() const;
  // How the initiators' wait ends ("fexit" or "csd"), "" when it is not
  // measured; then wait_unmeasured() says why.
  const std::string& wait_method() const;
  const std::string& wait_unmeasured() const;
  // "" when the csd link charges the targets' flush_tlb_func time to each
  // initiator (inflicted), else why not.
  const std::string& unlinked() const;
  // True when the csd tracepoint programs are attached (kernel-range
  // flushes are counted for the watched functions); else csd_unattached()
  // says why.
  bool csd_attached() const;
  const std::string& csd_unattached() const;
  // Forgets a process (one that is gone, once its counts were read).
  void erase(int tgid);

 private:
  BpfFlushCounter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Entries of the kernel's per-process table on a machine with ncpus possible
// CPUs: 16 MiB at most, 8192 at most (docs/monitor.md, "Deployment").
std::uint32_t task_slots(int ncpus);

// The cgroup v2 path ("/system.slice/x.service") of a cgroup id as
// bpf_get_current_cgroup_id() returns it (the kernfs inode of its
// directory), through open_by_handle_at on the cgroup2 mount; "" when the
// cgroup is gone or there is no cgroup2 mount.
std::string cgroup_v2_path_of_id(std::uint64_t id);

}  // namespace shootdown::sys
