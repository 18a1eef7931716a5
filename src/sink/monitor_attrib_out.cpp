// SPDX-License-Identifier: Apache-2.0
#include "sink/monitor_attrib_out.hpp"

#include <nlohmann/json.hpp>

#include "core/bounded_series.hpp"

namespace shootdown {

namespace {
constexpr const char* kSeriesNote = "at most --series named, the rest in \"other\".";
constexpr int kSeconds = 9;  // values in ns, shown as seconds

nlohmann::json process_json(const MonitorProcess& p, bool waited) {
  nlohmann::json o = {{"pid", p.pid},         {"comm", p.comm},         {"cgroup", p.cgroup},
                      {"flushes", p.flushes}, {"received", p.received}, {"handler_ns", p.handler_ns}};
  if (waited) o["wait_ns"] = p.wait_ns;
  return o;
}

// A counter of the attribution: every help ends with the bound on its series.
prom::Family attrib_counter(std::string name, const std::string& help, int decimals = 0) {
  return {std::move(name), help + kSeriesNote, "counter", {}, decimals};
}

struct ProcessFamilies {
  prom::Family initiated, caused_wait, suffered, inflicted;
};

ProcessFamilies process_families(const MonitorTotals& t) {
  ProcessFamilies f{
      attrib_counter("shootdown_process_initiated_total",
                     "TLB shootdowns initiated (tlb_flush reason 4, remote IPI send) by a process's threads since the "
                     "monitor started; "),
      attrib_counter("shootdown_process_caused_wait_seconds_total",
                     "Time a process's threads waited for their remote TLB flushes (tlb_flush reason 4 to the return "
                     "of native_flush_tlb_multi) since the monitor started; ",
                     kSeconds),
      attrib_counter("shootdown_process_suffered_seconds_total",
                     "Time CPUs spent in TLB shootdown IPI handlers (call-function interrupt entry to exit) while they "
                     "interrupted a process's threads, since the monitor started; ",
                     kSeconds),
      attrib_counter("shootdown_process_inflicted_seconds_total",
                     "Time the targets of a process's remote TLB flushes spent running flush_tlb_func for them "
                     "(csd_function_entry to exit, linked to the sender by its csd) since the monitor started; ",
                     kSeconds)};
  auto add = [&](const MonitorProcess& p) {
    const std::string pid = p.pid >= 0 ? std::to_string(p.pid) : kOtherSeries;
    std::vector<std::pair<std::string, std::string>> labels{{"pid", pid}, {"comm", p.comm}, {"cgroup", p.cgroup}};
    f.initiated.samples.push_back({labels, p.flushes});
    f.caused_wait.samples.push_back({labels, p.wait_ns});
    f.suffered.samples.push_back({labels, p.handler_ns});
    f.inflicted.samples.push_back({labels, p.inflicted_ns});
  };
  for (const auto& [pid, p] : t.processes) add(p);
  add(t.process_other);
  return f;
}

struct CgroupFamilies {
  prom::Family initiated, received, caused_wait, suffered, inflicted, inflicted_other;
};

CgroupFamilies cgroup_families(const MonitorTotals& t) {
  CgroupFamilies f{
      attrib_counter("shootdown_cgroup_initiated_total",
                     "TLB shootdowns initiated (tlb_flush reason 4) by tasks of a cgroup v2 path since the monitor "
                     "started; "),
      attrib_counter("shootdown_cgroup_received_total",
                     "TLB shootdown flushes (tlb_flush reason 1) that interrupted a task of a cgroup v2 path since the "
                     "monitor started (\"(idle)\": no task); "),
      attrib_counter("shootdown_cgroup_caused_wait_seconds_total",
                     "Time tasks of a cgroup v2 path waited for their remote TLB flushes since the monitor started; ",
                     kSeconds),
      attrib_counter("shootdown_cgroup_suffered_seconds_total",
                     "Time CPUs spent in TLB shootdown IPI handlers while they interrupted a task of a cgroup v2 path "
                     "since the monitor started (\"(idle)\": no task); ",
                     kSeconds),
      attrib_counter("shootdown_cgroup_inflicted_seconds_total",
                     "Time the targets of remote TLB flushes by tasks of a cgroup v2 path spent running "
                     "flush_tlb_func for them (csd link) since the monitor started; ",
                     kSeconds),
      attrib_counter("shootdown_cgroup_inflicted_other_seconds_total",
                     "The part of shootdown_cgroup_inflicted_seconds_total that ran while the target CPU ran a task "
                     "of another cgroup (the cost one service puts on others); ",
                     kSeconds)};
  auto add = [&](const MonitorCgroup& c) {
    f.initiated.samples.push_back({{{"cgroup", c.path}}, c.initiated});
    f.received.samples.push_back({{{"cgroup", c.path}}, c.received});
    f.caused_wait.samples.push_back({{{"cgroup", c.path}}, c.wait_ns});
    f.suffered.samples.push_back({{{"cgroup", c.path}}, c.handler_ns});
    f.inflicted.samples.push_back({{{"cgroup", c.path}}, c.inflicted_ns});
    f.inflicted_other.samples.push_back({{{"cgroup", c.path}}, c.inflicted_other_ns});
  };
  for (const auto& [path, c] : t.cgroups) add(c);
  add(t.cgroup_other);
  return f;
}

// Per reason-1 flush (one interrupt may run several; on a busy host the
// estimate then counts the overhead more than once).
prom::Family cgroup_stall_family(const MonitorTotals& t, const StallModel& model) {
  prom::Family est = attrib_counter("shootdown_cgroup_estimated_stall_seconds_total",
                                    "ESTIMATE of the time tasks of a cgroup v2 path stalled from TLB shootdown IPIs "
                                    "since the monitor started: " +
                                        model.describe() + "; ",
                                    kSeconds);
  auto add = [&](const MonitorCgroup& c) {
    est.samples.push_back({{{"cgroup", c.path}}, model.estimate_ns(c.handler_ns, c.received)});
  };
  for (const auto& [path, c] : t.cgroups) add(c);
  add(t.cgroup_other);
  return est;
}

// The time an initiator caused: its wait where the wait is measured, the
// targets' flush time where the csd link is.
template <typename Initiator>
void put_caused_time(const MonitorInterval& iv, const Initiator& r, nlohmann::json& o) {
  if (iv.wait_unmeasured.empty()) o["wait_ns"] = r.wait_ns;
  if (iv.unlinked.empty()) {
    o["inflicted_ns"] = r.inflicted_ns;
    o["inflicted_other_ns"] = r.inflicted_other_ns;
  }
}
}  // namespace

void append_attrib_families(const MonitorTotals& t, std::vector<prom::Family>& out) {
  if (!t.attributed) return;
  ProcessFamilies proc = process_families(t);
  CgroupFamilies cg = cgroup_families(t);
  out.push_back(std::move(proc.initiated));
  out.push_back(std::move(cg.initiated));
  out.push_back(std::move(cg.received));
  if (!t.timed) return;
  out.push_back(std::move(proc.suffered));
  out.push_back(std::move(cg.suffered));
  if (t.stall_model) out.push_back(cgroup_stall_family(t, *t.stall_model));
  if (t.unlinked.empty()) {
    out.push_back(std::move(proc.inflicted));
    out.push_back(std::move(cg.inflicted));
    out.push_back(std::move(cg.inflicted_other));
  }
  if (!t.wait_unmeasured.empty()) return;
  out.push_back(std::move(proc.caused_wait));
  out.push_back(std::move(cg.caused_wait));
}

void append_caused_json(const MonitorInterval& iv, const MonitorProcess& p, nlohmann::json& o) {
  put_caused_time(iv, p, o);
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
      put_caused_time(iv, c, o);
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
