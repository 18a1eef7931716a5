// SPDX-License-Identifier: Apache-2.0
// Bounded label sets: series only grow, never more than max_keys + "other",
// idle slots are reused; per-process/per-cgroup attribution of tlb_flush.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/bounded_series.hpp"
#include "core/monitor_attrib.hpp"
#include "sink/monitor_out.hpp"

using namespace shootdown;

TEST(BoundedSeries, SlotsThenOtherThenIdleReuse) {
  BoundedSeries s(2, 2, 100, 1000000);
  s.add("a", 0, 5, 0, {"A"});
  s.add("b", 1, 2, 10);
  s.add("c", 0, 3, 20);  // full, nothing idle, 3 <= 2*2+1: other
  s.add("a", 1, 2, 30);
  ASSERT_EQ(s.entries().size(), 2u);
  EXPECT_EQ(s.entries()[0].key, "a");
  EXPECT_EQ(s.entries()[0].counts, (std::vector<std::int64_t>{5, 2}));
  EXPECT_EQ(s.entries()[0].attrs, (std::vector<std::string>{"A"}));
  EXPECT_EQ(s.other(), (std::vector<std::int64_t>{3, 0}));
  s.add("d", 0, 3, 115);  // b idle since 10 (>= 100 ns): d takes its slot
  EXPECT_FALSE(s.has("b"));
  ASSERT_NE(s.find("d"), nullptr);
  EXPECT_EQ(s.find("d")->counts[0], 3);
  EXPECT_EQ(s.evictions(), 1);
  s.add("x", 5, 1, 117);  // bad column ignored
  EXPECT_EQ(s.entries().size(), 2u);
}

TEST(BoundedSeries, HeavyHitterTakesTheWeakestSlot) {
  BoundedSeries s(2, 1, 1000000, 1000000);
  s.add("a", 0, 100, 0);
  s.add("b", 0, 1, 0);
  std::int64_t other = 0;
  for (int i = 0; i < 10; ++i) {
    s.add("heavy", 0, 1, i + 1);
    if (!s.has("heavy")) other = s.other()[0];
  }
  ASSERT_TRUE(s.has("heavy"));  // promoted after 4 counts (> 2*1+1), b evicted
  EXPECT_FALSE(s.has("b"));
  EXPECT_TRUE(s.has("a"));
  EXPECT_EQ(other, 3);
  EXPECT_EQ(s.other()[0], 3);                // the counts before the promotion stay in other: series only grow
  EXPECT_EQ(s.find("heavy")->counts[0], 7);  // the promoting count starts the new series
  // Every total is conserved across slots, evicted series aside.
  EXPECT_EQ(s.find("a")->counts[0] + s.find("heavy")->counts[0] + s.other()[0], 110);
}

// monitor's BPF engine adds a process's flushes as one delta per fold: a
// batch that promotes its key goes to the key's series, not to "other"
// (integration.prometheus_server: 5861 of munmap_loop's 10000 flushes in
// "other" before this rule).
TEST(BoundedSeries, PromotingBatchStartsTheNewSeries) {
  BoundedSeries s(1, 1, 1000000000, 1000000000);
  s.add("busy", 0, 10, 0);
  s.add("batch", 0, 5861, 1);
  ASSERT_TRUE(s.has("batch"));
  EXPECT_EQ(s.find("batch")->counts[0], 5861);
  EXPECT_EQ(s.other()[0], 0);
  s.add("batch", 0, 4139, 2);
  EXPECT_EQ(s.find("batch")->counts[0], 10000);
}

TEST(BoundedSeries, ZeroKeysAllOther) {
  BoundedSeries s(0, 1, 1);
  s.add("a", 0, 1, 0);
  s.add("b", 0, 1, 1000);
  EXPECT_TRUE(s.entries().empty());
  EXPECT_EQ(s.other()[0], 2);
}

TEST(MonitorAttribution, InitiatedAndReceivedPerCgroupBounded) {
  MonitorAttribution a(2, 1000000000LL);
  int lookups = 0;
  TaskLookup lookup = [&](int pid) {
    ++lookups;
    return TaskInfo{"p" + std::to_string(pid), pid < 100 ? "/app.slice" : "/batch.slice/job" + std::to_string(pid)};
  };
  for (int i = 0; i < 10; ++i) a.add_flush(4, 42, i, lookup);  // sender pid 42 in /app.slice
  a.add_flush(4, 43, 11, lookup);
  a.add_flush(4, 500, 12, lookup);  // third process: other; its cgroup is the 2nd cgroup
  a.add_flush(4, 501, 13, lookup);  // other process, third cgroup: other cgroup
  a.add_flush(1, 0, 14, lookup);    // received while idle: cgroup (idle) -> other (full)
  a.add_flush(1, 7, 15, lookup);    // received by /app.slice
  a.add_flush(2, 7, 16, lookup);    // local flush: ignored
  MonitorTotals t;
  a.fill(t);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[42].flushes, 10);
  EXPECT_EQ(t.processes[42].cgroup, "/app.slice");
  EXPECT_EQ(t.processes[42].comm, "p42");
  EXPECT_EQ(t.process_other.flushes, 2);
  ASSERT_EQ(t.cgroups.size(), 2u);
  EXPECT_EQ(t.cgroups["/app.slice"].initiated, 11);
  EXPECT_EQ(t.cgroups["/app.slice"].received, 1);
  EXPECT_EQ(t.cgroups["/batch.slice/job500"].initiated, 1);
  EXPECT_EQ(t.cgroup_other.initiated, 1);
  EXPECT_EQ(t.cgroup_other.received, 1);
  EXPECT_LE(lookups, 6);  // a process with a slot is not looked up again

  // Interval view: per-cgroup deltas with their top initiators.
  MonitorTotals t0;
  t.trace = t0.trace = true;
  t.mono_ns = 1000000000;
  auto iv = monitor_interval(t0, t, 5);
  ASSERT_GE(iv.cgroups.size(), 3u);
  EXPECT_EQ(iv.cgroups[0].path, "/app.slice");
  ASSERT_EQ(iv.cgroups[0].top.size(), 2u);
  EXPECT_EQ(iv.cgroups[0].top[0].pid, 42);
  EXPECT_EQ(iv.initiators_other, 2);

  // Exports: every family bounded and with an "other" series.
  const std::string prom = monitor_exposition(t);
  EXPECT_NE(prom.find("shootdown_process_initiated_total{pid=\"42\",comm=\"p42\",cgroup=\"/app.slice\"} 10\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("shootdown_process_initiated_total{pid=\"other\",comm=\"other\",cgroup=\"other\"} 2\n"),
            std::string::npos);
  EXPECT_NE(prom.find("shootdown_cgroup_received_total{cgroup=\"other\"} 1\n"), std::string::npos);
  EXPECT_NE(prom.find("shootdown_cgroup_initiated_total{cgroup=\"/app.slice\"} 11\n"), std::string::npos);
  const auto j = nlohmann::json::parse(monitor_json_line(iv, "on"));
  EXPECT_EQ(j["cgroups"][0]["cgroup"], "/app.slice");
  EXPECT_EQ(j["cgroups"][0]["top_initiators"][0]["pid"], 42);
  EXPECT_EQ(j["initiators_other"], 2);
  const std::string lines = influx::encode_lines(monitor_points(iv, "h"));
  EXPECT_NE(lines.find("shootdown_monitor_cgroup,cgroup=/app.slice,host=h initiated=11i,received=1i"),
            std::string::npos)
      << lines;
}

TEST(BoundedSeries, HeavyHitterNotCrowdedOutByManyLightKeys) {
  BoundedSeries s(2, 1, 1000000000, 1000000000);
  s.add("a", 0, 50, 0);
  s.add("b", 0, 50, 0);
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 5; ++k) s.add("light" + std::to_string(round * 5 + k), 0, 1, 1);  // each seen once
    s.add("heavy", 0, 1, 1);
  }
  EXPECT_TRUE(s.has("heavy"));  // 1/6 of "other": kept by the 8-key sketch, promoted
  EXPECT_EQ(s.entries().size(), 2u);
  for (const auto& e : s.entries()) EXPECT_EQ(e.key.rfind("light", 0), std::string::npos) << e.key;  // no light key
}

TEST(BoundedSeries, ARowLandsInOneSeriesNeverSplit) {
  BoundedSeries s(1, 2, 1000000000LL, 1000000000LL);
  s.add_row("a", {5, 5000}, 5, 0);
  s.add_row("b", {1, 900}, 1, 1);  // full, b is light: the whole row goes to other
  EXPECT_EQ(s.find("a")->counts, (std::vector<std::int64_t>{5, 5000}));
  EXPECT_EQ(s.other(), (std::vector<std::int64_t>{1, 900}));
  s.add_row("b", {0, 700}, 0, 2);  // time without a count: weighs nothing, still one place
  EXPECT_EQ(s.other(), (std::vector<std::int64_t>{1, 1600}));
  s.add_row("a", {1, 2, 3}, 1, 3);  // wrong width: ignored
  EXPECT_EQ(s.find("a")->counts, (std::vector<std::int64_t>{5, 5000}));
}

TEST(MonitorAttribution, TimeCausedAndSufferedPerProcessAndCgroup) {
  MonitorAttribution a(4, 1000000000LL);
  TaskLookup lookup = [](int pid) {
    return TaskInfo{"p" + std::to_string(pid), pid == 42 ? "/batch.slice" : "/trading.slice"};
  };
  a.add(4, 42, 3, 9000, 0, lookup, 2400, 800);  // pid 42 sent 3 flushes, waited 9 us; they ran 2.4 us on targets
                                                // (0.8 us of it on another cgroup's tasks)
  a.add(1, 7, 2, 0, 1, lookup);                 // its IPIs interrupted pid 7 twice ...
  a.add(1, 7, 0, 5000, 2, lookup, 99, 99);      // ... for 5 us of handler time; inflicted is a sender's only
  a.add(1, 0, 1, 100, 3, lookup);               // and the idle task once
  a.add(2, 7, 10, 10, 4, lookup);               // local flush: neither caused nor suffered
  a.add(4, 0, 1, 1, 5, lookup);                 // the idle task sends nothing
  MonitorTotals t;
  a.fill(t);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[42].flushes, 3);
  EXPECT_EQ(t.processes[42].wait_ns, 9000);
  EXPECT_EQ(t.processes[42].handler_ns, 0);
  EXPECT_EQ(t.processes[42].inflicted_ns, 2400);
  EXPECT_EQ(t.processes[42].inflicted_other_ns, 800);
  EXPECT_EQ(t.processes[7].inflicted_ns, 0);
  EXPECT_EQ(t.cgroups["/batch.slice"].inflicted_other_ns, 800);
  EXPECT_EQ(t.processes[7].received, 2);
  EXPECT_EQ(t.processes[7].handler_ns, 5000);
  EXPECT_EQ(t.processes[7].cgroup, "/trading.slice");
  EXPECT_EQ(t.cgroups["/batch.slice"].wait_ns, 9000);
  EXPECT_EQ(t.cgroups["/trading.slice"].handler_ns, 5000);
  EXPECT_EQ(t.cgroups["/trading.slice"].received, 2);
  EXPECT_EQ(t.cgroups[kIdleCgroup].handler_ns, 100);

  // Interval: the most interrupted process first, cgroups by time.
  MonitorTotals t0;
  t.trace = t0.trace = true;
  t.timed = t0.timed = true;
  t.mono_ns = 1000000000;
  t.cpus = {MonitorCpu{1, 2, 2, {}, 5000, 2, 0, 0}, MonitorCpu{0, 0, 0, {}, 0, 0, 9000, 3}};
  const auto iv = monitor_interval(t0, t, 5);
  ASSERT_EQ(iv.hurt.size(), 1u);
  EXPECT_EQ(iv.hurt[0].pid, 7);
  ASSERT_EQ(iv.top.size(), 1u);
  EXPECT_EQ(iv.top[0].wait_ns, 9000);
  ASSERT_GE(iv.cgroups.size(), 2u);
  EXPECT_EQ(iv.cgroups[0].path, "/batch.slice");  // 9 us caused outweighs 5 us suffered
  EXPECT_EQ(iv.cpus[0].handler_ns, 5000);

  // Exports: seconds exactly, from integer nanoseconds.
  const std::string prom = monitor_exposition(t);
  EXPECT_NE(prom.find("shootdown_ipi_handler_seconds_total{cpu=\"1\",reason=\"remote_shootdown\"} 0.000005000\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("shootdown_flush_wait_seconds_total{cpu=\"0\"} 0.000009000\n"), std::string::npos);
  EXPECT_NE(prom.find("shootdown_process_suffered_seconds_total{pid=\"7\",comm=\"p7\",cgroup=\"/trading.slice\"} "
                      "0.000005000\n"),
            std::string::npos);
  EXPECT_NE(prom.find("shootdown_cgroup_caused_wait_seconds_total{cgroup=\"/batch.slice\"} 0.000009000\n"),
            std::string::npos);
  EXPECT_NE(prom.find("shootdown_cgroup_suffered_seconds_total{cgroup=\"other\"} 0.000000000\n"), std::string::npos);
  EXPECT_NE(prom.find("shootdown_cgroup_inflicted_other_seconds_total{cgroup=\"/batch.slice\"} 0.000000800\n"),
            std::string::npos);
  const auto j = nlohmann::json::parse(monitor_json_line(iv, "bpf"));
  EXPECT_EQ(j["cpus"][0]["handler_ns"], 5000);
  EXPECT_EQ(j["top_suffered"][0]["handler_ns"], 5000);
  EXPECT_EQ(j["wait"], "measured");
  EXPECT_EQ(j["link"], "csd");
  EXPECT_EQ(j["top_initiators"][0]["inflicted_ns"], 2400);
  const std::string lines = influx::encode_lines(monitor_points(iv, "h"));
  EXPECT_NE(lines.find("shootdown_monitor_cgroup,cgroup=/batch.slice,host=h initiated=3i,received=0i,handler_ns=0i,"
                       "wait_ns=9000i"),
            std::string::npos)
      << lines;

  // Where the wait cannot be measured, or nothing links a receiver to its
  // sender, it is absent, never zero.
  t.wait_unmeasured = "fexit: not permitted; csd tracepoints: none";
  t.unlinked = "no csd tracepoints to link a receiver to its sender (6.1)";
  const std::string prom2 = monitor_exposition(t);
  EXPECT_EQ(prom2.find("wait_seconds_total"), std::string::npos);
  EXPECT_EQ(prom2.find("inflicted"), std::string::npos);
  EXPECT_NE(prom2.find("shootdown_process_suffered_seconds_total"), std::string::npos);
  const auto iv2 = monitor_interval(t0, t, 5);
  const auto j2 = nlohmann::json::parse(monitor_json_line(iv2, "bpf"));
  EXPECT_EQ(j2["wait"], t.wait_unmeasured);
  EXPECT_FALSE(j2["cpus"][0].contains("wait_ns"));
  EXPECT_EQ(j2["link"], t.unlinked);
  EXPECT_FALSE(j2["top_initiators"][0].contains("inflicted_ns"));
  EXPECT_NE(format_monitor_screen(iv2, "t").find("wait not measured"), std::string::npos);
}

TEST(MonitorAttribution, KernelFlushInitiatorsBounded) {
  MonitorAttribution a(1, 1000000000LL);
  int lookups = 0;
  TaskLookup lookup = [&](int pid) {
    ++lookups;
    return TaskInfo{pid == 500 ? "kworker/u8:0-vmap_drain" : "kswapd0", "/"};
  };
  a.add_kernel_flush(500, 2, 2, 0, 0, 0, lookup);                 // a kworker initiated 2, queued 2 csds
  a.add_kernel_flush(500, 1, 1, 0, 0, 1, lookup);                 // its slot: no second lookup
  a.add_kernel_flush(900, 1, 1, 0, 0, 2, lookup);                 // one series only (max 1): "other"
  a.add_kernel_flush(0, 0, 0, 3, 9000, 3, lookup);                // the idle task interrupted 3 times: "other" too
  a.add_kernel_flush(500, 0, 0, 0, 0, 4, lookup);                 // nothing: ignored
  a.add(4, 42, 1, 0, 5, [](int) { return TaskInfo{"x", "/"}; });  // shootdowns stay in their own series
  MonitorTotals t;
  a.fill(t);
  ASSERT_EQ(t.kernel_flushers.size(), 1u);
  EXPECT_EQ(t.kernel_flushers[500].comm, "kworker/u8:0-vmap_drain");
  EXPECT_EQ(t.kernel_flushers[500].flushes, 3);
  EXPECT_EQ(t.kernel_flushers[500].ipis, 3);
  EXPECT_EQ(t.kernel_flusher_other.flushes, 1);
  EXPECT_EQ(t.kernel_flusher_other.hit_irqs, 3);
  EXPECT_EQ(t.kernel_flusher_other.hit_ns, 9000);
  EXPECT_EQ(t.kernel_flusher_other.comm, "other");
  EXPECT_EQ(t.processes[42].flushes, 1);
  EXPECT_EQ(lookups, 2);  // 500 once, 900 once (its candidacy for a slot)
}
