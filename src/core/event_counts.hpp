// SPDX-License-Identifier: Apache-2.0
// Kernel event counts per CPU and event type: what result.json, the console
// and InfluxDB report about the trace without carrying every event. Pure.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <vector>

#include "core/events.hpp"
#include "core/result.hpp"

namespace shootdown {

// Counts of trace.events and trace.folded by (cpu, type), sorted by cpu then type order.
std::vector<EventCount> count_events(const KernelTrace& trace);
// r.trace_counts when set (a result read back from JSON), else
// count_events(r.trace).
std::vector<EventCount> event_counts(const Result& r);
// Number of events the trace recorded: trace.events.size() plus the folded
// ones after a run, the sum of the saved counts for a result read back from JSON.
std::int64_t event_total(const Result& r);

// Counts of the events behind shootdowns, per CPU: what `trace` summarises,
// what `monitor` exports and what compare's windows hold. One rule for all.
struct CpuEventTally {
  std::array<std::int64_t, kTlbFlushReasons> tlb_flush{};  // tlb:tlb_flush by reason
  std::int64_t call_function = 0;                          // call_function(_single)_entry: IPI handlers run
  std::int64_t timer = 0, resched = 0, irq = 0;
  std::int64_t ipi_sent = 0;                  // ipi:ipi_send_cpu/_cpumask from this CPU
  std::map<std::uint64_t, std::int64_t> csd;  // csd_function_entry by function address
};

struct EventTally {
  std::map<int, CpuEventTally> cpus;
  std::map<int, std::int64_t> initiators;  // pid -> tlb_flush reason 4 (remote IPI send)
};

struct TallyFilter {
  std::int64_t from_ns = std::numeric_limits<std::int64_t>::min();  // inclusive
  std::int64_t to_ns = std::numeric_limits<std::int64_t>::max();    // inclusive
  int pid = 0;                                                      // 0 = every process
};

// Adds the events inside the filter to tally.
void tally_events(std::span<const KernelEvent> events, const TallyFilter& f, EventTally& tally);

}  // namespace shootdown
