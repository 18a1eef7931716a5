// SPDX-License-Identifier: Apache-2.0
#include "sink/monitor_attrib_out.hpp"

#include <nlohmann/json.hpp>

#include "core/bounded_series.hpp"

namespace shootdown {

void append_attrib_families(const MonitorTotals& t, std::vector<prom::Family>& out) {
  if (!t.attributed) return;
  prom::Family proc{"shootdown_process_initiated_total",
                    "TLB shootdowns initiated (tlb_flush reason 4, remote IPI send) by a process's threads since the "
                    "monitor started; at most --series processes, the rest in pid=\"other\".",
                    "counter",
                    {}};
  for (const auto& [pid, in] : t.initiators)
    proc.samples.push_back({{{"pid", std::to_string(pid)}, {"comm", in.comm}, {"cgroup", in.cgroup}}, in.flushes});
  proc.samples.push_back(
      {{{"pid", kOtherSeries}, {"comm", kOtherSeries}, {"cgroup", kOtherSeries}}, t.initiators_other});
  prom::Family ini{"shootdown_cgroup_initiated_total",
                   "TLB shootdowns initiated (tlb_flush reason 4) by tasks of a cgroup v2 path since the monitor "
                   "started; at most --series cgroups, the rest in cgroup=\"other\".",
                   "counter",
                   {}};
  prom::Family rec{"shootdown_cgroup_received_total",
                   "TLB shootdown flushes (tlb_flush reason 1) that interrupted a task of a cgroup v2 path since the "
                   "monitor started (\"(idle)\": no task); at most --series cgroups, the rest in cgroup=\"other\".",
                   "counter",
                   {}};
  auto add = [&](const MonitorCgroup& c) {
    ini.samples.push_back({{{"cgroup", c.path}}, c.initiated});
    rec.samples.push_back({{{"cgroup", c.path}}, c.received});
  };
  for (const auto& [path, c] : t.cgroups) add(c);
  add(t.cgroup_other);
  out.push_back(std::move(proc));
  out.push_back(std::move(ini));
  out.push_back(std::move(rec));
}

void append_attrib_points(const MonitorInterval& iv, const std::string& host, std::vector<influx::Point>& out) {
  if (!iv.attributed) return;
  for (const auto& c : iv.cgroups) {
    influx::Point p;
    p.measurement = "shootdown_monitor_cgroup";
    p.tag("host", host).tag("cgroup", c.path);
    p.integer("initiated", c.initiated).integer("received", c.received).field("interval_s", iv.seconds);
    p.timestamp_ns = iv.wall_ns;
    out.push_back(std::move(p));
  }
}

void append_attrib_json(const MonitorInterval& iv, nlohmann::json& j) {
  if (!iv.attributed) return;
  auto cgs = nlohmann::json::array();
  for (const auto& c : iv.cgroups) {
    auto top = nlohmann::json::array();
    for (const auto& t : c.top) top.push_back({{"pid", t.pid}, {"comm", t.comm}, {"flushes", t.flushes}});
    cgs.push_back({{"cgroup", c.path}, {"initiated", c.initiated}, {"received", c.received}, {"top_initiators", top}});
  }
  j["cgroups"] = cgs;
  j["initiators_other"] = iv.initiators_other;
}

}  // namespace shootdown
