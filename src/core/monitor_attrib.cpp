// SPDX-License-Identifier: Apache-2.0
#include "core/monitor_attrib.hpp"

#include <algorithm>

namespace shootdown {

namespace {
constexpr int kReasonRemoteShootdown = 1;
constexpr int kReasonRemoteSendIpi = 4;
// Columns of both series.
constexpr std::size_t kInitiated = 0;
constexpr std::size_t kWaitNs = 1;
constexpr std::size_t kReceived = 2;
constexpr std::size_t kHandlerNs = 3;
constexpr std::size_t kInflictedNs = 4;
constexpr std::size_t kInflictedOtherNs = 5;
constexpr std::size_t kColumns = 6;

// A count and its times as one row: they land in the same series. Weighed
// by the count.
void add_row(BoundedSeries& s, const std::string& key, const std::vector<std::int64_t>& row, std::size_t count_col,
             std::int64_t now_ns, const std::vector<std::string>& attrs = {}) {
  s.add_row(key, row, row[count_col], now_ns, attrs);
}

MonitorProcess process_of(int pid, const std::vector<std::string>& attrs, const std::vector<std::int64_t>& c) {
  MonitorProcess p;
  p.pid = pid;
  p.comm = attrs.size() > 0 ? attrs[0] : "?";
  p.cgroup = attrs.size() > 1 ? attrs[1] : "?";
  p.flushes = c[kInitiated];
  p.wait_ns = c[kWaitNs];
  p.received = c[kReceived];
  p.handler_ns = c[kHandlerNs];
  p.inflicted_ns = c[kInflictedNs];
  p.inflicted_other_ns = c[kInflictedOtherNs];
  return p;
}
}  // namespace

MonitorAttribution::MonitorAttribution(std::size_t max_series, std::int64_t idle_ns)
    : processes_(max_series, kColumns, idle_ns),
      cgroups_(max_series, kColumns, idle_ns),
      kflush_(max_series, 4, idle_ns) {}

void MonitorAttribution::add_kernel_flush(int pid, std::int64_t flushes, std::int64_t ipis, std::int64_t hit_irqs,
                                          std::int64_t hit_ns, std::int64_t now_ns, const TaskLookup& lookup) {
  const std::vector<std::int64_t> row{std::max<std::int64_t>(0, flushes), std::max<std::int64_t>(0, ipis),
                                      std::max<std::int64_t>(0, hit_irqs), std::max<std::int64_t>(0, hit_ns)};
  if (row[0] == 0 && row[1] == 0 && row[2] == 0 && row[3] == 0) return;
  const std::string key = std::to_string(std::max(0, pid));
  const std::int64_t weight = row[0] + row[2];
  if (kflush_.has(key)) {
    kflush_.add_row(key, row, weight, now_ns);
    return;
  }
  const std::string comm = pid <= 0 ? std::string(kIdleCgroup) : lookup(pid).comm;
  kflush_.add_row(key, row, weight, now_ns, {comm});
}

void MonitorAttribution::add(int reason, int pid, std::int64_t n, std::int64_t ns, std::int64_t now_ns,
                             const TaskLookup& lookup, std::int64_t inflicted_ns, std::int64_t inflicted_other_ns) {
  if (reason != kReasonRemoteSendIpi && reason != kReasonRemoteShootdown) return;
  const bool sent = reason == kReasonRemoteSendIpi;
  if (!sent) inflicted_ns = inflicted_other_ns = 0;
  if (n <= 0 && ns <= 0 && inflicted_ns <= 0 && inflicted_other_ns <= 0) return;
  if (sent && pid <= 0) return;  // the idle task sends nothing
  const std::size_t count_col = sent ? kInitiated : kReceived;
  std::vector<std::int64_t> row(kColumns, 0);
  row[count_col] = std::max<std::int64_t>(0, n);
  row[sent ? kWaitNs : kHandlerNs] = std::max<std::int64_t>(0, ns);
  row[kInflictedNs] = std::max<std::int64_t>(0, inflicted_ns);
  row[kInflictedOtherNs] = std::max<std::int64_t>(0, inflicted_other_ns);
  if (pid <= 0) {
    add_row(cgroups_, kIdleCgroup, row, count_col, now_ns);
    return;
  }
  const std::string key = std::to_string(pid);
  std::string cgroup;
  if (const auto* e = processes_.find(key)) {
    cgroup = e->attrs.size() > 1 ? e->attrs[1] : "?";
    add_row(processes_, key, row, count_col, now_ns);
  } else {
    const TaskInfo ti = lookup(pid);
    cgroup = ti.cgroup;
    add_row(processes_, key, row, count_col, now_ns, {ti.comm, ti.cgroup});
  }
  add_row(cgroups_, cgroup, row, count_col, now_ns);
}

void MonitorAttribution::fill(MonitorTotals& t) const {
  t.attributed = true;
  t.processes.clear();
  for (const auto& e : processes_.entries()) {
    const int pid = std::stoi(e.key);
    t.processes[pid] = process_of(pid, e.attrs, e.counts);
  }
  t.process_other = process_of(-1, {kOtherSeries, kOtherSeries}, processes_.other());
  auto cgroup_of = [](const std::string& path, const std::vector<std::int64_t>& c) {
    return MonitorCgroup{path,          c[kInitiated],   c[kReceived],        c[kWaitNs],
                         c[kHandlerNs], c[kInflictedNs], c[kInflictedOtherNs]};
  };
  t.cgroups.clear();
  for (const auto& e : cgroups_.entries()) t.cgroups[e.key] = cgroup_of(e.key, e.counts);
  t.cgroup_other = cgroup_of(kOtherSeries, cgroups_.other());
  auto flusher_of = [](int pid, const std::vector<std::string>& attrs, const std::vector<std::int64_t>& c) {
    return MonitorKernelFlusher{pid, attrs.empty() ? "?" : attrs[0], c[0], c[1], c[2], c[3]};
  };
  t.kernel_flushers.clear();
  for (const auto& e : kflush_.entries()) {
    const int pid = std::stoi(e.key);
    t.kernel_flushers[pid] = flusher_of(pid, e.attrs, e.counts);
  }
  t.kernel_flusher_other = flusher_of(-1, {kOtherSeries}, kflush_.other());
  t.max_series = processes_.max_keys();
}

}  // namespace shootdown
