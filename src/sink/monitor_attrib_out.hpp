// SPDX-License-Identifier: Apache-2.0
// Per-process and per-cgroup shootdown attribution of `shootdown monitor`
// as Prometheus families, Influx points and JSON (docs/monitor.md,
// "Cardinality"). Every label set is bounded: at most --series named
// processes and cgroups, each family plus one "other" series.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/monitor.hpp"
#include "sink/influx.hpp"
#include "sink/prometheus.hpp"

namespace shootdown {

// shootdown_process_initiated_total{pid,comm,cgroup},
// shootdown_cgroup_initiated_total{cgroup}, shootdown_cgroup_received_total{cgroup};
// timed: shootdown_{process,cgroup}_suffered_seconds_total and, where the
// wait is measured, shootdown_{process,cgroup}_caused_wait_seconds_total.
void append_attrib_families(const MonitorTotals& t, std::vector<prom::Family>& out);
// shootdown_monitor_cgroup (one point per active cgroup), tags host, cgroup;
// fields initiated, received, timed: handler_ns, wait_ns.
void append_attrib_points(const MonitorInterval& iv, const std::string& host, std::vector<influx::Point>& out);
// "cgroups":[{"cgroup","initiated","received","top_initiators":[...]},
// timed: "handler_ns","wait_ns"], "initiators_other", timed: "top_suffered".
void append_attrib_json(const MonitorInterval& iv, nlohmann::json& j);
// An initiator's caused time (timed intervals): "wait_ns" where the wait is
// measured, "inflicted_ns" and "inflicted_other_ns" where the csd link is.
void append_caused_json(const MonitorInterval& iv, const MonitorProcess& p, nlohmann::json& o);

}  // namespace shootdown
