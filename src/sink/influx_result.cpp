// SPDX-License-Identifier: Apache-2.0
#include "sink/influx_result.hpp"

#include <cmath>
#include <map>

#include "core/stats.hpp"

namespace shootdown::sink {

namespace {

std::int64_t as_int(double v) {
  return static_cast<std::int64_t>(std::llround(v));
}

influx::Point base(const Result& r, const char* measurement, std::int64_t mono_ns) {
  influx::Point p;
  p.measurement = measurement;
  p.tag("run_id", r.run_id)
      .tag("release", std::string(strategy_name(r.plan.release)))
      .tag("pages", std::string(page_mode_name(r.plan.pages)));
  // A result without a wall-clock offset still gets distinct, ordered times;
  // InfluxDB requires a timestamp > 0 to keep ours.
  p.timestamp_ns = mono_ns + r.realtime_offset_ns;
  return p;
}

void summary_fields(influx::Point& p, const Summary& s) {
  p.integer("count", s.count);
  if (s.count == 0) return;
  p.integer("min", as_int(s.min));
  p.field("mean", influx::FieldValue(s.mean));
  p.integer("p50", as_int(s.p50));
  p.integer("p90", as_int(s.p90));
  p.integer("p99", as_int(s.p99));
  p.integer("p999", as_int(s.p999));
  p.integer("max", as_int(s.max));
}

}  // namespace

std::vector<influx::Point> result_points(const Result& r, const Analysis& a) {
  std::vector<influx::Point> out;
  std::map<int, std::int64_t> index;
  for (const auto& iv : r.intervals) {
    auto p = base(r, "shootdown_interval", iv.end_ns);
    p.tag("victim_cpu", std::to_string(iv.victim_cpu)).tag("phase", to_string(iv.phase));
    summary_fields(p, iv.summary);
    p.integer("interval", index[iv.victim_cpu]++);
    p.integer("start_ns", iv.start_ns + r.realtime_offset_ns);
    out.push_back(std::move(p));
  }
  for (const auto& rel : r.releases) {
    for (const bool before : {true, false}) {
      auto p = base(r, "shootdown_marker", before ? rel.before_ns : rel.after_ns);
      p.tag("marker", before ? "before" : "after");
      p.integer("index", rel.index).integer("bytes", rel.bytes).integer("duration_ns", rel.duration_ns());
      out.push_back(std::move(p));
    }
  }
  for (const auto& c : r.counters) {
    auto p = base(r, "shootdown_interrupts", r.measure_end_ns);
    p.tag("cpu", std::to_string(c.cpu)).tag("role", to_string(c.role));
    p.integer("tlb", c.tlb).integer("cal", c.cal).integer("loc", c.loc).integer("res", c.res);
    p.integer("span_ns", r.interrupts_span_ns);
    out.push_back(std::move(p));
  }
  for (const auto& c : a.event_counts) {
    auto p = base(r, "shootdown_trace", r.measure_end_ns);
    p.tag("cpu", std::to_string(c.cpu)).tag("event", c.event);
    p.integer("count", c.count);
    out.push_back(std::move(p));
  }
  for (const auto& va : a.victims) {
    for (const auto& ps : va.phases) {
      auto p = base(r, "shootdown_phase", r.measure_end_ns);
      p.tag("victim_cpu", std::to_string(va.cpu)).tag("phase", to_string(ps.phase));
      summary_fields(p, ps.per_batch);
      p.integer("duration_ns", ps.duration_ns);
      p.integer("pages_per_batch", va.pages_per_batch);
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace shootdown::sink
