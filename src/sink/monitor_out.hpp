// SPDX-License-Identifier: Apache-2.0
// `shootdown monitor` outputs as bytes: Prometheus families, Influx points
// and JSON lines. Pure (schemas: docs/monitor.md).
#pragma once

#include <string>
#include <vector>

#include "core/monitor.hpp"
#include "sink/influx.hpp"
#include "sink/prometheus.hpp"

namespace shootdown {

// shootdown_tlb_interrupts_total{cpu}, shootdown_call_function_interrupts_total{cpu},
// and with tracing shootdown_tlb_flush_total{cpu,reason} and
// shootdown_trace_lost_events_total.
std::vector<prom::Family> monitor_families(const MonitorTotals& t);
std::string monitor_exposition(const MonitorTotals& t);

// Measurement shootdown_monitor (one point per CPU) and
// shootdown_monitor_initiator (one per top initiator), stamped with iv.wall_ns.
std::vector<influx::Point> monitor_points(const MonitorInterval& iv, const std::string& host);

// One JSON object (no trailing newline) per interval.
std::string monitor_json_line(const MonitorInterval& iv, const std::string& trace_status);

// One line per CPU (and one per top initiator when traced), for pipes/logs.
std::string format_monitor_header(bool trace);
std::string format_monitor_lines(const MonitorInterval& iv, const std::string& clock);
// Top-like screen (no escape codes: the caller clears), under 80 columns.
std::string format_monitor_screen(const MonitorInterval& iv, const std::string& title);

}  // namespace shootdown
