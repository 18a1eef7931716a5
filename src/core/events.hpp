// Kernel events collected during a run (perf tracepoints), in CLOCK_MONOTONIC
// ns. Pure data: filled by src/sys/ readers, consumed by src/core analysis.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shootdown {

enum class EventType : std::uint8_t {
  kTlbFlush,                 // a = reason (0..5), b = pages (ULONG_MAX/-1 = all)
  kCallFunctionEntry,        // irq_vectors:call_function_entry, a = vector
  kCallFunctionExit,
  kCallFunctionSingleEntry,  // irq_vectors:call_function_single_entry
  kCallFunctionSingleExit,
  kLocalTimerEntry,
  kLocalTimerExit,
  kReschedEntry,
  kReschedExit,
  kIrqHandlerEntry,          // irq:irq_handler_entry, a = irq number
  kIrqHandlerExit,
  kIpiSendCpu,               // ipi:ipi_send_cpu, a = target cpu, b = callsite addr
  kIpiSendCpumask,           // ipi:ipi_send_cpumask, a = first target cpu bitmask word, b = callsite addr
  kCsdFunctionEntry,         // csd:csd_function_entry, b = func addr, text = symbol
  kCsdFunctionExit,
};

struct KernelEvent {
  std::int64_t mono_ns = 0;
  std::int32_t cpu = -1;
  std::int32_t pid = 0;      // tgid when known, else tid
  std::int32_t tid = 0;
  EventType type = EventType::kTlbFlush;
  std::int64_t a = 0;
  std::int64_t b = 0;
  std::int32_t callchain = -1;  // index into KernelTrace::callchains, -1 = none
};

// TLB flush reasons (include/linux/mm_types.h enum tlb_flush_reason).
inline constexpr int kTlbFlushOnTaskSwitch = 0;
inline constexpr int kTlbRemoteShootdown = 1;
inline constexpr int kTlbLocalShootdown = 2;
inline constexpr int kTlbLocalMmShootdown = 3;
inline constexpr int kTlbRemoteSendIpi = 4;
inline constexpr int kTlbRemoteWrongCpu = 5;

struct Callchain {
  std::vector<std::uint64_t> ips;
  std::vector<std::string> symbols;  // symbolized frames ("func+0x1f [kernel]"), same length as ips
};

// What the tracer delivered, and what it could not.
struct KernelTrace {
  bool enabled = false;
  std::string status;                      // "on", "off (--trace off)", "unavailable: <why>"
  std::vector<std::string> tracepoints;    // opened
  std::vector<std::string> missing;        // "csd:csd_function_entry: not in this kernel"
  std::int64_t lost_events = 0;            // PERF_FORMAT_LOST / PERF_RECORD_LOST total
  std::vector<KernelEvent> events;         // sorted by mono_ns
  std::vector<Callchain> callchains;
};

}  // namespace shootdown
