// SPDX-License-Identifier: Apache-2.0
#include "sink/monitor_out.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "sink/monitor_attrib_out.hpp"
#include "sink/monitor_kflush_out.hpp"

namespace shootdown {

std::vector<prom::Family> monitor_families(const MonitorTotals& t) {
  std::vector<prom::Family> fam;
  prom::Family tlb{"shootdown_tlb_interrupts_total",
                   "TLB shootdown interrupts received per CPU since boot (/proc/interrupts TLB row).",
                   "counter",
                   {}};
  prom::Family cal{"shootdown_call_function_interrupts_total",
                   "Function call interrupts received per CPU since boot (/proc/interrupts CAL row).",
                   "counter",
                   {}};
  for (const auto& c : t.cpus) {
    tlb.samples.push_back({{{"cpu", std::to_string(c.cpu)}}, c.tlb});
    cal.samples.push_back({{{"cpu", std::to_string(c.cpu)}}, c.cal});
  }
  fam.push_back(std::move(tlb));
  fam.push_back(std::move(cal));
  if (t.trace) {
    prom::Family fl{"shootdown_tlb_flush_total",
                    "tlb:tlb_flush tracepoint events per CPU and reason since the monitor started.",
                    "counter",
                    {}};
    for (const auto& c : t.cpus)
      for (int r = 0; r < kTlbFlushReasons; ++r)
        fl.samples.push_back({{{"cpu", std::to_string(c.cpu)}, {"reason", tlb_flush_reason_name(r)}}, c.flush[r]});
    fam.push_back(std::move(fl));
    if (t.timed) {
      prom::Family h{"shootdown_ipi_handler_seconds_total",
                     "Time per CPU in call-function IPI handlers that ran a TLB shootdown flush (interrupt entry to "
                     "exit) since the monitor started; reason remote_wrong_cpu: the handler's only flush was for an "
                     "mm the CPU no longer ran (another process's flush, 6.14+).",
                     "counter",
                     {},
                     9};
      prom::Family hn{"shootdown_ipi_handler_interrupts_total",
                      "Call-function IPIs per CPU that ran a TLB shootdown flush since the monitor started (reason as "
                      "in shootdown_ipi_handler_seconds_total).",
                      "counter",
                      {}};
      prom::Family w{"shootdown_flush_wait_seconds_total",
                     "Time initiators on a CPU waited for remote TLB flushes (tlb_flush reason 4 to the return of "
                     "native_flush_tlb_multi) since the monitor started.",
                     "counter",
                     {},
                     9};
      for (const auto& c : t.cpus) {
        const std::string cpu = std::to_string(c.cpu);
        h.samples.push_back({{{"cpu", cpu}, {"reason", "remote_shootdown"}}, c.handler_ns});
        h.samples.push_back({{{"cpu", cpu}, {"reason", "remote_wrong_cpu"}}, c.wrong_ns});
        hn.samples.push_back({{{"cpu", cpu}, {"reason", "remote_shootdown"}}, c.handler_irqs});
        hn.samples.push_back({{{"cpu", cpu}, {"reason", "remote_wrong_cpu"}}, c.wrong_irqs});
        w.samples.push_back({{{"cpu", cpu}}, c.wait_ns});
      }
      fam.push_back(std::move(h));
      fam.push_back(std::move(hn));
      if (t.wait_unmeasured.empty()) fam.push_back(std::move(w));
      if (t.stall_model) {
        prom::Family e{"shootdown_estimated_stall_seconds_total",
                       "ESTIMATE of the time threads on a CPU stalled from TLB shootdown IPIs since the monitor "
                       "started: " +
                           t.stall_model->describe() + ".",
                       "counter",
                       {},
                       9};
        for (const auto& c : t.cpus)
          e.samples.push_back(
              {{{"cpu", std::to_string(c.cpu)}}, t.stall_model->estimate_ns(c.handler_ns, c.handler_irqs)});
        fam.push_back(std::move(e));
      }
    }
    fam.push_back({"shootdown_trace_lost_events_total",
                   "Trace events lost by the perf ring buffers since the monitor started.",
                   "counter",
                   {{{}, t.lost_events}}});
    append_attrib_families(t, fam);
    append_kernel_flush_families(t, fam);
  }
  return fam;
}

std::string monitor_exposition(const MonitorTotals& t) {
  return prom::encode(monitor_families(t));
}

std::vector<influx::Point> monitor_points(const MonitorInterval& iv, const std::string& host) {
  std::vector<influx::Point> pts;
  for (const auto& c : iv.cpus) {
    influx::Point p;
    p.measurement = "shootdown_monitor";
    p.tag("host", host).tag("cpu", std::to_string(c.cpu));
    p.integer("tlb", c.tlb).integer("cal", c.cal).integer("tlb_total", c.tlb_total).integer("cal_total", c.cal_total);
    p.field("tlb_per_s", c.tlb_per_s).field("cal_per_s", c.cal_per_s).field("interval_s", iv.seconds);
    if (iv.trace)
      for (int r = 0; r < kTlbFlushReasons; ++r)
        p.integer(std::string("flush_") + tlb_flush_reason_name(r), c.flush[r]);
    if (iv.timed) {
      p.integer("handler_ns", c.handler_ns).integer("handler_irqs", c.handler_irqs);
      p.integer("wrong_cpu_handler_ns", c.wrong_ns).integer("wrong_cpu_irqs", c.wrong_irqs);
      if (iv.wait_unmeasured.empty()) p.integer("wait_ns", c.wait_ns).integer("waits", c.waits);
      if (iv.stall_model) p.integer("est_stall_ns", iv.stall_model->estimate_ns(c.handler_ns, c.handler_irqs));
      add_kernel_flush_fields(iv, c, p);
    }
    p.timestamp_ns = iv.wall_ns;
    pts.push_back(std::move(p));
  }
  for (const auto& t : iv.top) {
    influx::Point p;
    p.measurement = "shootdown_monitor_initiator";
    p.tag("host", host).tag("comm", t.comm).tag("cgroup", t.cgroup);
    p.integer("pid", t.pid).integer("flushes", t.flushes);
    if (iv.timed && iv.wait_unmeasured.empty()) p.integer("wait_ns", t.wait_ns);
    if (iv.timed && iv.unlinked.empty()) p.integer("inflicted_ns", t.inflicted_ns);
    p.field("interval_s", iv.seconds);
    p.timestamp_ns = iv.wall_ns;
    pts.push_back(std::move(p));
  }
  if (iv.trace) append_attrib_points(iv, host, pts);
  append_kernel_flush_points(iv, host, pts);
  return pts;
}

std::string monitor_json_line(const MonitorInterval& iv, const std::string& trace_status) {
  nlohmann::json j;
  j["schema"] = "shootdown.monitor/1";
  j["wall_ns"] = iv.wall_ns;
  j["mono_ns"] = iv.end_ns;
  j["interval_s"] = iv.seconds;
  j["trace"] = trace_status;
  auto cpus = nlohmann::json::array();
  for (const auto& c : iv.cpus) {
    nlohmann::json o = {{"cpu", c.cpu},
                        {"tlb", c.tlb},
                        {"cal", c.cal},
                        {"tlb_per_s", c.tlb_per_s},
                        {"cal_per_s", c.cal_per_s},
                        {"tlb_total", c.tlb_total},
                        {"cal_total", c.cal_total}};
    if (iv.trace) {
      nlohmann::json f;
      for (int r = 0; r < kTlbFlushReasons; ++r) f[tlb_flush_reason_name(r)] = c.flush[r];
      o["flush"] = f;
    }
    if (iv.timed) {
      o["handler_ns"] = c.handler_ns;
      o["handler_irqs"] = c.handler_irqs;
      o["wrong_cpu_handler_ns"] = c.wrong_ns;
      o["wrong_cpu_irqs"] = c.wrong_irqs;
      if (iv.wait_unmeasured.empty()) {
        o["wait_ns"] = c.wait_ns;
        o["waits"] = c.waits;
      }
      if (iv.stall_model) o["est_stall_ns"] = iv.stall_model->estimate_ns(c.handler_ns, c.handler_irqs);
    }
    append_kernel_flush_cpu_json(iv, c, o);
    cpus.push_back(o);
  }
  j["cpus"] = cpus;
  if (!iv.no_ipi_flushes.empty()) j["no_ipi_flushes"] = iv.no_ipi_flushes;
  append_kernel_flush_json(iv, j);
  if (iv.trace) {
    auto top = nlohmann::json::array();
    for (const auto& t : iv.top) {
      nlohmann::json o = {{"pid", t.pid}, {"comm", t.comm}, {"cgroup", t.cgroup}, {"flushes", t.flushes}};
      if (iv.timed) append_caused_json(iv, t, o);
      top.push_back(o);
    }
    j["top_initiators"] = top;
    if (iv.timed) {
      j["wait"] = iv.wait_unmeasured.empty() ? "measured" : iv.wait_unmeasured;
      j["link"] = iv.unlinked.empty() ? "csd" : iv.unlinked;
      if (iv.stall_model)
        j["stall_model"] = {{"source", iv.stall_model->source},
                            {"overhead_ns_per_ipi", iv.stall_model->overhead_ns_per_ipi()},
                            {"ipis", iv.stall_model->ipis},
                            {"handler_ns", iv.stall_model->handler_ns},
                            {"stall_ns", iv.stall_model->stall_ns}};
      else
        j["stall_model"] = nullptr;  // no --calibrate-from: no estimate, never an invented one
    }
    j["lost_events"] = iv.lost_events;
    append_attrib_json(iv, j);
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // comm may be any bytes
}

namespace {
// Reason columns in the order a reader cares about: received, sent, local.
constexpr int kCols[kTlbFlushReasons] = {1, 4, 2, 3, 0, 5};
constexpr const char* kColNames[kTlbFlushReasons] = {"REMOTE", "SENDIPI", "LOCAL", "LOC_MM", "TASKSW", "WRONG"};

std::string rate(double v) {
  if (v >= 1e6) return fmt::format("{:.1f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.1f}", v);
}
std::string per_s(std::int64_t n, double s) {
  return rate(s > 0 ? static_cast<double>(n) / s : 0);
}
}  // namespace

std::string format_monitor_header(bool trace) {
  std::string h = fmt::format("{:<8} {:>4} {:>8} {:>8}", "TIME", "CPU", "TLB/s", "CAL/s");
  if (trace)
    for (const char* n : kColNames) h += fmt::format(" {:>7}", n);
  return h + "\n";
}

std::string format_monitor_lines(const MonitorInterval& iv, const std::string& clock) {
  std::string out;
  for (const auto& c : iv.cpus) {
    out += fmt::format("{:<8} {:>4} {:>8} {:>8}", clock, c.cpu, rate(c.tlb_per_s), rate(c.cal_per_s));
    if (iv.trace)
      for (int r : kCols) out += fmt::format(" {:>7}", per_s(c.flush[r], iv.seconds));
    out += "\n";
  }
  if (iv.timed) {
    const bool waited = iv.wait_unmeasured.empty();
    for (const auto& c : iv.cpus)
      if (c.handler_irqs > 0 || c.waits > 0)
        out += fmt::format(
            "{:<8}  cpu {} shootdown IPI handlers {} in {}{}{}\n", clock, c.cpu, format_duration_ns(c.handler_ns),
            c.handler_irqs,
            iv.stall_model ? fmt::format(", est. stall {}",
                                         format_duration_ns(iv.stall_model->estimate_ns(c.handler_ns, c.handler_irqs)))
                           : "",
            waited ? fmt::format("; initiators here waited {}", format_duration_ns(c.wait_ns)) : "");
  }
  if (iv.trace)
    for (const auto& t : iv.top)
      out +=
          fmt::format("{:<8}  top pid {} comm {} sends {}/s{}{}\n", clock, t.pid, t.comm, per_s(t.flushes, iv.seconds),
                      iv.timed && iv.wait_unmeasured.empty() ? " waited " + format_duration_ns(t.wait_ns) : "",
                      iv.timed && iv.unlinked.empty() ? " inflicted " + format_duration_ns(t.inflicted_ns) : "");
  if (iv.timed)
    for (const auto& t : iv.hurt)
      out += fmt::format("{:<8}  hurt pid {} comm {} handlers {}\n", clock, t.pid, t.comm,
                         format_duration_ns(t.handler_ns));
  return out + format_kernel_flush_lines(iv, clock);
}

std::string format_monitor_screen(const MonitorInterval& iv, const std::string& title) {
  std::string out = title + "\n\n";
  out += fmt::format("{:>4} {:>9} {:>9} {:>12} {:>12}\n", "CPU", "TLB/s", "CAL/s", "TLB total", "CAL total");
  for (const auto& c : iv.cpus)
    out += fmt::format("{:>4} {:>9} {:>9} {:>12} {:>12}\n", c.cpu, rate(c.tlb_per_s), rate(c.cal_per_s), c.tlb_total,
                       c.cal_total);
  if (!iv.trace) return out;
  out += "\ntlb:tlb_flush per second by reason\n";
  out += fmt::format("{:>4}", "CPU");
  for (const char* n : kColNames) out += fmt::format(" {:>8}", n);
  out += "\n";
  for (const auto& c : iv.cpus) {
    out += fmt::format("{:>4}", c.cpu);
    for (int r : kCols) out += fmt::format(" {:>8}", per_s(c.flush[r], iv.seconds));
    out += "\n";
  }
  const bool waited = iv.timed && iv.wait_unmeasured.empty();
  if (iv.timed) {
    out += "\nTime this interval: shootdown IPI handlers (suffered), initiators' wait (caused)\n";
    out += fmt::format("{:>4} {:>10} {:>8} {:>11} {:>10} {:>8}\n", "CPU", "HANDLERS", "IRQS", "EST.STALL", "WAIT",
                       "WAITS");
    for (const auto& c : iv.cpus)
      out += fmt::format(
          "{:>4} {:>10} {:>8} {:>11} {:>10} {:>8}\n", c.cpu, format_duration_ns(c.handler_ns), c.handler_irqs,
          iv.stall_model ? format_duration_ns(iv.stall_model->estimate_ns(c.handler_ns, c.handler_irqs)) : "-",
          waited ? format_duration_ns(c.wait_ns) : "-", waited ? std::to_string(c.waits) : "-");
    if (!waited) out += "wait not measured: " + iv.wait_unmeasured.substr(0, 58) + "\n";
    if (!iv.stall_model) out += "stall not estimated: no calibration (--calibrate-from a run's DIR)\n";
  }
  if (kernel_flush_counted(iv)) {
    out += "\nKernel-range flushes this interval (flush_tlb_kernel_range, flush_tlb_all, CPA)\n";
    out += fmt::format("{:>4} {:>9} {:>8} {:>10} {:>8}\n", "CPU", "INITIATED", "IPIS", "HANDLERS", "IRQS");
    for (const auto& c : iv.cpus)
      out += fmt::format("{:>4} {:>9} {:>8} {:>10} {:>8}\n", c.cpu, c.kflush_initiated, c.kflush_ipis,
                         format_duration_ns(c.kflush_ns), c.kflush_irqs);
    for (const auto& t : iv.kernel_flushers)
      out += fmt::format("  by pid {} {} ({} flushes)\n", t.pid, t.comm.substr(0, 16), t.flushes);
  } else {
    out += "\nkernel-range flushes not counted: " + kernel_flush_not_counted(iv).substr(0, 45) + "\n";
  }
  if (!iv.no_ipi_flushes.empty())
    out += "\nflushes without IPIs here, not counted: " + iv.no_ipi_flushes.substr(0, 38) + "\n";
  out += "\nTop initiators (reason 4: remote IPI send)\n";
  const bool linked = iv.timed && iv.unlinked.empty();
  out += fmt::format("{:>8} {:<16} {:>10} {:>10} {:>10} {:>10}\n", "PID", "COMM", "SENDS/s", waited ? "WAIT" : "",
                     linked ? "INFLICTED" : "", linked ? "ON OTHERS" : "");
  if (iv.top.empty()) out += "       -\n";
  for (const auto& t : iv.top)
    out += fmt::format("{:>8} {:<16} {:>10} {:>10} {:>10} {:>10}\n", t.pid, t.comm.substr(0, 16),
                       per_s(t.flushes, iv.seconds), waited ? format_duration_ns(t.wait_ns) : "",
                       linked ? format_duration_ns(t.inflicted_ns) : "",
                       linked ? format_duration_ns(t.inflicted_other_ns) : "");
  if (iv.timed) {
    out += "\nMost interrupted (reason 1 while their threads ran)\n";
    out += fmt::format("{:>8} {:<16} {:>10} {:>10}\n", "PID", "COMM", "FLUSHES", "HANDLERS");
    if (iv.hurt.empty()) out += "       -\n";
    for (const auto& t : iv.hurt)
      out += fmt::format("{:>8} {:<16} {:>10} {:>10}\n", t.pid, t.comm.substr(0, 16), t.received,
                         format_duration_ns(t.handler_ns));
  }
  if (iv.lost_events > 0) out += fmt::format("\n{} trace events lost this interval\n", iv.lost_events);
  return out;
}

}  // namespace shootdown
