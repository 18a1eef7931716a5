// SPDX-License-Identifier: Apache-2.0
// Kernel events collected during a run (perf tracepoints), in CLOCK_MONOTONIC
// ns. Pure data: filled by src/sys/ readers, consumed by src/core analysis.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/cpulist.hpp"

namespace shootdown {

enum class EventType : std::uint8_t {
  kTlbFlush,           // a = reason (0..5), b = pages (ULONG_MAX/-1 = all)
  kCallFunctionEntry,  // irq_vectors:call_function_entry, a = vector
  kCallFunctionExit,
  kCallFunctionSingleEntry,  // irq_vectors:call_function_single_entry
  kCallFunctionSingleExit,
  kLocalTimerEntry,
  kLocalTimerExit,
  kReschedEntry,
  kReschedExit,
  kIrqHandlerEntry,  // irq:irq_handler_entry, a = irq number
  kIrqHandlerExit,
  kIpiSendCpu,        // ipi:ipi_send_cpu, a = target cpu, b = callsite addr, c = callback addr
  kIpiSendCpumask,    // ipi:ipi_send_cpumask, a = targets' first 64-bit word (CPUs 0-63), b = callsite addr,
                      // c = callback; the whole mask: KernelEvent::cpumask
  kCsdFunctionEntry,  // csd:csd_function_entry, b = func addr (KernelTrace::symbols names it)
  kCsdFunctionExit,   // csd:csd_function_exit, b = func addr
  kSchedSwitch,       // sched:sched_switch (victim CPUs), a = prev_pid, b = next_pid, c = prev_state
};
inline constexpr int kEventTypeCount = static_cast<int>(EventType::kSchedSwitch) + 1;

// "tlb_flush", "call_function_entry", ... (the tracepoint's name).
inline const char* event_type_name(EventType t) {
  switch (t) {
    case EventType::kTlbFlush:
      return "tlb_flush";
    case EventType::kCallFunctionEntry:
      return "call_function_entry";
    case EventType::kCallFunctionExit:
      return "call_function_exit";
    case EventType::kCallFunctionSingleEntry:
      return "call_function_single_entry";
    case EventType::kCallFunctionSingleExit:
      return "call_function_single_exit";
    case EventType::kLocalTimerEntry:
      return "local_timer_entry";
    case EventType::kLocalTimerExit:
      return "local_timer_exit";
    case EventType::kReschedEntry:
      return "reschedule_entry";
    case EventType::kReschedExit:
      return "reschedule_exit";
    case EventType::kIrqHandlerEntry:
      return "irq_handler_entry";
    case EventType::kIrqHandlerExit:
      return "irq_handler_exit";
    case EventType::kIpiSendCpu:
      return "ipi_send_cpu";
    case EventType::kIpiSendCpumask:
      return "ipi_send_cpumask";
    case EventType::kCsdFunctionEntry:
      return "csd_function_entry";
    case EventType::kCsdFunctionExit:
      return "csd_function_exit";
    case EventType::kSchedSwitch:
      return "sched_switch";
  }
  return "?";
}

struct KernelEvent {
  std::int64_t mono_ns = 0;
  std::int32_t cpu = -1;
  std::int32_t pid = 0;  // tgid when known, else tid
  std::int32_t tid = 0;
  EventType type = EventType::kTlbFlush;
  std::int64_t a = 0;
  std::int64_t b = 0;
  std::int64_t c = 0;
  std::int32_t callchain = -1;  // index into KernelTrace::callchains, -1 = none
  std::int32_t cpumask = -1;    // ipi_send_cpumask: index into KernelTrace::cpumasks (-1: only `a`, CPUs 0-63)
};

// TLB flush reasons (include/linux/mm_types.h enum tlb_flush_reason).
inline constexpr int kTlbFlushOnTaskSwitch = 0;
inline constexpr int kTlbRemoteShootdown = 1;
inline constexpr int kTlbLocalShootdown = 2;
inline constexpr int kTlbLocalMmShootdown = 3;
inline constexpr int kTlbRemoteSendIpi = 4;
inline constexpr int kTlbRemoteWrongCpu = 5;
inline constexpr int kTlbFlushReasons = 6;
// The one spelling of each reason: a metric/label key ("remote_shootdown")
// and the words shown to people ("remote shootdown"). Out of range:
// "unknown" and "?".
const char* tlb_flush_reason_name(int reason);
const char* tlb_flush_reason_text(int reason);

struct Callchain {
  std::vector<std::uint64_t> ips;
  std::vector<std::string> symbols;  // symbolized frames ("func+0x1f [kernel]"), same length as ips
};

// Events a run past its memory limit counted but did not keep: those of
// [from_ns, until_ns), inside the counted span and before the samples it
// kept (the baseline it dropped). What the counts and the TLB accounting
// need survives; attribution never needed them (their samples are gone).
// Whether a CPU is, at an event, inside a run of a function another CPU
// queued for it: a call-function interrupt (irq_vectors:call_function(_single)
// entry..exit) or a csd function run with a csd (csd:csd_function_entry..exit
// with csd != NULL: queued by another CPU, also when run from the idle loop
// without an interrupt). flush_tlb_func() adds a run there to the CPU's TLB
// row (arch/x86/mm/tlb.c: inc_irq_stat(irq_tlb_count) when not local); a CPU
// running its own flush (csd NULL, outside an interrupt) adds nothing.
// Feed events in time order per CPU.
struct RemoteRunContext {
  std::map<int, std::pair<int, int>> depth;  // cpu -> (open call-function interrupts, open queued csd runs)
  bool remote(int cpu) const {
    auto it = depth.find(cpu);
    return it != depth.end() && (it->second.first > 0 || it->second.second > 0);
  }
  void add(const KernelEvent& e) {
    switch (e.type) {
      case EventType::kCallFunctionEntry:
      case EventType::kCallFunctionSingleEntry:
        ++depth[e.cpu].first;
        break;
      case EventType::kCallFunctionExit:
      case EventType::kCallFunctionSingleExit:
        if (auto it = depth.find(e.cpu); it != depth.end() && it->second.first > 0) --it->second.first;
        break;
      case EventType::kCsdFunctionEntry:
        if (e.c != 0) ++depth[e.cpu].second;
        break;
      case EventType::kCsdFunctionExit:
        if (auto it = depth.find(e.cpu); e.c != 0 && it != depth.end() && it->second.second > 0) --it->second.second;
        break;
      default:
        break;
    }
  }
};

// An IPI arriving on e.cpu: a remote shootdown's flush, or the entry of a
// call-function interrupt (what compaction keeps raw samples around).
inline bool is_ipi_arrival(const KernelEvent& e) {
  return (e.type == EventType::kTlbFlush && e.a == kTlbRemoteShootdown) || e.type == EventType::kCallFunctionEntry ||
         e.type == EventType::kCallFunctionSingleEntry;
}

struct FoldedEvents {
  std::int64_t from_ns = 0, until_ns = 0;
  std::int64_t events = 0;
  std::map<std::pair<int, int>, std::int64_t> by_cpu_type;  // (cpu, EventType) -> events
  std::map<std::pair<int, int>, std::int64_t> tlb_flush;    // (cpu, reason) -> tlb:tlb_flush events
  // ... of them inside a remote flush run (RemoteRunContext): in the TLB row.
  std::map<std::pair<int, int>, std::int64_t> tlb_flush_remote;
  bool remote_split = true;  // false: read from a result that did not split (tlb_flush_remote = tlb_flush)
  RemoteRunContext context;
  // Adds the events of [from_ns, until_ns): the caller took them from the
  // trace, in time order per CPU.
  void add(const KernelEvent& e) {
    ++events;
    ++by_cpu_type[{e.cpu, static_cast<int>(e.type)}];
    if (e.type == EventType::kTlbFlush) {
      ++tlb_flush[{e.cpu, static_cast<int>(e.a)}];
      if (context.remote(e.cpu)) ++tlb_flush_remote[{e.cpu, static_cast<int>(e.a)}];
    }
    context.add(e);
  }
};

// What the tracer delivered, and what it could not.
struct KernelTrace {
  bool enabled = false;
  std::string status;                    // "on", "off (--trace off)", "unavailable: <why>"
  std::vector<std::string> tracepoints;  // opened
  std::vector<std::string> missing;      // "csd:csd_function_entry: not in this kernel"
  std::int64_t lost_events = 0;          // PERF_FORMAT_LOST / PERF_RECORD_LOST total
  std::vector<KernelEvent> events;       // sorted by mono_ns
  FoldedEvents folded;                   // counted, not kept (folded.events == 0: none)
  std::vector<Callchain> callchains;
  std::vector<CpuMask> cpumasks;  // ipi_send_cpumask targets, KernelEvent::cpumask indexes them
  // Kernel addresses seen in events (csd func, ipi callsite/callback) ->
  // "func+0xoff" from /proc/kallsyms; empty when kallsyms was unreadable.
  std::map<std::uint64_t, std::string> symbols;
  std::int64_t start_ns = 0;  // mono ns: everything enabled
  std::int64_t stop_ns = 0;   // mono ns: disabled

  // Whether an ipi_send_cpu/ipi_send_cpumask event targets `cpu` (false
  // for other events). A mask saved before cpumasks existed has only `a`.
  bool targets(const KernelEvent& e, int cpu) const {
    if (e.type == EventType::kIpiSendCpu) return e.a == cpu;
    if (e.type != EventType::kIpiSendCpumask) return false;
    if (e.cpumask >= 0 && static_cast<std::size_t>(e.cpumask) < cpumasks.size())
      return cpumasks[static_cast<std::size_t>(e.cpumask)].test(cpu);
    return cpu >= 0 && cpu < 64 && ((static_cast<std::uint64_t>(e.a) >> cpu) & 1u);
  }

  // Symbol for an address, "" when unknown.
  const std::string& symbol(std::uint64_t addr) const {
    static const std::string kEmpty;
    auto it = symbols.find(addr);
    return it == symbols.end() ? kEmpty : it->second;
  }
};

}  // namespace shootdown
