// SPDX-License-Identifier: Apache-2.0
#include "sink/csv.hpp"

#include <fmt/format.h>

#include "core/stats.hpp"

namespace shootdown::sink {

std::string timeline_csv(const Result& r) {
  std::string out =
      "victim_cpu,interval,start_ns,end_ns,elapsed_s,phase,count,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,"
      "start_unix_ns,end_unix_ns\n";
  // Wall-clock columns (CLOCK_REALTIME ns) are empty when the run recorded no offset.
  auto unix_ns = [&r](std::int64_t mono) {
    return r.realtime_offset_ns == 0 ? std::string() : std::to_string(mono + r.realtime_offset_ns);
  };
  int idx = 0, cpu = -1;
  for (const auto& iv : r.intervals) {
    if (iv.victim_cpu != cpu) {
      cpu = iv.victim_cpu;
      idx = 0;
    }
    const Summary& s = iv.summary;
    out += fmt::format("{},{},{},{},{:.6f},{},{},{:.0f},{:.1f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{},{}\n",
                       iv.victim_cpu, idx++, iv.start_ns, iv.end_ns,
                       static_cast<double>(iv.end_ns - r.measure_start_ns) / 1e9, to_string(iv.phase), s.count, s.min,
                       s.mean, s.p50, s.p90, s.p99, s.p999, s.max, unix_ns(iv.start_ns), unix_ns(iv.end_ns));
  }
  return out;
}

}  // namespace shootdown::sink
