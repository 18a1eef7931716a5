// SPDX-License-Identifier: Apache-2.0
#include "core/monitor_attrib.hpp"

namespace shootdown {

namespace {
constexpr int kReasonRemoteShootdown = 1;
constexpr int kReasonRemoteSendIpi = 4;
constexpr std::size_t kInitiated = 0;
constexpr std::size_t kReceived = 1;
}  // namespace

MonitorAttribution::MonitorAttribution(std::size_t max_series, std::int64_t idle_ns)
    : processes_(max_series, 1, idle_ns), cgroups_(max_series, 2, idle_ns) {}

void MonitorAttribution::add_flushes(int reason, int pid, std::int64_t n, std::int64_t now_ns,
                                     const TaskLookup& lookup) {
  if (n <= 0) return;
  if (reason == kReasonRemoteSendIpi && pid > 0) {
    const std::string key = std::to_string(pid);
    std::string cgroup;
    if (const auto* e = processes_.find(key)) {
      cgroup = e->attrs.size() > 1 ? e->attrs[1] : "?";
      processes_.add(key, kInitiated, n, now_ns);
    } else {
      const TaskInfo ti = lookup(pid);
      cgroup = ti.cgroup;
      processes_.add(key, kInitiated, n, now_ns, {ti.comm, ti.cgroup});
    }
    cgroups_.add(cgroup, kInitiated, n, now_ns);
  } else if (reason == kReasonRemoteShootdown) {
    const std::string cgroup = pid > 0 ? lookup(pid).cgroup : kIdleCgroup;
    cgroups_.add(cgroup, kReceived, n, now_ns);
  }
}

void MonitorAttribution::fill(MonitorTotals& t) const {
  t.attributed = true;
  t.initiators.clear();
  for (const auto& e : processes_.entries()) {
    MonitorInitiator in;
    in.pid = std::stoi(e.key);
    in.comm = e.attrs.size() > 0 ? e.attrs[0] : "?";
    in.cgroup = e.attrs.size() > 1 ? e.attrs[1] : "?";
    in.flushes = e.counts[kInitiated];
    t.initiators[in.pid] = in;
  }
  t.initiators_other = processes_.other()[kInitiated];
  t.cgroups.clear();
  for (const auto& e : cgroups_.entries())
    t.cgroups[e.key] = MonitorCgroup{e.key, e.counts[kInitiated], e.counts[kReceived]};
  t.cgroup_other = MonitorCgroup{kOtherSeries, cgroups_.other()[kInitiated], cgroups_.other()[kReceived]};
  t.max_series = processes_.max_keys();
}

}  // namespace shootdown
