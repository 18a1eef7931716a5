#include "sink/monitor_out.hpp"

#include <nlohmann/json.hpp>

#include "sink/monitor_attrib_out.hpp"

namespace shootdown {

std::vector<prom::Family> monitor_families(const MonitorTotals& t) {
  std::vector<prom::Family> fam;
  prom::Family tlb{"shootdown_tlb_interrupts_total",
                   "TLB shootdown interrupts received per CPU since boot (/proc/interrupts TLB row).",
                   "counter",
                   {}};
  prom::Family cal{"shootdown_call_function_interrupts_total",
                   "Function call interrupts received per CPU since boot (/proc/interrupts CAL row).",
                   "counter",
                   {}};
  for (const auto& c : t.cpus) {
    tlb.samples.push_back({{{"cpu", std::to_string(c.cpu)}}, c.tlb});
    cal.samples.push_back({{{"cpu", std::to_string(c.cpu)}}, c.cal});
  }
  fam.push_back(std::move(tlb));
  fam.push_back(std::move(cal));
  if (t.trace) {
    prom::Family fl{"shootdown_tlb_flush_total",
                    "tlb:tlb_flush tracepoint events per CPU and reason since the monitor started.",
                    "counter",
                    {}};
    for (const auto& c : t.cpus)
      for (int r = 0; r < kTlbFlushReasons; ++r)
        fl.samples.push_back({{{"cpu", std::to_string(c.cpu)}, {"reason", tlb_flush_reason_name(r)}}, c.flush[r]});
    fam.push_back(std::move(fl));
    fam.push_back({"shootdown_trace_lost_events_total",
                   "Trace events lost by the perf ring buffers since the monitor started.",
                   "counter",
                   {{{}, t.lost_events}}});
    append_attrib_families(t, fam);
  }
  return fam;
}

std::string monitor_exposition(const MonitorTotals& t) {
  return prom::encode(monitor_families(t));
}

std::vector<influx::Point> monitor_points(const MonitorInterval& iv, const std::string& host) {
  std::vector<influx::Point> pts;
  for (const auto& c : iv.cpus) {
    influx::Point p;
    p.measurement = "shootdown_monitor";
    p.tag("host", host).tag("cpu", std::to_string(c.cpu));
    p.integer("tlb", c.tlb).integer("cal", c.cal).integer("tlb_total", c.tlb_total).integer("cal_total", c.cal_total);
    p.field("tlb_per_s", c.tlb_per_s).field("cal_per_s", c.cal_per_s).field("interval_s", iv.seconds);
    if (iv.trace)
      for (int r = 0; r < kTlbFlushReasons; ++r)
        p.integer(std::string("flush_") + tlb_flush_reason_name(r), c.flush[r]);
    p.timestamp_ns = iv.wall_ns;
    pts.push_back(std::move(p));
  }
  for (const auto& t : iv.top) {
    influx::Point p;
    p.measurement = "shootdown_monitor_initiator";
    p.tag("host", host).tag("comm", t.comm).tag("cgroup", t.cgroup);
    p.integer("pid", t.pid).integer("flushes", t.flushes).field("interval_s", iv.seconds);
    p.timestamp_ns = iv.wall_ns;
    pts.push_back(std::move(p));
  }
  if (iv.trace) append_attrib_points(iv, host, pts);
  return pts;
}

std::string monitor_json_line(const MonitorInterval& iv, const std::string& trace_status) {
  nlohmann::json j;
  j["schema"] = "shootdown.monitor/1";
  j["wall_ns"] = iv.wall_ns;
  j["mono_ns"] = iv.end_ns;
  j["interval_s"] = iv.seconds;
  j["trace"] = trace_status;
  auto cpus = nlohmann::json::array();
  for (const auto& c : iv.cpus) {
    nlohmann::json o = {{"cpu", c.cpu},
                        {"tlb", c.tlb},
                        {"cal", c.cal},
                        {"tlb_per_s", c.tlb_per_s},
                        {"cal_per_s", c.cal_per_s},
                        {"tlb_total", c.tlb_total},
                        {"cal_total", c.cal_total}};
    if (iv.trace) {
      nlohmann::json f;
      for (int r = 0; r < kTlbFlushReasons; ++r) f[tlb_flush_reason_name(r)] = c.flush[r];
      o["flush"] = f;
    }
    cpus.push_back(o);
  }
  j["cpus"] = cpus;
  if (iv.trace) {
    auto top = nlohmann::json::array();
    for (const auto& t : iv.top)
      top.push_back({{"pid", t.pid}, {"comm", t.comm}, {"cgroup", t.cgroup}, {"flushes", t.flushes}});
    j["top_initiators"] = top;
    j["lost_events"] = iv.lost_events;
    append_attrib_json(iv, j);
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // comm may be any bytes
}

}  // namespace shootdown
