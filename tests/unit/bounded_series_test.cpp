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
  EXPECT_EQ(s.other()[0], 3);  // the counts before the promotion stay in other: series only grow
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
  ASSERT_EQ(t.initiators.size(), 2u);
  EXPECT_EQ(t.initiators[42].flushes, 10);
  EXPECT_EQ(t.initiators[42].cgroup, "/app.slice");
  EXPECT_EQ(t.initiators[42].comm, "p42");
  EXPECT_EQ(t.initiators_other, 2);
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
