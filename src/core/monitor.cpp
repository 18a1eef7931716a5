// SPDX-License-Identifier: Apache-2.0
#include "core/monitor.hpp"

#include <algorithm>
#include <fmt/core.h>

namespace shootdown {

namespace {
std::int64_t clamp0(std::int64_t v) {
  return v < 0 ? 0 : v;
}
}  // namespace

MonitorInterval monitor_interval(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n) {
  MonitorInterval iv;
  iv.start_ns = prev.mono_ns;
  iv.end_ns = cur.mono_ns;
  iv.wall_ns = cur.wall_ns;
  iv.seconds = cur.mono_ns > prev.mono_ns ? static_cast<double>(cur.mono_ns - prev.mono_ns) / 1e9 : 0;
  iv.trace = cur.trace;
  iv.attributed = cur.attributed;
  iv.lost_events = clamp0(cur.lost_events - prev.lost_events);
  for (const auto& c : cur.cpus) {
    MonitorCpu p;
    for (const auto& x : prev.cpus)
      if (x.cpu == c.cpu) p = x;
    MonitorInterval::Cpu o;
    o.cpu = c.cpu;
    o.tlb = clamp0(c.tlb - p.tlb);
    o.cal = clamp0(c.cal - p.cal);
    o.tlb_total = c.tlb;
    o.cal_total = c.cal;
    for (int r = 0; r < kTlbFlushReasons; ++r) o.flush[r] = clamp0(c.flush[r] - p.flush[r]);
    if (iv.seconds > 0) {
      o.tlb_per_s = static_cast<double>(o.tlb) / iv.seconds;
      o.cal_per_s = static_cast<double>(o.cal) / iv.seconds;
    }
    iv.cpus.push_back(o);
  }
  for (const auto& [pid, in] : cur.initiators) {
    std::int64_t before = 0;
    auto it = prev.initiators.find(pid);
    if (it != prev.initiators.end()) before = it->second.flushes;
    MonitorInitiator d = in;
    d.flushes = clamp0(in.flushes - before);
    if (d.flushes > 0) iv.top.push_back(d);
  }
  std::stable_sort(iv.top.begin(), iv.top.end(), [](const auto& a, const auto& b) {
    return a.flushes != b.flushes ? a.flushes > b.flushes : a.pid < b.pid;
  });
  std::vector<MonitorInitiator> all = iv.top;
  if (iv.top.size() > top_n) iv.top.resize(top_n);
  iv.initiators_other = clamp0(cur.initiators_other - prev.initiators_other);
  auto cgroup_delta = [&](const MonitorCgroup& c, const MonitorCgroup* p) {
    MonitorInterval::Cgroup d;
    d.path = c.path;
    d.initiated = clamp0(c.initiated - (p ? p->initiated : 0));
    d.received = clamp0(c.received - (p ? p->received : 0));
    for (const auto& in : all)
      if (in.cgroup == c.path && d.top.size() < top_n) d.top.push_back(in);  // `all` is sorted
    if (d.initiated > 0 || d.received > 0) iv.cgroups.push_back(std::move(d));
  };
  for (const auto& [path, c] : cur.cgroups) {
    auto it = prev.cgroups.find(path);
    cgroup_delta(c, it == prev.cgroups.end() ? nullptr : &it->second);
  }
  cgroup_delta(cur.cgroup_other, &prev.cgroup_other);
  std::stable_sort(iv.cgroups.begin(), iv.cgroups.end(),
                   [](const auto& a, const auto& b) { return a.initiated + a.received > b.initiated + b.received; });
  return iv;
}

}  // namespace shootdown
