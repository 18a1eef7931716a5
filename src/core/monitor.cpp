// SPDX-License-Identifier: Apache-2.0
#include "core/monitor.hpp"

#include <algorithm>
#include <fmt/core.h>

namespace shootdown {

namespace {
std::int64_t clamp0(std::int64_t v) {
  return v < 0 ? 0 : v;
}

// c with each named counter replaced by its growth since p (none: c as is).
template <typename T, typename... Counters>
T grown_since(const T& c, const T* p, Counters T::*... counters) {
  T d = c;
  if (p) ((d.*counters = clamp0(c.*counters - p->*counters)), ...);
  return d;
}
}  // namespace

MonitorInterval monitor_interval(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n) {
  MonitorInterval iv;
  iv.start_ns = prev.mono_ns;
  iv.end_ns = cur.mono_ns;
  iv.wall_ns = cur.wall_ns;
  iv.seconds = cur.mono_ns > prev.mono_ns ? static_cast<double>(cur.mono_ns - prev.mono_ns) / 1e9 : 0;
  static_cast<MonitorEvidence&>(iv) = cur;
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
    o.handler_ns = clamp0(c.handler_ns - p.handler_ns);
    o.handler_irqs = clamp0(c.handler_irqs - p.handler_irqs);
    o.wait_ns = clamp0(c.wait_ns - p.wait_ns);
    o.waits = clamp0(c.waits - p.waits);
    o.wrong_ns = clamp0(c.wrong_ns - p.wrong_ns);
    o.wrong_irqs = clamp0(c.wrong_irqs - p.wrong_irqs);
    o.kflush_ns = clamp0(c.kflush_ns - p.kflush_ns);
    o.kflush_irqs = clamp0(c.kflush_irqs - p.kflush_irqs);
    o.kflush_initiated = clamp0(c.kflush_initiated - p.kflush_initiated);
    o.kflush_ipis = clamp0(c.kflush_ipis - p.kflush_ipis);
    o.kflush_noirq = clamp0(c.kflush_noirq - p.kflush_noirq);
    if (iv.seconds > 0) {
      o.tlb_per_s = static_cast<double>(o.tlb) / iv.seconds;
      o.cal_per_s = static_cast<double>(o.cal) / iv.seconds;
    }
    iv.cpus.push_back(o);
  }
  auto process_delta = [](const MonitorProcess& c, const MonitorProcess* p) {
    using P = MonitorProcess;
    return grown_since(c, p, &P::flushes, &P::wait_ns, &P::received, &P::handler_ns, &P::inflicted_ns,
                       &P::inflicted_other_ns);
  };
  std::vector<MonitorProcess> all;
  for (const auto& [pid, c] : cur.processes) {
    auto it = prev.processes.find(pid);
    all.push_back(process_delta(c, it == prev.processes.end() ? nullptr : &it->second));
  }
  for (const auto& d : all) {
    if (d.flushes > 0 || d.wait_ns > 0) iv.top.push_back(d);
    if (d.received > 0 || d.handler_ns > 0) iv.hurt.push_back(d);
  }
  std::stable_sort(iv.top.begin(), iv.top.end(), [](const auto& a, const auto& b) {
    return a.flushes != b.flushes ? a.flushes > b.flushes : a.pid < b.pid;
  });
  std::stable_sort(iv.hurt.begin(), iv.hurt.end(), [](const auto& a, const auto& b) {
    if (a.handler_ns != b.handler_ns) return a.handler_ns > b.handler_ns;
    return a.received != b.received ? a.received > b.received : a.pid < b.pid;
  });
  all = iv.top;
  if (iv.top.size() > top_n) iv.top.resize(top_n);
  if (iv.hurt.size() > top_n) iv.hurt.resize(top_n);
  iv.process_other = process_delta(cur.process_other, &prev.process_other);
  iv.initiators_other = iv.process_other.flushes;
  auto cgroup_delta = [&](const MonitorCgroup& c, const MonitorCgroup* p) {
    MonitorInterval::Cgroup d;
    d.path = c.path;
    d.initiated = clamp0(c.initiated - (p ? p->initiated : 0));
    d.received = clamp0(c.received - (p ? p->received : 0));
    d.wait_ns = clamp0(c.wait_ns - (p ? p->wait_ns : 0));
    d.handler_ns = clamp0(c.handler_ns - (p ? p->handler_ns : 0));
    d.inflicted_ns = clamp0(c.inflicted_ns - (p ? p->inflicted_ns : 0));
    d.inflicted_other_ns = clamp0(c.inflicted_other_ns - (p ? p->inflicted_other_ns : 0));
    for (const auto& in : all)
      if (in.cgroup == c.path && d.top.size() < top_n) d.top.push_back(in);  // `all` is sorted
    if (d.initiated > 0 || d.received > 0 || d.wait_ns > 0 || d.handler_ns > 0) iv.cgroups.push_back(std::move(d));
  };
  for (const auto& [path, c] : cur.cgroups) {
    auto it = prev.cgroups.find(path);
    cgroup_delta(c, it == prev.cgroups.end() ? nullptr : &it->second);
  }
  cgroup_delta(cur.cgroup_other, &prev.cgroup_other);
  std::stable_sort(iv.cgroups.begin(), iv.cgroups.end(), [](const auto& a, const auto& b) {
    if (a.wait_ns + a.handler_ns != b.wait_ns + b.handler_ns)
      return a.wait_ns + a.handler_ns > b.wait_ns + b.handler_ns;
    return a.initiated + a.received > b.initiated + b.received;
  });
  kernel_flush_deltas(prev, cur, top_n, iv);
  return iv;
}

void kernel_flush_deltas(const MonitorTotals& prev, const MonitorTotals& cur, std::size_t top_n, MonitorInterval& iv) {
  auto delta = [](const MonitorKernelFlusher& c, const MonitorKernelFlusher* p) {
    using K = MonitorKernelFlusher;
    return grown_since(c, p, &K::flushes, &K::ipis, &K::hit_irqs, &K::hit_ns);
  };
  iv.kernel_flushers.clear();
  iv.kernel_flush_hurt.clear();
  for (const auto& [pid, c] : cur.kernel_flushers) {
    auto it = prev.kernel_flushers.find(pid);
    const MonitorKernelFlusher d = delta(c, it == prev.kernel_flushers.end() ? nullptr : &it->second);
    if (d.flushes > 0 || d.ipis > 0) iv.kernel_flushers.push_back(d);
    if (d.hit_irqs > 0 || d.hit_ns > 0) iv.kernel_flush_hurt.push_back(d);
  }
  std::stable_sort(iv.kernel_flushers.begin(), iv.kernel_flushers.end(), [](const auto& a, const auto& b) {
    if (a.flushes != b.flushes) return a.flushes > b.flushes;
    return a.ipis != b.ipis ? a.ipis > b.ipis : a.pid < b.pid;
  });
  std::stable_sort(iv.kernel_flush_hurt.begin(), iv.kernel_flush_hurt.end(), [](const auto& a, const auto& b) {
    if (a.hit_ns != b.hit_ns) return a.hit_ns > b.hit_ns;
    return a.hit_irqs != b.hit_irqs ? a.hit_irqs > b.hit_irqs : a.pid < b.pid;
  });
  if (iv.kernel_flushers.size() > top_n) iv.kernel_flushers.resize(top_n);
  if (iv.kernel_flush_hurt.size() > top_n) iv.kernel_flush_hurt.resize(top_n);
  iv.kernel_flusher_other = delta(cur.kernel_flusher_other, &prev.kernel_flusher_other);
}

}  // namespace shootdown
