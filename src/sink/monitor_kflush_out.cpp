// SPDX-License-Identifier: Apache-2.0
#include "sink/monitor_kflush_out.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/bounded_series.hpp"
#include "core/units.hpp"

namespace shootdown {

namespace {
constexpr int kSeconds = 9;  // values in ns, shown as seconds
constexpr const char* kSeriesNote = "at most --series named, the rest in \"other\".";
}  // namespace

bool kernel_flush_counted(const MonitorEvidence& e) {
  return e.timed && e.kernel_flush_measured();
}

std::string kernel_flush_not_counted(const MonitorEvidence& e) {
  if (kernel_flush_counted(e)) return "";
  return e.kernel_flush_unmeasured.empty() ? "needs the BPF engine" : e.kernel_flush_unmeasured;
}

void append_kernel_flush_families(const MonitorTotals& t, std::vector<prom::Family>& out) {
  if (!kernel_flush_counted(t)) return;
  prom::Family h{"shootdown_kernel_flush_handler_seconds_total",
                 "Time per CPU in call-function IPI handlers that ran a kernel-range TLB flush (do_kernel_range_flush, "
                 "do_flush_tlb_all, __cpa_flush_tlb; interrupt entry to exit) since the monitor started.",
                 "counter",
                 {},
                 kSeconds};
  prom::Family n{"shootdown_kernel_flush_interrupts_total",
                 "Call-function IPIs per CPU that ran a kernel-range TLB flush since the monitor started.",
                 "counter",
                 {}};
  prom::Family i{"shootdown_kernel_flush_initiated_total",
                 "Kernel-range TLB flushes (flush_tlb_kernel_range, flush_tlb_all, CPA) initiated on a CPU since the "
                 "monitor started.",
                 "counter",
                 {}};
  prom::Family q{"shootdown_kernel_flush_ipis_total",
                 "Call-function requests (csds, one per target CPU) queued by the kernel-range TLB flushes initiated "
                 "on a CPU since the monitor started.",
                 "counter",
                 {}};
  for (const auto& c : t.cpus) {
    const std::string cpu = std::to_string(c.cpu);
    h.samples.push_back({{{"cpu", cpu}}, c.kflush_ns});
    n.samples.push_back({{{"cpu", cpu}}, c.kflush_irqs});
    i.samples.push_back({{{"cpu", cpu}}, c.kflush_initiated});
    q.samples.push_back({{{"cpu", cpu}}, c.kflush_ipis});
  }
  prom::Family pf{"shootdown_process_kernel_flushes_total",
                  std::string("Kernel-range TLB flushes initiated by a process or kernel thread since the monitor "
                              "started; ") +
                      kSeriesNote,
                  "counter",
                  {}};
  prom::Family pq{"shootdown_process_kernel_flush_ipis_total",
                  std::string("Call-function requests (one per target CPU) queued by a process's kernel-range TLB "
                              "flushes since the monitor started; ") +
                      kSeriesNote,
                  "counter",
                  {}};
  prom::Family ps{"shootdown_process_kernel_flush_suffered_seconds_total",
                  std::string("Time CPUs spent in kernel-range TLB flush IPI handlers while they interrupted a "
                              "process's threads since the monitor started (\"(idle)\": no task); ") +
                      kSeriesNote,
                  "counter",
                  {},
                  kSeconds};
  auto add = [&](const MonitorKernelFlusher& p) {
    const std::string pid = p.pid >= 0 ? std::to_string(p.pid) : kOtherSeries;
    const std::vector<std::pair<std::string, std::string>> labels{{"pid", pid}, {"comm", p.comm}};
    pf.samples.push_back({labels, p.flushes});
    pq.samples.push_back({labels, p.ipis});
    ps.samples.push_back({labels, p.hit_ns});
  };
  for (const auto& [pid, p] : t.kernel_flushers) add(p);
  add(t.kernel_flusher_other);
  for (prom::Family* f : {&h, &n, &i, &q, &pf, &pq, &ps}) out.push_back(std::move(*f));
}

void append_kernel_flush_cpu_json(const MonitorInterval& iv, const MonitorInterval::Cpu& c, nlohmann::json& o) {
  if (!kernel_flush_counted(iv)) return;
  o["kernel_flush_ns"] = c.kflush_ns;
  o["kernel_flush_irqs"] = c.kflush_irqs;
  o["kernel_flushes"] = c.kflush_initiated;
  o["kernel_flush_ipis"] = c.kflush_ipis;
  o["kernel_flush_noirq"] = c.kflush_noirq;
}

void append_kernel_flush_json(const MonitorInterval& iv, nlohmann::json& j) {
  const bool yes = kernel_flush_counted(iv);
  j["kernel_flush"] = yes ? std::string("measured") : kernel_flush_not_counted(iv);
  if (!yes) return;
  if (!iv.kernel_flush_unwatched.empty()) j["kernel_flush_unwatched"] = iv.kernel_flush_unwatched;
  auto top = nlohmann::json::array();
  for (const auto& p : iv.kernel_flushers)
    top.push_back({{"pid", p.pid}, {"comm", p.comm}, {"flushes", p.flushes}, {"ipis", p.ipis}});
  j["top_kernel_flushers"] = top;
  auto hurt = nlohmann::json::array();
  for (const auto& p : iv.kernel_flush_hurt)
    hurt.push_back({{"pid", p.pid}, {"comm", p.comm}, {"irqs", p.hit_irqs}, {"handler_ns", p.hit_ns}});
  j["kernel_flush_interrupted"] = hurt;
  j["kernel_flushers_other"] = {{"flushes", iv.kernel_flusher_other.flushes},
                                {"ipis", iv.kernel_flusher_other.ipis},
                                {"irqs", iv.kernel_flusher_other.hit_irqs},
                                {"handler_ns", iv.kernel_flusher_other.hit_ns}};
}

void add_kernel_flush_fields(const MonitorInterval& iv, const MonitorInterval::Cpu& c, influx::Point& p) {
  if (!kernel_flush_counted(iv)) return;
  p.integer("kflush_ns", c.kflush_ns).integer("kflush_irqs", c.kflush_irqs);
  p.integer("kflush_initiated", c.kflush_initiated).integer("kflush_ipis", c.kflush_ipis);
}

void append_kernel_flush_points(const MonitorInterval& iv, const std::string& host, std::vector<influx::Point>& out) {
  if (!kernel_flush_counted(iv)) return;
  for (const auto& t : iv.kernel_flushers) {
    influx::Point p;
    p.measurement = "shootdown_monitor_kernel_flusher";
    p.tag("host", host).tag("comm", t.comm);
    p.integer("pid", t.pid).integer("flushes", t.flushes).integer("ipis", t.ipis);
    p.field("interval_s", iv.seconds);
    p.timestamp_ns = iv.wall_ns;
    out.push_back(std::move(p));
  }
}

std::string format_kernel_flush_lines(const MonitorInterval& iv, const std::string& clock) {
  if (!kernel_flush_counted(iv)) return "";
  std::string out;
  for (const auto& c : iv.cpus)
    if (c.kflush_irqs > 0 || c.kflush_initiated > 0)
      out += fmt::format("{:<8}  cpu {} kernel flushes {} ({} IPIs), handlers {} in {}\n", clock, c.cpu,
                         c.kflush_initiated, c.kflush_ipis, format_duration_ns(c.kflush_ns), c.kflush_irqs);
  for (const auto& t : iv.kernel_flushers)
    out += fmt::format("{:<8}  kernel flushes by pid {} comm {} {} ({} IPIs)\n", clock, t.pid, t.comm.substr(0, 24),
                       t.flushes, t.ipis);
  return out;
}

}  // namespace shootdown
