// SPDX-License-Identifier: Apache-2.0
#include "sink/monitor_attrib_out.hpp"

#include <nlohmann/json.hpp>

#include "core/bounded_series.hpp"

namespace shootdown {

namespace {
constexpr const char* kSeriesNote = "at most --series named, the rest in \"other\".";

nlohmann::json process_json(const MonitorProcess& p, bool waited) {
  nlohmann::json o = {{"pid", p.pid},         {"comm", p.comm},         {"cgroup", p.cgroup},
                      {"flushes", p.flushes}, {"received", p.received}, {"handler_ns", p.handler_ns}};
  if (waited) o["wait_ns"] = p.wait_ns;
  return o;
}
}  // namespace

void append_attrib_families(const MonitorTotals& t, std::vector<prom::Family>& out) {
  if (!t.attributed) return;
  prom::Family proc{"shootdown_process_initiated_total",
                    std::string("TLB shootdowns initiated (tlb_flush reason 4, remote IPI send) by a process's "
                                "threads since the monitor started; ") +
                        kSeriesNote,
                    "counter",
                    {}};
  prom::Family pwait{"shootdown_process_caused_wait_seconds_total",
                     std::string("Time a process's threads waited for their remote TLB flushes (tlb_flush reason 4 "
                                 "to the return of native_flush_tlb_multi) since the monitor started; ") +
                         kSeriesNote,
                     "counter",
                     {},
                     9};
  prom::Family phandler{"shootdown_process_suffered_seconds_total",
                        std::string("Time CPUs spent in TLB shootdown IPI handlers (call-function interrupt entry to "
                                    "exit) while they interrupted a process's threads, since the monitor started; ") +
                            kSeriesNote,
                        "counter",
                        {},
                        9};
  prom::Family pinf{"shootdown_process_inflicted_seconds_total",
                    std::string("Time the targets of a process's remote TLB flushes spent running flush_tlb_func for "
                                "them (csd_function_entry to exit, linked to the sender by its csd) since the monitor "
                                "started; ") +
                        kSeriesNote,
                    "counter",
                    {},
                    9};
  auto add_process = [&](const MonitorProcess& p) {
    const std::string pid = p.pid >= 0 ? std::to_string(p.pid) : kOtherSeries;
    std::vector<std::pair<std::string, std::string>> labels{{"pid", pid}, {"comm", p.comm}, {"cgroup", p.cgroup}};
    proc.samples.push_back({labels, p.flushes});
    pwait.samples.push_back({labels, p.wait_ns});
    phandler.samples.push_back({labels, p.handler_ns});
    pinf.samples.push_back({labels, p.inflicted_ns});
  };
  for (const auto& [pid, p] : t.processes) add_process(p);
  add_process(t.process_other);
  prom::Family ini{"shootdown_cgroup_initiated_total",
                   std::string("TLB shootdowns initiated (tlb_flush reason 4) by tasks of a cgroup v2 path since the "
                               "monitor started; ") +
                       kSeriesNote,
                   "counter",
                   {}};
  prom::Family rec{"shootdown_cgroup_received_total",
                   std::string("TLB shootdown flushes (tlb_flush reason 1) that interrupted a task of a cgroup v2 "
                               "path since the monitor started (\"(idle)\": no task); ") +
                       kSeriesNote,
                   "counter",
                   {}};
  prom::Family cwait{"shootdown_cgroup_caused_wait_seconds_total",
                     std::string("Time tasks of a cgroup v2 path waited for their remote TLB flushes since the "
                                 "monitor started; ") +
                         kSeriesNote,
                     "counter",
                     {},
                     9};
  prom::Family chandler{"shootdown_cgroup_suffered_seconds_total",
                        std::string("Time CPUs spent in TLB shootdown IPI handlers while they interrupted a task of a "
                                    "cgroup v2 path since the monitor started (\"(idle)\": no task); ") +
                            kSeriesNote,
                        "counter",
                        {},
                        9};
  prom::Family cinf{"shootdown_cgroup_inflicted_seconds_total",
                    std::string("Time the targets of remote TLB flushes by tasks of a cgroup v2 path spent running "
                                "flush_tlb_func for them (csd link) since the monitor started; ") +
                        kSeriesNote,
                    "counter",
                    {},
                    9};
  prom::Family cinfo{"shootdown_cgroup_inflicted_other_seconds_total",
                     std::string("The part of shootdown_cgroup_inflicted_seconds_total that ran while the target CPU "
                                 "ran a task of another cgroup (the cost one service puts on others); ") +
                         kSeriesNote,
                     "counter",
                     {},
                     9};
  auto add = [&](const MonitorCgroup& c) {
    ini.samples.push_back({{{"cgroup", c.path}}, c.initiated});
    rec.samples.push_back({{{"cgroup", c.path}}, c.received});
    cwait.samples.push_back({{{"cgroup", c.path}}, c.wait_ns});
    chandler.samples.push_back({{{"cgroup", c.path}}, c.handler_ns});
    cinf.samples.push_back({{{"cgroup", c.path}}, c.inflicted_ns});
    cinfo.samples.push_back({{{"cgroup", c.path}}, c.inflicted_other_ns});
  };
  for (const auto& [path, c] : t.cgroups) add(c);
  add(t.cgroup_other);
  out.push_back(std::move(proc));
  out.push_back(std::move(ini));
  out.push_back(std::move(rec));
  if (!t.timed) return;
  out.push_back(std::move(phandler));
  out.push_back(std::move(chandler));
  if (t.stall_model) {
    // Per reason-1 flush (one interrupt may run several; on a busy host the
    // estimate then counts the overhead more than once).
    prom::Family est{"shootdown_cgroup_estimated_stall_seconds_total",
                     "ESTIMATE of the time tasks of a cgroup v2 path stalled from TLB shootdown IPIs since the monitor "
                     "started: " +
                         t.stall_model->describe() + "; " + kSeriesNote,
                     "counter",
                     {},
                     9};
    auto add_est = [&](const MonitorCgroup& c) {
      est.samples.push_back({{{"cgroup", c.path}}, t.stall_model->estimate_ns(c.handler_ns, c.received)});
    };
    for (const auto& [path, c] : t.cgroups) add_est(c);
    add_est(t.cgroup_other);
    out.push_back(std::move(est));
  }
  if (t.unlinked.empty()) {
    out.push_back(std::move(pinf));
    out.push_back(std::move(cinf));
    out.push_back(std::move(cinfo));
  }
  if (!t.wait_unmeasured.empty()) return;
  out.push_back(std::move(pwait));
  out.push_back(std::move(cwait));
}

void append_attrib_points(const MonitorInterval& iv, const std::string& host, std::vector<influx::Point>& out) {
  if (!iv.attributed) return;
  for (const auto& c : iv.cgroups) {
    influx::Point p;
    p.measurement = "shootdown_monitor_cgroup";
    p.tag("host", host).tag("cgroup", c.path);
    p.integer("initiated", c.initiated).integer("received", c.received);
    if (iv.timed) {
      p.integer("handler_ns", c.handler_ns);
      if (iv.wait_unmeasured.empty()) p.integer("wait_ns", c.wait_ns);
      if (iv.unlinked.empty())
        p.integer("inflicted_ns", c.inflicted_ns).integer("inflicted_other_ns", c.inflicted_other_ns);
    }
    p.field("interval_s", iv.seconds);
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
    nlohmann::json o = {
        {"cgroup", c.path}, {"initiated", c.initiated}, {"received", c.received}, {"top_initiators", top}};
    if (iv.timed) {
      o["handler_ns"] = c.handler_ns;
      if (iv.wait_unmeasured.empty()) o["wait_ns"] = c.wait_ns;
      if (iv.unlinked.empty()) {
        o["inflicted_ns"] = c.inflicted_ns;
        o["inflicted_other_ns"] = c.inflicted_other_ns;
      }
      if (iv.stall_model) o["est_stall_ns"] = iv.stall_model->estimate_ns(c.handler_ns, c.received);
    }
    cgs.push_back(o);
  }
  j["cgroups"] = cgs;
  j["initiators_other"] = iv.initiators_other;
  if (iv.timed) {
    auto hurt = nlohmann::json::array();
    for (const auto& p : iv.hurt) hurt.push_back(process_json(p, iv.wait_unmeasured.empty()));
    j["top_suffered"] = hurt;
  }
}

}  // namespace shootdown
