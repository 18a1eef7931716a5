// SPDX-License-Identifier: Apache-2.0
// monitor: interval deltas/rates, line and screen widths, and the three
// export formats built from the same totals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/monitor.hpp"
#include "sink/monitor_out.hpp"
#include "sink/monitor_kflush_out.hpp"

using namespace shootdown;

namespace {
MonitorTotals totals(std::int64_t t_ns, std::int64_t tlb1, std::int64_t flush1, std::int64_t sends) {
  MonitorTotals t;
  t.mono_ns = t_ns;
  t.wall_ns = 1700000000000000000 + t_ns;
  t.trace = true;
  t.cpus = {MonitorCpu{0, 100, 1000, {}}, MonitorCpu{1, tlb1, 2000, {}}};
  t.cpus[1].flush[kTlbRemoteShootdown] = flush1;
  t.cpus[0].flush[kTlbRemoteSendIpi] = sends;
  t.processes[42] = MonitorProcess{42, "munmap loop", sends, "/app"};
  t.processes[7] = MonitorProcess{7, "idle", 3, "/"};
  return t;
}
}  // namespace

TEST(Monitor, IntervalDeltasAndRates) {
  auto a = totals(1000000000, 500, 10, 10);
  auto b = totals(1500000000, 1500, 1010, 1010);
  b.cpus[0].tlb = 90;  // counter went backwards (hotplug): clamped
  auto iv = monitor_interval(a, b, 1);
  EXPECT_DOUBLE_EQ(iv.seconds, 0.5);
  ASSERT_EQ(iv.cpus.size(), 2u);
  EXPECT_EQ(iv.cpus[1].tlb, 1000);
  EXPECT_DOUBLE_EQ(iv.cpus[1].tlb_per_s, 2000.0);
  EXPECT_EQ(iv.cpus[1].tlb_total, 1500);
  EXPECT_EQ(iv.cpus[0].tlb, 0);
  EXPECT_EQ(iv.cpus[1].flush[kTlbRemoteShootdown], 1000);
  ASSERT_EQ(iv.top.size(), 1u);  // pid 7 made no new flushes; top_n = 1
  EXPECT_EQ(iv.top[0].pid, 42);
  EXPECT_EQ(iv.top[0].flushes, 1000);
  EXPECT_STREQ(tlb_flush_reason_name(4), "remote_send_ipi");
  EXPECT_STREQ(tlb_flush_reason_name(9), "unknown");
}

TEST(Monitor, TextFitsIn80Columns) {
  auto iv = monitor_interval(totals(0, 0, 0, 0), totals(1000000000, 123456789, 99999999, 5000000), 5);
  std::string all =
      format_monitor_header(true) + format_monitor_lines(iv, "12:00:00") + format_monitor_screen(iv, "title");
  std::istringstream in(all);
  std::string line;
  while (std::getline(in, line)) EXPECT_LT(line.size(), 80u) << line;
  EXPECT_NE(all.find("top pid 42 comm munmap loop"), std::string::npos);
  EXPECT_NE(all.find("123.5M"), std::string::npos);
}

TEST(Monitor, PrometheusFamilies) {
  auto t = totals(0, 7, 5, 3);
  const std::string s = monitor_exposition(t);
  EXPECT_NE(s.find("# TYPE shootdown_tlb_interrupts_total counter\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_tlb_interrupts_total{cpu=\"1\"} 7\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_call_function_interrupts_total{cpu=\"0\"} 1000\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_tlb_flush_total{cpu=\"1\",reason=\"remote_shootdown\"} 5\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_tlb_flush_total{cpu=\"0\",reason=\"remote_send_ipi\"} 3\n"), std::string::npos);
  t.trace = false;
  EXPECT_EQ(monitor_exposition(t).find("shootdown_tlb_flush_total"), std::string::npos);
}

TEST(Monitor, InfluxPointsAndJson) {
  auto iv = monitor_interval(totals(0, 0, 0, 0), totals(2000000000, 10, 4, 4), 5);
  auto pts = monitor_points(iv, "box");
  ASSERT_EQ(pts.size(), 3u);  // 2 CPUs + 1 initiator
  const std::string l = influx::encode_line(pts[1]).value();
  EXPECT_EQ(l.rfind("shootdown_monitor,cpu=1,host=box tlb=10i,cal=0i,tlb_total=10i,cal_total=2000i,tlb_per_s=5,", 0),
            0u)
      << l;
  EXPECT_NE(l.find("flush_remote_shootdown=4i"), std::string::npos);
  EXPECT_NE(l.find(" 1700000002000000000\n"), std::string::npos);
  EXPECT_EQ(influx::encode_line(pts[2]).value().rfind(
                "shootdown_monitor_initiator,cgroup=/app,comm=munmap\\ loop,host=box pid=42i,flushes=4i", 0),
            0u);
  auto j = nlohmann::json::parse(monitor_json_line(iv, "on"));
  EXPECT_EQ(j["schema"], "shootdown.monitor/1");
  EXPECT_EQ(j["cpus"][1]["flush"]["remote_shootdown"], 4);
  EXPECT_EQ(j["top_initiators"][0]["comm"], "munmap loop");
}

TEST(StallModel, MedianOverheadPlusMeasuredHandlerTime) {
  Attribution a;
  auto none = stall_model_from(a, "x");
  ASSERT_FALSE(none);  // no attribution
  EXPECT_NE(none.error().find("no kernel attribution"), std::string::npos);
  a.available = true;
  VictimAttribution v1, v2;
  v1.shootdown_ipis = 30;
  v1.handler_ns = {30, 5000, 6000, 9000, 160000};
  v1.stall_per_shootdown = {30, 25000, 30000, 200000, 900000};  // one long stall: the mean would be 30 us
  v1.stall_ns[static_cast<std::size_t>(StallLabel::kTlbShootdown)] = 900000;
  v2.shootdown_ipis = 10;
  v2.handler_ns = {10, 4000, 5000, 6000, 42000};
  v2.stall_per_shootdown = {10, 16000, 20000, 30000, 170000};
  v2.stall_ns[static_cast<std::size_t>(StallLabel::kTlbShootdown)] = 170000;
  a.victims = {v1, v2};
  auto m = stall_model_from(a, "run abc (cal/result.json)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->ipis, 40);
  EXPECT_EQ(m->handler_ns, 202000);
  EXPECT_EQ(m->stall_ns, 1070000);
  EXPECT_DOUBLE_EQ(m->overhead_ns_per_ipi(), (30.0 * 20000 + 10.0 * 12000) / 40);  // 18 us
  EXPECT_EQ(m->estimate_ns(9000, 2), 9000 + 36000);
  EXPECT_EQ(m->estimate_ns(0, 0), 0);
  EXPECT_NE(m->describe().find("run abc (cal/result.json)"), std::string::npos);
  EXPECT_NE(m->describe().find("18.0 us"), std::string::npos) << m->describe();
  a.victims = {VictimAttribution{}};
  auto nothing = stall_model_from(a, "x");
  ASSERT_FALSE(nothing);  // nothing to calibrate on
  EXPECT_NE(nothing.error().find("no shootdown IPI"), std::string::npos);
}

TEST(Monitor, StatesFlushesWithoutIpis) {
  auto iv = monitor_interval(totals(0, 0, 0, 0), totals(1000000000, 10, 4, 4), 5);
  EXPECT_FALSE(nlohmann::json::parse(monitor_json_line(iv, "bpf")).contains("no_ipi_flushes"));
  iv.no_ipi_flushes = "AMD INVLPGB broadcast flush on (Linux 6.15, CPUID 0x80000008 EBX[3])";
  EXPECT_EQ(nlohmann::json::parse(monitor_json_line(iv, "bpf"))["no_ipi_flushes"], iv.no_ipi_flushes);
  const std::string screen = format_monitor_screen(iv, "t");
  EXPECT_NE(screen.find("flushes without IPIs here, not counted: AMD INVLPGB"), std::string::npos) << screen;
}

namespace {
// Kernel-range flushes measured (the BPF engine with csd tracepoints): CPU 1
// initiates (a kworker), CPU 0's call-function interrupts run the flush.
MonitorTotals kflush_totals(std::int64_t t_ns, std::int64_t n) {
  MonitorTotals t = totals(t_ns, 0, 0, 0);
  t.timed = true;
  t.cpus[0].kflush_ns = 3000 * n;
  t.cpus[0].kflush_irqs = n;
  t.cpus[1].kflush_initiated = n;
  t.cpus[1].kflush_ipis = n;
  t.kernel_flushers[500] = MonitorKernelFlusher{500, "kworker/u8:0-vmap_drain", n, n, 0, 0};
  t.kernel_flushers[42] = MonitorKernelFlusher{42, "munmap loop", 0, 0, n, 3000 * n};
  t.kernel_flushers[9] = MonitorKernelFlusher{9, "kswapd0", 1, 1, 0, 0};
  t.kernel_flusher_other = MonitorKernelFlusher{-1, "other", 2 * n, 2 * n, 0, 0};
  return t;
}
}  // namespace

TEST(Monitor, KernelFlushDeltas) {
  auto a = kflush_totals(1000000000, 2);
  auto b = kflush_totals(2000000000, 6);
  b.cpus[0].kflush_irqs = 1;                                            // went backwards: clamped
  b.kernel_flushers[77] = MonitorKernelFlusher{77, "new", 3, 0, 0, 0};  // not in prev: counts from zero
  const auto iv = monitor_interval(a, b, 2);
  EXPECT_EQ(iv.cpus[0].kflush_ns, 12000);
  EXPECT_EQ(iv.cpus[0].kflush_irqs, 0);
  EXPECT_EQ(iv.cpus[1].kflush_initiated, 4);
  EXPECT_EQ(iv.cpus[1].kflush_ipis, 4);
  ASSERT_EQ(iv.kernel_flushers.size(), 2u);  // top_n 2 of 500 (+4), 77 (+3); kswapd0 made none new
  EXPECT_EQ(iv.kernel_flushers[0].pid, 500);
  EXPECT_EQ(iv.kernel_flushers[0].flushes, 4);
  EXPECT_EQ(iv.kernel_flushers[1].pid, 77);
  EXPECT_EQ(iv.kernel_flushers[1].flushes, 3);
  ASSERT_EQ(iv.kernel_flush_hurt.size(), 1u);
  EXPECT_EQ(iv.kernel_flush_hurt[0].pid, 42);
  EXPECT_EQ(iv.kernel_flush_hurt[0].hit_irqs, 4);
  EXPECT_EQ(iv.kernel_flush_hurt[0].hit_ns, 12000);
  EXPECT_EQ(iv.kernel_flusher_other.flushes, 8);
}

TEST(Monitor, KernelFlushExported) {
  const auto t = kflush_totals(2000000000, 5);
  const std::string s = monitor_exposition(t);
  EXPECT_NE(s.find("shootdown_kernel_flush_handler_seconds_total{cpu=\"0\"} 0.000015000\n"), std::string::npos) << s;
  EXPECT_NE(s.find("shootdown_kernel_flush_interrupts_total{cpu=\"0\"} 5\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_kernel_flush_initiated_total{cpu=\"1\"} 5\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_kernel_flush_ipis_total{cpu=\"1\"} 5\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_process_kernel_flushes_total{pid=\"500\",comm=\"kworker/u8:0-vmap_drain\"} 5\n"),
            std::string::npos);
  EXPECT_NE(s.find("shootdown_process_kernel_flushes_total{pid=\"other\",comm=\"other\"} 10\n"), std::string::npos);
  EXPECT_NE(s.find("shootdown_process_kernel_flush_suffered_seconds_total{pid=\"42\",comm=\"munmap loop\"} "
                   "0.000015000\n"),
            std::string::npos);
  const auto iv = monitor_interval(kflush_totals(0, 0), t, 5);
  auto j = nlohmann::json::parse(monitor_json_line(iv, "bpf"));
  EXPECT_EQ(j["kernel_flush"], "measured");
  EXPECT_FALSE(j.contains("kernel_flush_unwatched"));
  EXPECT_EQ(j["cpus"][0]["kernel_flush_ns"], 15000);
  EXPECT_EQ(j["cpus"][0]["kernel_flush_irqs"], 5);
  EXPECT_EQ(j["cpus"][1]["kernel_flushes"], 5);
  EXPECT_EQ(j["cpus"][1]["kernel_flush_ipis"], 5);
  EXPECT_EQ(j["top_kernel_flushers"][0]["comm"], "kworker/u8:0-vmap_drain");
  EXPECT_EQ(j["top_kernel_flushers"][0]["flushes"], 5);
  EXPECT_EQ(j["top_kernel_flushers"].size(), 1u);  // kswapd0 made none this interval
  EXPECT_EQ(j["kernel_flush_interrupted"][0]["handler_ns"], 15000);
  EXPECT_EQ(j["kernel_flushers_other"]["flushes"], 10);
  const auto pts = monitor_points(iv, "box");
  const std::string cpu0 = influx::encode_line(pts[0]).value();
  EXPECT_NE(cpu0.find("kflush_ns=15000i,kflush_irqs=5i,kflush_initiated=0i,kflush_ipis=0i"), std::string::npos) << cpu0;
  bool point = false;
  for (const auto& p : pts)
    if (p.measurement == "shootdown_monitor_kernel_flusher") {
      point = true;
      EXPECT_NE(influx::encode_line(p).value().find("pid="), std::string::npos);
    }
  EXPECT_TRUE(point);
  const std::string lines = format_monitor_lines(iv, "12:00:00");
  EXPECT_NE(lines.find("cpu 1 kernel flushes 5 (5 IPIs), handlers 0"), std::string::npos) << lines;
  EXPECT_NE(lines.find("kernel flushes by pid 500 comm kworker/u8:0-vmap_drain 5 (5 IPIs)"), std::string::npos);
  const std::string screen = format_monitor_screen(iv, "t");
  EXPECT_NE(screen.find("Kernel-range flushes this interval"), std::string::npos) << screen;
  std::istringstream in(lines + screen);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), 80u) << line;  // the screen's own title rows are 80
}

TEST(Monitor, KernelFlushNotCountedShowsNoNumbers) {
  auto t = kflush_totals(2000000000, 5);
  t.kernel_flush_unmeasured = "no csd tracepoints (kernel 6.5+): not loaded";
  const std::string s = monitor_exposition(t);
  EXPECT_EQ(s.find("kernel_flush"), std::string::npos) << s;
  auto p = kflush_totals(0, 0);
  p.kernel_flush_unmeasured = t.kernel_flush_unmeasured;
  const auto iv = monitor_interval(p, t, 5);
  auto j = nlohmann::json::parse(monitor_json_line(iv, "bpf"));
  EXPECT_EQ(j["kernel_flush"], "no csd tracepoints (kernel 6.5+): not loaded");
  EXPECT_FALSE(j["cpus"][0].contains("kernel_flush_irqs"));
  EXPECT_FALSE(j.contains("top_kernel_flushers"));
  for (const auto& pt : monitor_points(iv, "box")) {
    EXPECT_NE(pt.measurement, "shootdown_monitor_kernel_flusher");
    EXPECT_EQ(influx::encode_line(pt).value().find("kflush"), std::string::npos);
  }
  EXPECT_EQ(format_monitor_lines(iv, "12:00:00").find("kernel flushes"), std::string::npos);
  EXPECT_NE(format_monitor_screen(iv, "t").find("kernel-range flushes not counted: no csd tracepoints"),
            std::string::npos);
  // Not the BPF engine (ring, count): not timed, not counted, said so.
  auto ring = monitor_interval(totals(0, 0, 0, 0), totals(1000000000, 1, 1, 1), 5);
  EXPECT_EQ(nlohmann::json::parse(monitor_json_line(ring, "ring"))["kernel_flush"], "needs the BPF engine");
  // Counted, with a function not watched: said beside the numbers.
  t.kernel_flush_unmeasured.clear();
  t.kernel_flush_unwatched = "__cpa_flush_tlb not in /proc/kallsyms: its flushes are not counted";
  p.kernel_flush_unmeasured.clear();
  j = nlohmann::json::parse(monitor_json_line(monitor_interval(p, t, 5), "bpf"));
  EXPECT_EQ(j["kernel_flush"], "measured");
  EXPECT_EQ(j["kernel_flush_unwatched"], t.kernel_flush_unwatched);
}
