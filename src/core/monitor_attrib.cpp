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
constexpr std::size_t kColumns = 4;

// A count and its time as one row: they land in the same series.
void add_columns(BoundedSeries& s, const std::string& key, std::size_t count_col, std::int64_t n,
                 std::size_t ns_col, std::int64_t ns, std::int64_t now_ns, const std::vector<std::string>& attrs = {}) {
  std::vector<std::int64_t> row(kColumns, 0);
  row[count_col] = std::max<std::int64_t>(0, n);
  row[ns_col] = std::max<std::int64_t>(0, ns);
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
  return p;
}
}  // namespace

MonitorAttribution::MonitorAttribution(std::size_t max_series, std::int64_t idle_ns)
    : processes_(max_series, kColumns, idle_ns), cgroups_(max_series, kColumns, idle_ns) {}

void MonitorAttribution::add(int reason, int pid, std::int64_t n, std::int64_t ns, std::int64_t now_ns,
                             const TaskLookup& lookup) {
  if ((n <= 0 && ns <= 0) || (reason != kReasonRemoteSendIpi && reason != kReasonRemoteShootdown)) return;
  const bool sent = reason == kReasonRemoteSendIpi;
  if (sent && pid <= 0) return;  // the idle task sends nothing
  const std::size_t count_col = sent ? kInitiated : kReceived;
  const std::size_t ns_col = sent ? kWaitNs : kHandlerNs;
  if (pid <= 0) {
    add_columns(cgroups_, kIdleCgroup, count_col, n, ns_col, ns, now_ns);
    return;
  }
  const std::string key = std::to_string(pid);
  std::string cgroup;
  if (const auto* e = processes_.find(key)) {
    cgroup = e->attrs.size() > 1 ? e->attrs[1] : "?";
    add_columns(processes_, key, count_col, n, ns_col, ns, now_ns);
  } else {
    const TaskInfo ti = lookup(pid);
    cgroup = ti.cgroup;
    add_columns(processes_, key, count_col, n, ns_col, ns, now_ns, {ti.comm, ti.cgroup});
  }
  add_columns(cgroups_, cgroup, count_col, n, ns_col, ns, now_ns);
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
    return MonitorCgroup{path, c[kInitiated], c[kReceived], c[kWaitNs], c[kHandlerNs]};
  };
  t.cgroups.clear();
  for (const auto& e : cgroups_.entries()) t.cgroups[e.key] = cgroup_of(e.key, e.counts);
  t.cgroup_other = cgroup_of(kOtherSeries, cgroups_.other());
  t.max_series = processes_.max_keys();
}

}  // namespace shootdown
