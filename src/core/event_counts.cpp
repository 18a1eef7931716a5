// SPDX-License-Identifier: Apache-2.0
#include "core/event_counts.hpp"

#include <map>
#include <utility>

namespace shootdown {

const char* tlb_flush_reason_name(int reason) {
  static const char* const kNames[kTlbFlushReasons] = {"task_switch",        "remote_shootdown", "local_shootdown",
                                                       "local_mm_shootdown", "remote_send_ipi",  "remote_wrong_cpu"};
  return reason >= 0 && reason < kTlbFlushReasons ? kNames[reason] : "unknown";
}

const char* tlb_flush_reason_text(int reason) {
  static const char* const kText[kTlbFlushReasons] = {"task switch",        "remote shootdown", "local shootdown",
                                                      "local mm shootdown", "remote IPI send",  "remote wrong CPU"};
  return reason >= 0 && reason < kTlbFlushReasons ? kText[reason] : "?";
}

void tally_events(std::span<const KernelEvent> events, const TallyFilter& f, EventTally& tally) {
  for (const auto& e : events) {
    if (e.mono_ns < f.from_ns || e.mono_ns > f.to_ns) continue;
    if (f.pid > 0 && e.pid != f.pid) continue;
    CpuEventTally& c = tally.cpus[e.cpu];
    switch (e.type) {
      case EventType::kTlbFlush:
        if (e.a >= 0 && e.a < kTlbFlushReasons) ++c.tlb_flush[static_cast<std::size_t>(e.a)];
        if (e.a == kTlbRemoteSendIpi && e.pid > 0) ++tally.initiators[e.pid];
        break;
      case EventType::kCallFunctionEntry:
      case EventType::kCallFunctionSingleEntry:
        ++c.call_function;
        break;
      case EventType::kCsdFunctionEntry:
        ++c.csd[static_cast<std::uint64_t>(e.b)];
        break;
      case EventType::kLocalTimerEntry:
        ++c.timer;
        break;
      case EventType::kReschedEntry:
        ++c.resched;
        break;
      case EventType::kIrqHandlerEntry:
        ++c.irq;
        break;
      case EventType::kIpiSendCpu:
      case EventType::kIpiSendCpumask:
        ++c.ipi_sent;
        break;
      default:
        break;
    }
  }
}

std::vector<EventCount> count_events(const KernelTrace& trace) {
  std::map<std::pair<int, int>, std::int64_t> n = trace.folded.by_cpu_type;  // counted, not kept
  for (const auto& e : trace.events) ++n[{e.cpu, static_cast<int>(e.type)}];
  std::vector<EventCount> out;
  out.reserve(n.size());
  for (const auto& [key, count] : n)
    out.push_back(EventCount{key.first, event_type_name(static_cast<EventType>(key.second)), count});
  return out;
}

std::vector<EventCount> event_counts(const Result& r) {
  // Read back: the saved counts cover every event, trace.events maybe only
  // the first kResultMaxEvents.
  if (!r.trace_counts.empty()) return r.trace_counts;
  return count_events(r.trace);
}

std::int64_t event_total(const Result& r) {
  if (r.trace_counts.empty()) return static_cast<std::int64_t>(r.trace.events.size()) + r.trace.folded.events;
  std::int64_t total = 0;
  for (const auto& c : r.trace_counts) total += c.count;
  return total;
}

}  // namespace shootdown
