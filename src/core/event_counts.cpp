#include "core/event_counts.hpp"

#include <map>
#include <utility>

namespace shootdown {

std::vector<EventCount> count_events(const KernelTrace& trace) {
  std::map<std::pair<int, int>, std::int64_t> n;
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
  if (r.trace_counts.empty()) return static_cast<std::int64_t>(r.trace.events.size());
  std::int64_t total = 0;
  for (const auto& c : r.trace_counts) total += c.count;
  return total;
}

}  // namespace shootdown
