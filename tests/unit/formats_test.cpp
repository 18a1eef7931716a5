// result.json read-back, victim.hlog/.hgrm and the InfluxDB points of a run
// (issue 4). Fixed synthetic results: exact expectations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/event_counts.hpp"
#include "core/hdr/hgrm.hpp"
#include "core/hdr/hlog.hpp"
#include "core/stats.hpp"
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
  r.plan.release = "munmap";
  r.plan.pages = "4k";
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
  rel.strategy = "munmap";
  rel.bytes = 1 << 20;
  r.releases.push_back(rel);
  r.counters.push_back(CpuCounters{1, "victim", 3, 4, 5, 6});
  r.doctor.push_back(DoctorFinding{DoctorStatus::kWarn, "isolcpus", "cpu 1 not isolated", "add isolcpus=1", true});
  r.trace.enabled = true;
  r.trace.status = "on";
  r.trace.events.push_back(KernelEvent{rel.before_ns + 10, 1, 0, 0, EventType::kTlbFlush, 1, 0, 0, -1});
  r.trace.events.push_back(KernelEvent{rel.before_ns + 20, 1, 0, 0, EventType::kCallFunctionEntry, 251, 0, 0, -1});
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
  for (std::size_t i = 0; i < r.intervals.size(); ++i) EXPECT_TRUE(back.result.intervals[i].hist == r.intervals[i].hist) << i;
  EXPECT_EQ(back.result.realtime_offset_ns, r.realtime_offset_ns);
  EXPECT_EQ(event_total(back.result), 2);
  // Raw windows cover all 40 samples here: complete series come back, indexed.
  ASSERT_EQ(back.result.victims.size(), 2u);
  EXPECT_TRUE(back.result.victims[0].partial());
  EXPECT_EQ(back.result.victims[0].lat_ns, r.victims[0].lat_ns);
  EXPECT_EQ(back.result.victims[0].span_start(5), r.victims[0].span_start(5));
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
  expect_error([](auto& j) { j["intervals"][2]["count"] = 11; }, "intervals[2].histogram: holds 10 samples but count is 11");
  expect_error([](auto& j) { j["intervals"][0].erase("histogram"); }, "intervals[0].histogram: missing");
  expect_error([](auto& j) { j["raw_windows"][0]["latency_ns"].push_back(1); }, "raw_windows[0]: end_offset_ns has");
  expect_error([](auto& j) { j["trace"]["events"] = 3; }, "trace.events: 3 but the counts add up to 2");
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
  const std::string line = influx::encode_line(points[0]);
  EXPECT_EQ(line.rfind("shootdown_interval,pages=4k,phase=baseline,release=munmap,run_id=abcd1234,victim_cpu=1 count=10i,", 0), 0u)
      << line;
  EXPECT_NE(line.find(",p99="), std::string::npos);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_NE(line.find(" " + std::to_string(r.intervals[0].end_ns + r.realtime_offset_ns) + "\n"), std::string::npos);
  const std::string marker = influx::encode_line(points[8]);
  EXPECT_EQ(marker.rfind("shootdown_marker,marker=before,", 0), 0u) << marker;
  EXPECT_NE(marker.find(" " + std::to_string(r.releases[0].before_ns + r.realtime_offset_ns) + "\n"), std::string::npos);
}
