// SPDX-License-Identifier: Apache-2.0
// Kernel-range TLB flushes of `shootdown monitor` (flush_tlb_kernel_range,
// flush_tlb_all, CPA: on_each_cpu IPIs with no tlb_flush tracepoint; the
// BPF engine counts them from the csd tracepoints) as Prometheus families,
// Influx points, JSON and text. Where they are not counted every output says
// why (MonitorEvidence::kernel_flush_unmeasured) and shows no number.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/monitor.hpp"
#include "sink/influx.hpp"
#include "sink/prometheus.hpp"

namespace shootdown {

// True when the interval's (or totals') kernel-range flush numbers are
// measured; else kernel_flush_not_counted says why.
bool kernel_flush_counted(const MonitorEvidence& e);
std::string kernel_flush_not_counted(const MonitorEvidence& e);

// Measured only: shootdown_kernel_flush_handler_seconds_total{cpu},
// shootdown_kernel_flush_interrupts_total{cpu},
// shootdown_kernel_flush_initiated_total{cpu}, shootdown_kernel_flush_ipis_total{cpu},
// and per initiator (at most --series named, the rest "other"):
// shootdown_process_kernel_flushes_total{pid,comm},
// shootdown_process_kernel_flush_ipis_total{pid,comm},
// shootdown_process_kernel_flush_suffered_seconds_total{pid,comm}.
void append_kernel_flush_families(const MonitorTotals& t, std::vector<prom::Family>& out);
// Per-CPU fields of a "cpus" entry (measured only): kernel_flush_ns,
// kernel_flush_irqs, kernel_flushes, kernel_flush_ipis, kernel_flush_noirq.
void append_kernel_flush_cpu_json(const MonitorInterval& iv, const MonitorInterval::Cpu& c, nlohmann::json& o);
// "kernel_flush": "measured" or why not; "kernel_flush_unwatched" when some
// functions are not watched; measured: "top_kernel_flushers" [{pid, comm,
// flushes, ipis}], "kernel_flush_interrupted" [{pid, comm, irqs, handler_ns}],
// "kernel_flushers_other" {flushes, ipis}.
void append_kernel_flush_json(const MonitorInterval& iv, nlohmann::json& j);
// Measured only: fields kflush_ns, kflush_irqs, kflush_initiated, kflush_ipis
// on a shootdown_monitor point.
void add_kernel_flush_fields(const MonitorInterval& iv, const MonitorInterval::Cpu& c, influx::Point& p);
// Measured only: shootdown_monitor_kernel_flusher (one point per top
// initiator), tags host, comm; fields pid, flushes, ipis.
void append_kernel_flush_points(const MonitorInterval& iv, const std::string& host, std::vector<influx::Point>& out);
// Text lines (format_monitor_lines): per CPU with activity, the top
// initiators; "" when nothing happened; the reason once when not measured.
std::string format_kernel_flush_lines(const MonitorInterval& iv, const std::string& clock);

}  // namespace shootdown
