// SPDX-License-Identifier: Apache-2.0
// result.json read-back, victim.hlog/.hgrm and the InfluxDB points of a run.
// Fixed synthetic results: exact expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/event_counts.hpp"
#include "core/hdr/hgrm.hpp"
#include "core/hdr/hlog.hpp"
#include "core/stats.hpp"
#include "core/analysis.hpp"
#include "sink/console.hpp"
#include "sink/hdr_out.hpp"
#include "sink/influx_result.hpp"
#include "sink/json.hpp"
#include "sink/json_read.hpp"

using namespace shootdown;

namespace {

// Two victims, 40 samples each (4 intervals of 10), one release in the middle.
Result two_victims() {
  Result r;
  r.run_id = "abcd1234";
  r.env.version = "test";
  r.plan.batch = 65536;
  r.plan.report_every = 65536 * 10;
  r.plan.release = ReleaseStrategy::kMunmap;
  r.plan.pages = PageMode::k4k;
  r.plan.culprit_cpu = 0;
  r.plan.victim_cpus = {1, 2};
  r.plan.settle_ns = 1000;
  r.measure_start_ns = 1'000'000;
  r.measure_end_ns = 1'000'000 + 41 * 1000;
  r.realtime_offset_ns = 1'700'000'000'000'000'000;
  for (int cpu : {1, 2}) {
    VictimSamples v;
    v.cpu = cpu;
    v.pages_per_batch = 16;
    v.start_ns = r.measure_start_ns;
    std::int64_t t = v.start_ns;
    for (int i = 0; i < 40; ++i) {
      const std::int64_t lat = (i == 21 ? 25000 : 900 + i * cpu);
      t += lat;
      v.end_ns.push_back(t);
      v.lat_ns.push_back(lat);
    }
    r.victims.push_back(v);
  }
  Release rel;
  rel.before_ns = r.victims[0].end_ns[20];
  rel.after_ns = rel.before_ns + 3000;
  rel.strategy = ReleaseStrategy::kMunmap;
  rel.bytes = 1 << 20;
  r.releases.push_back(rel);
  r.counters.push_back(CpuCounters{1, CpuRole::kVictim, 3, 4, 5, 6});
  r.doctor.push_back(DoctorFinding{DoctorStatus::kWarn, "isolcpus", "cpu 1 not isolated", "add isolcpus=1", true});
  r.trace.enabled = true;
  r.trace.status = "on";
  r.trace.events.push_back(KernelEvent{rel.before_ns + 10, 1, 0, 0, EventType::kTlbFlush, 1, 0, 0, -1});
  r.trace.events.push_back(KernelEvent{rel.before_ns + 20, 1, 0, 0, EventType::kCallFunctionEntry, 251, 0, 0, -1});
  build_intervals(r);
  return r;
}

// A traced run whose raw windows keep only part of the samples: 6000
// samples of ~1 us per victim, one release at 3 ms, so samples before 1 ms
// and after ~5 ms are not in result.json. Kernel events on both victims:
// a shootdown IPI (call_function span with a reason-1 flush) that stalls a
// sample in the release window, an IPI of another function (csd symbol), a
// timer outside the kept windows, a task switch by another task.
Result traced_partial() {
  Result r;
  r.run_id = "traced01";
  r.env.version = "test";
  r.plan.batch = 4096;
  r.plan.report_every = 4096 * 1000;
  r.plan.release = ReleaseStrategy::kMunmap;
  r.plan.culprit_cpu = 0;
  r.plan.victim_cpus = {1, 2};
  r.plan.settle_ns = 1000;
  r.plan.stall_factor = 8;
  r.measure_start_ns = 10'000'000;
  r.measure_end_ns = r.measure_start_ns + 6'200'000;
  r.trace.enabled = true;
  r.trace.status = "on";
  r.trace.tracepoints = {"tlb:tlb_flush", "irq_vectors:call_function_entry"};
  r.trace.symbols = {{0xffffffff81000010ULL, "flush_tlb_func+0x0"}, {0xffffffff81000020ULL, "ipi_mb+0x0"}};
  for (int cpu : {1, 2}) {
    VictimSamples v;
    v.cpu = cpu;
    v.tid = 100 + cpu;
    v.pages_per_batch = 1;
    v.start_ns = r.measure_start_ns;
    std::int64_t t = v.start_ns;
    for (int i = 0; i < 6000; ++i) {
      const bool stall = i == 3010 || i == 500 || i == 3050 || i == 5800;
      const std::int64_t lat = stall ? 30000 : 1000 + (i % 7) * cpu;
      t += lat;
      v.end_ns.push_back(t);
      v.lat_ns.push_back(lat);
    }
    r.victims.push_back(v);
  }
  Release rel;
  rel.before_ns = r.victims[0].end_ns[3000];
  rel.after_ns = rel.before_ns + 20000;
  rel.strategy = ReleaseStrategy::kMunmap;
  rel.bytes = 1 << 20;
  r.releases.push_back(rel);
  auto& ev = r.trace.events;
  for (const auto& v : r.victims) {
    const auto at = [&](std::size_t i) { return v.end_ns[i] - 500; };  // inside sample i
    const std::int32_t tid = v.tid;
    ev.push_back(KernelEvent{at(500), v.cpu, tid, tid, EventType::kLocalTimerEntry, 236, 0, 0, -1});
    ev.push_back(KernelEvent{at(500) + 100, v.cpu, tid, tid, EventType::kLocalTimerExit, 236, 0, 0, -1});
    ev.push_back(KernelEvent{at(3010) - 400, 0, 7, 7, EventType::kIpiSendCpumask, 1 << v.cpu, 0, 0, 0});
    ev.push_back(KernelEvent{at(3010), v.cpu, tid, tid, EventType::kCallFunctionEntry, 251, 0, 0, -1});
    ev.push_back(KernelEvent{at(3010) + 10, v.cpu, tid, tid, EventType::kCsdFunctionEntry, 0,
                             static_cast<std::int64_t>(0xffffffff81000010ULL), 0, -1});
    ev.push_back(KernelEvent{at(3010) + 20, v.cpu, tid, tid, EventType::kTlbFlush, kTlbRemoteShootdown, -1, 0, -1});
    ev.push_back(KernelEvent{at(3010) + 90, v.cpu, tid, tid, EventType::kCallFunctionExit, 251, 0, 0, -1});
    ev.push_back(KernelEvent{at(3050), v.cpu, tid, tid, EventType::kCallFunctionSingleEntry, 251, 0, 0, -1});
    ev.push_back(KernelEvent{at(3050) + 10, v.cpu, tid, tid, EventType::kCsdFunctionEntry, 0,
                             static_cast<std::int64_t>(0xffffffff81000020ULL), 0, -1});
    ev.push_back(KernelEvent{at(3050) + 50, v.cpu, tid, tid, EventType::kCallFunctionSingleExit, 251, 0, 0, -1});
    ev.push_back(KernelEvent{at(5800), v.cpu, 999, 999, EventType::kReschedEntry, 253, 0, 0, -1});
  }
  std::stable_sort(ev.begin(), ev.end(),
                   [](const KernelEvent& x, const KernelEvent& y) { return x.mono_ns < y.mono_ns; });
  r.trace.callchains.push_back(Callchain{{0xffffffff81000030ULL}, {"native_send_call_func_ipi+0x5 [kernel]"}});
  build_intervals(r);
  return r;
}

// JSON without what a loaded result cannot reproduce (computed from events).
nlohmann::json comparable(const std::string& text) {
  auto j = nlohmann::json::parse(text);
  j.erase("attribution");
  j["trace"].erase("callchains");
  return j;
}

}  // namespace

TEST(ResultFromJson, RoundTripsEveryField) {
  const Result r = two_victims();
  const std::string text = sink::result_to_string(r, analyze(r));
  const sink::LoadedResult back = sink::result_from_json(text);
  EXPECT_EQ(comparable(sink::result_to_string(back.result, back.analysis)), comparable(text));
  ASSERT_EQ(back.result.intervals.size(), r.intervals.size());
  for (std::size_t i = 0; i < r.intervals.size(); ++i)
    EXPECT_TRUE(back.result.intervals[i].histogram() == r.intervals[i].histogram()) << i;
  EXPECT_EQ(back.result.realtime_offset_ns, r.realtime_offset_ns);
  EXPECT_EQ(event_total(back.result), 2);
  // Raw windows cover all 40 samples here: complete series come back, indexed.
  ASSERT_EQ(back.result.victims.size(), 2u);
  EXPECT_TRUE(back.result.victims[0].partial());
  EXPECT_EQ(back.result.victims[0].lat_ns, r.victims[0].lat_ns);
  EXPECT_EQ(back.result.victims[0].span_start(5), r.victims[0].span_start(5));
}

TEST(ResultFromJson, EventsAndAttributionComeBack) {
  const Result r = traced_partial();
  const Analysis a = analyze(r);
  ASSERT_TRUE(a.attribution.available);
  ASSERT_EQ(a.attribution.victims.size(), 2u);
  const auto& ta = a.attribution.victims[0];
  ASSERT_EQ(ta.shootdowns_received, 1);  // the test's premise: evidence of several kinds
  ASSERT_GT(ta.samples[static_cast<std::size_t>(StallLabel::kTimer)], 0);
  ASSERT_GT(ta.samples[static_cast<std::size_t>(StallLabel::kOtherIpi)], 0);
  const std::string text = sink::result_to_string(r, a);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["trace"]["events_table"]["mono_ns"][0].get<std::int64_t>(),
            r.trace.events[0].mono_ns - r.measure_start_ns);
  EXPECT_EQ(j["trace"]["events_table"]["type"].size(), r.trace.events.size());
  EXPECT_FALSE(j["trace"]["events_truncated"].get<bool>());

  const sink::LoadedResult back = sink::result_from_json(text);
  const Result& br = back.result;
  ASSERT_TRUE(br.saved_attribution.has_value());
  ASSERT_EQ(br.victims.size(), 2u);
  ASSERT_TRUE(br.victims[0].partial());
  ASSERT_LT(br.victims[0].size(), r.victims[0].size());  // the timer sample (500) was not kept
  // The events, field by field (pid is not kept).
  ASSERT_EQ(br.trace.events.size(), r.trace.events.size());
  for (std::size_t i = 0; i < r.trace.events.size(); ++i) {
    const KernelEvent &x = r.trace.events[i], &y = br.trace.events[i];
    EXPECT_EQ(std::tie(x.mono_ns, x.cpu, x.tid, x.type, x.a, x.b, x.c, x.callchain),
              std::tie(y.mono_ns, y.cpu, y.tid, y.type, y.a, y.b, y.c, y.callchain))
        << i;
  }
  EXPECT_EQ(br.trace.symbols, r.trace.symbols);
  EXPECT_EQ(event_total(br), static_cast<std::int64_t>(r.trace.events.size()));

  // analyze() of the read-back result: the saved attribution, not one
  // recomputed from the partial samples (that would lose the timer stall).
  const Analysis b = analyze(br);
  ASSERT_NE(attribute_result(br).victims.at(0).samples, ta.samples);  // recomputing would not do
  for (const Analysis* x : {&b, &back.analysis}) {
    ASSERT_TRUE(x->attribution.available);
    ASSERT_EQ(x->attribution.victims.size(), a.attribution.victims.size());
    for (std::size_t i = 0; i < a.attribution.victims.size(); ++i) {
      const VictimAttribution &want = a.attribution.victims[i], &got = x->attribution.victims[i];
      EXPECT_EQ(got.cpu, want.cpu);
      EXPECT_EQ(got.samples, want.samples) << "samples per label, victim " << i;
      EXPECT_EQ(got.stall_ns, want.stall_ns);
      EXPECT_EQ(got.shootdowns_received, want.shootdowns_received);
      EXPECT_EQ(got.shootdowns_matched, want.shootdowns_matched);
      EXPECT_EQ(got.shootdowns_stalled, want.shootdowns_stalled);
      EXPECT_EQ(got.flush_ipis, want.flush_ipis);
      EXPECT_EQ(got.handler_ns.count, want.handler_ns.count);
      EXPECT_EQ(got.handler_ns.p50, want.handler_ns.p50);
      EXPECT_EQ(got.ipi_functions, want.ipi_functions);
      EXPECT_EQ(got.baseline_median_ns, want.baseline_median_ns);
      EXPECT_EQ(got.stall_threshold_ns, want.stall_threshold_ns);
      // Labels per kept sample, through its original index.
      const VictimSamples& v = br.victims[i];
      ASSERT_EQ(got.labels.size(), v.size());
      for (std::size_t k = 0; k < v.size(); ++k)
        ASSERT_EQ(got.labels[k], want.labels[static_cast<std::size_t>(v.index[k])])
            << "victim " << i << " sample " << k;
    }
  }
  ASSERT_EQ(back.analysis.clean_victims.size(), a.clean_victims.size());
  // The console's kernel-trace and attribution lines, as the run printed them.
  auto from_trace = [](const std::string& s) { return s.substr(s.find("kernel trace:")); };
  EXPECT_EQ(from_trace(sink::console_summary(br, back.analysis)), from_trace(sink::console_summary(r, a)));
  // Writing the read-back result gives the same JSON, attribution included.
  auto no_chains = [](nlohmann::json x) {
    x["trace"].erase("callchains");
    return x;
  };
  EXPECT_EQ(no_chains(nlohmann::json::parse(sink::result_to_string(br, back.analysis))), no_chains(j));
}

// Issue 19: a measured series whose store folded blocks numbers its samples
// among all measured (index[]); label_runs cover the series as written, so
// raw_windows[].first_sample is the position in it, and the read-back labels
// still land on their samples.
// A send to CPUs above 63 keeps its whole mask through result.json; a result
// saved before the cpumask columns existed reads back with `a` alone.
TEST(ResultFromJson, CpumasksBeyondCpu63ComeBack) {
  Result r = traced_partial();
  auto send = std::find_if(r.trace.events.begin(), r.trace.events.end(),
                           [](const KernelEvent& e) { return e.type == EventType::kIpiSendCpumask; });
  ASSERT_NE(send, r.trace.events.end());
  send->cpumask = 0;
  r.trace.cpumasks.push_back(CpuMask::of({3, 65, 70}));
  const std::string text = sink::result_to_string(r, analyze(r));
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["trace"]["events_table"]["cpumasks"], nlohmann::json::array({"3,65,70"}));
  const sink::LoadedResult back = sink::result_from_json(text);
  ASSERT_EQ(back.result.trace.events.size(), r.trace.events.size());
  for (std::size_t i = 0; i < r.trace.events.size(); ++i)
    EXPECT_EQ(back.result.trace.events[i].cpumask, r.trace.events[i].cpumask) << i;
  EXPECT_EQ(back.result.trace.cpumasks, r.trace.cpumasks);
  const KernelEvent& b = back.result.trace.events[static_cast<std::size_t>(send - r.trace.events.begin())];
  EXPECT_TRUE(back.result.trace.targets(b, 70));

  auto old = j;
  old["trace"]["events_table"].erase("cpumask");
  old["trace"]["events_table"].erase("cpumasks");
  const sink::LoadedResult older = sink::result_from_json(old.dump());
  EXPECT_TRUE(older.result.trace.cpumasks.empty());
  for (const KernelEvent& e : older.result.trace.events) EXPECT_EQ(e.cpumask, -1);

  auto bad = j;
  bad["trace"]["events_table"]["cpumasks"] = nlohmann::json::array();
  try {
    (void)sink::result_from_json(bad.dump());
    ADD_FAILURE() << "a mask index past cpumasks was read";
  } catch (const sink::JsonReadError& e) {
    EXPECT_NE(std::string(e.what()).find("not in cpumasks"), std::string::npos) << e.what();
  }
}

// The TLB accounting by evidence comes back; a result saved before the split
// (no lazy_tlb, a negative counted_not_traced) is still read and shown as
// what it is.
TEST(ResultFromJson, TlbAccountingByEvidenceAndTheOlderForm) {
  Result r = traced_partial();
  r.interrupts_start_ns = r.measure_start_ns;
  r.interrupts_span_ns = 10'000'000'000;
  r.counters = {CpuCounters{1, CpuRole::kVictim, 3, 3, 0, 0}, CpuCounters{2, CpuRole::kVictim, 0, 0, 0, 0}};
  const Analysis a = analyze(r);
  ASSERT_GE(a.attribution.victims.at(0).tlb_counted, 0);
  const std::string text = sink::result_to_string(r, a);
  const auto j = nlohmann::json::parse(text);
  const auto& ta = j["attribution"]["victims"][0]["tlb_accounting"];
  ASSERT_TRUE(ta.contains("lazy_tlb")) << ta.dump();
  const sink::LoadedResult back = sink::result_from_json(text);
  const auto& bv = back.analysis.attribution.victims.at(0);
  EXPECT_FALSE(bv.tlb_legacy);
  EXPECT_EQ(bv.tlb_counted, 3);
  EXPECT_EQ(bv.tlb_traced_remote + bv.tlb_traced_wrong_cpu + bv.tlb_lazy + bv.tlb_untraced, 3 + bv.tlb_traced_beyond);
  EXPECT_NE(sink::attribution_section(back.result, back.analysis).find("reason 5 in an IPI"), std::string::npos);

  auto old = j;
  auto& ot = old["attribution"]["victims"][0]["tlb_accounting"];
  for (const char* k : {"lazy_tlb", "traced_beyond_count", "local_wrong_cpu", "local_flush_runs"}) ot.erase(k);
  ot["counted"] = 8;
  ot["traced_remote"] = 0;
  ot["traced_wrong_cpu"] = 9;
  ot["counted_not_traced"] = -1;
  const sink::LoadedResult older = sink::result_from_json(old.dump());
  const auto& ov = older.analysis.attribution.victims.at(0);
  EXPECT_TRUE(ov.tlb_legacy);
  EXPECT_EQ(ov.tlb_untraced, -1);
  const std::string shown = sink::attribution_section(older.result, older.analysis);
  EXPECT_NE(shown.find("counted, not traced -1 (saved by an older shootdown"), std::string::npos) << shown;
}

TEST(ResultFromJson, AFoldedSeriesKeepsItsLabelsThroughTheRawWindows) {
  Result r = traced_partial();
  for (auto& v : r.victims) {
    v.index.resize(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) v.index[i] = static_cast<std::int64_t>(i) + 1'048'576;
  }
  const Analysis a = analyze(r);
  ASSERT_TRUE(a.attribution.available);
  const std::string text = sink::result_to_string(r, a);
  EXPECT_EQ(nlohmann::json::parse(text)["raw_windows"][0]["first_sample"].get<std::int64_t>(),
            static_cast<std::int64_t>(std::lower_bound(r.victims[0].end_ns.begin(), r.victims[0].end_ns.end(),
                                                       r.releases[0].before_ns - 2'000'000) -
                                      r.victims[0].end_ns.begin()));
  const sink::LoadedResult back = sink::result_from_json(text);
  for (std::size_t i = 0; i < a.attribution.victims.size(); ++i) {
    const auto& want = a.attribution.victims[i].labels;
    const auto& got = back.analysis.attribution.victims.at(i).labels;
    const VictimSamples& v = back.result.victims.at(i);
    ASSERT_TRUE(v.windows_only);
    ASSERT_EQ(got.size(), v.size());
    for (std::size_t k = 0; k < v.size(); ++k)
      ASSERT_EQ(got[k], want.at(static_cast<std::size_t>(v.index[k]))) << "victim " << i << " sample " << k;
    EXPECT_TRUE(std::count(got.begin(), got.end(), static_cast<std::uint8_t>(StallLabel::kTlbShootdown)) > 0);
  }
}

TEST(ResultFromJson, EventsTableIsCapped) {
  Result r = two_victims();
  const std::int64_t t0 = r.measure_start_ns;
  r.trace.events.clear();
  for (std::size_t i = 0; i < kResultMaxEvents + 3; ++i)
    r.trace.events.push_back(
        KernelEvent{t0 + static_cast<std::int64_t>(i), 2, 0, 5, EventType::kLocalTimerEntry, 236, 0, 0, -1});
  const sink::LoadedResult back = sink::result_from_json(sink::result_to_string(r, analyze(r)));
  EXPECT_TRUE(back.result.events_truncated);
  EXPECT_EQ(back.result.trace.events.size(), kResultMaxEvents);
  EXPECT_EQ(event_total(back.result), static_cast<std::int64_t>(kResultMaxEvents + 3));  // the counts cover all
  EXPECT_EQ(event_counts(back.result).at(0).count, static_cast<std::int64_t>(kResultMaxEvents + 3));
}

TEST(ResultFromJson, ReRenderedFilesAreIdentical) {
  const Result r = two_victims();
  const sink::LoadedResult back = sink::result_from_json(sink::result_to_string(r, analyze(r)));
  EXPECT_EQ(sink::victim_hlog(back.result), sink::victim_hlog(r));
  EXPECT_EQ(sink::victim_hgrm(back.result), sink::victim_hgrm(r));
  EXPECT_EQ(influx::encode_lines(sink::result_points(back.result, back.analysis)),
            influx::encode_lines(sink::result_points(r, analyze(r))));
}

TEST(ResultFromJson, OneClearErrorPerProblem) {
  const Result r = two_victims();
  const auto good = nlohmann::json::parse(sink::result_to_string(r, analyze(r)));
  auto expect_error = [&](const std::function<void(nlohmann::json&)>& mutate, const std::string& want) {
    auto j = good;
    mutate(j);
    try {
      (void)sink::result_from_json(j.dump());
      ADD_FAILURE() << "no error, expected " << want;
    } catch (const sink::JsonReadError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  expect_error([](auto& j) { j["schema_version"] = 2; }, "schema_version: 2 is newer than this shootdown reads (1)");
  expect_error([](auto& j) { j["schema_version"] = 0; }, "schema_version: 0 is not supported");
  expect_error([](auto& j) { j["schema_version"] = "1"; }, "schema_version: expected an integer");
  expect_error([](auto& j) { j.erase("schema_version"); }, "schema_version: missing");
  expect_error([](auto& j) { j["tool"] = "other"; }, "not a shootdown result");
  expect_error([](auto& j) { j["plan"].erase("batch"); }, "plan.batch: missing");
  expect_error([](auto& j) { j["intervals"][1]["phase"] = "during"; }, "intervals[1].phase: unknown phase 'during'");
  expect_error([](auto& j) { j["intervals"][2]["histogram"] = "HISTF!!"; }, "intervals[2].histogram: ");
  expect_error([](auto& j) { j["intervals"][2]["count"] = 11; },
               "intervals[2].histogram: holds 10 samples but count is 11");
  expect_error([](auto& j) { j["intervals"][0].erase("histogram"); }, "intervals[0].histogram: missing");
  expect_error([](auto& j) { j["raw_windows"][0]["latency_ns"].push_back(1); }, "raw_windows[0]: end_offset_ns has");
  expect_error([](auto& j) { j["trace"]["events"] = 3; }, "trace.events: 3 but the counts add up to 2");
  expect_error([](auto& j) { j["trace"]["events_table"]["cpu"].push_back(1); },
               "trace.events_table.cpu: has 3 entries but mono_ns 2");
  expect_error([](auto& j) { j["trace"]["events_table"]["type"][0] = 99; },
               "trace.events_table.type[0]: code 99 not in type_codes");
  expect_error([](auto& j) { j["attribution"]["victims"][0]["label_runs"][0][0] = 42; },
               "attribution.victims[0].label_runs[0]: unknown label code 42");
  expect_error([](auto& j) { j["attribution"]["victims"][0]["label_runs"][0][1] = 1000; },
               "attribution.victims[0].label_runs[0]: label runs cover more than");
  EXPECT_THROW((void)sink::result_from_json("{\"tool\": "), sink::JsonReadError);
  EXPECT_THROW((void)sink::result_from_json("[]"), sink::JsonReadError);
}

TEST(VictimHlog, UntaggedCombinedPlusPerCpuAndPhaseTags) {
  const Result r = two_victims();
  const std::string text = sink::victim_hlog(r);
  auto log = hdr::parse_log(text);
  ASSERT_TRUE(log.ok()) << log.error();
  // 4 intervals x (1 untagged + 2 victims x 2 tags).
  ASSERT_EQ(log->intervals.size(), 20u);
  ASSERT_TRUE(log->base_time_sec.has_value());
  EXPECT_NEAR(*log->base_time_sec, 1.7e9 + 0.001, 1e-3);
  hdr::Histogram untagged = make_latency_histogram();
  std::map<std::string, std::int64_t> counts;
  for (const auto& iv : log->intervals) {
    counts[iv.tag] += iv.histogram.total_count();
    if (iv.tag.empty()) untagged.add(iv.histogram);
  }
  EXPECT_EQ(counts[""], 80);
  EXPECT_EQ(counts["cpu1"], 40);
  EXPECT_EQ(counts["cpu2"], 40);
  EXPECT_EQ(counts["cpu1.release"] + counts["cpu1.baseline"] + counts["cpu1.after"], 40);
  EXPECT_GT(counts["cpu1.release"], 0);
  EXPECT_EQ(hdr::format_percentile_distribution(untagged), sink::victim_hgrm(r));
  EXPECT_EQ(untagged.max(), untagged.highest_equivalent(25000));
  // Interval 0 starts at the first sample: 0.000 s after the run start.
  EXPECT_NE(text.find("\"Interval_Compressed_Histogram\"\n0.000,"), std::string::npos);
}

TEST(ResultPoints, SchemaOfTheMeasurements) {
  const Result r = two_victims();
  const auto points = sink::result_points(r, analyze(r));
  std::map<std::string, int> n;
  for (const auto& p : points) ++n[p.measurement];
  EXPECT_EQ(n["shootdown_interval"], 8);
  EXPECT_EQ(n["shootdown_marker"], 2);
  EXPECT_EQ(n["shootdown_interrupts"], 1);
  EXPECT_EQ(n["shootdown_trace"], 2);
  EXPECT_EQ(n["shootdown_phase"], 6);
  const std::string line = influx::encode_line(points[0]).value();
  EXPECT_EQ(line.rfind(
                "shootdown_interval,pages=4k,phase=baseline,release=munmap,run_id=abcd1234,victim_cpu=1 count=10i,", 0),
            0u)
      << line;
  EXPECT_NE(line.find(",p99="), std::string::npos);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_NE(line.find(" " + std::to_string(r.intervals[0].end_ns + r.realtime_offset_ns) + "\n"), std::string::npos);
  const std::string marker = influx::encode_line(points[8]).value();
  EXPECT_EQ(marker.rfind("shootdown_marker,marker=before,", 0), 0u) << marker;
  EXPECT_NE(marker.find(" " + std::to_string(r.releases[0].before_ns + r.realtime_offset_ns) + "\n"),
            std::string::npos);
}

// paced / chunked: the pace in the plan and a partial release come back;
// results written before them (no pace_step, pace_gap_ns, partial) still load.
TEST(ResultFromJson, PaceAndPartialRelease) {
  Result r = two_victims();
  r.plan.release = ReleaseStrategy::kPaced;
  r.plan.chunk_size = 1 << 20;
  r.plan.pace_step = 64 << 10;
  r.plan.pace_gap_ns = 100'000;
  r.releases[0].strategy = ReleaseStrategy::kPaced;
  r.releases[0].partial = true;
  r.releases[0].bytes = 640 << 10;
  const std::string text = sink::result_to_string(r, analyze(r));
  const sink::LoadedResult back = sink::result_from_json(text);
  EXPECT_EQ(back.result.plan.pace_step, 64 << 10);
  EXPECT_EQ(back.result.plan.pace_gap_ns, 100'000);
  ASSERT_EQ(back.result.releases.size(), 1u);
  EXPECT_TRUE(back.result.releases[0].partial);
  EXPECT_EQ(back.result.releases[0].bytes, 640 << 10);
  EXPECT_EQ(comparable(sink::result_to_string(back.result, back.analysis)), comparable(text));
  const std::string console = sink::console_summary(back.result, back.analysis);
  EXPECT_NE(console.find("1 MiB in 16 steps of 64 KiB with 100 us gaps"), std::string::npos) << console;
  EXPECT_NE(console.find("stopped after 640 KiB of 1 MiB"), std::string::npos) << console;

  auto old = nlohmann::json::parse(text);
  old["plan"].erase("pace_step");
  old["plan"].erase("pace_gap_ns");
  old["releases"][0].erase("partial");
  const sink::LoadedResult older = sink::result_from_json(old.dump());
  EXPECT_EQ(older.result.plan.pace_step, 0);
  EXPECT_EQ(older.result.plan.pace_gap_ns, 0);
  EXPECT_FALSE(older.result.releases[0].partial);
}
