// Kernel event counts per CPU and event type: what result.json, the console
// and InfluxDB report about the trace without carrying every event. Pure.
#pragma once

#include <vector>

#include "core/events.hpp"
#include "core/result.hpp"

namespace shootdown {

// Counts of trace.events by (cpu, type), sorted by cpu then type order.
std::vector<EventCount> count_events(const KernelTrace& trace);
// r.trace_counts when set (a result read back from JSON), else
// count_events(r.trace).
std::vector<EventCount> event_counts(const Result& r);
// Number of events the trace recorded: trace.events.size() after a run, the
// sum of the saved counts for a result read back from JSON.
std::int64_t event_total(const Result& r);

}  // namespace shootdown
