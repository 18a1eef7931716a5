// SPDX-License-Identifier: Apache-2.0
// core/timeline: time buckets of victim samples (report.html charts 1 and 2).
#include <gtest/gtest.h>

#include <numeric>

#include "core/timeline.hpp"

using namespace shootdown;

namespace {

// Gapless 1 us samples from t = 0; extra[i] replaces sample i's latency.
VictimSamples samples(std::size_t n, const std::vector<std::pair<std::size_t, std::int64_t>>& extra = {}) {
  VictimSamples v;
  v.cpu = 1;
  v.start_ns = 0;
  std::int64_t t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t lat = 1000;
    for (const auto& [k, l] : extra)
      if (k == i) lat = l;
    t += lat;
    v.end_ns.push_back(t);
    v.lat_ns.push_back(lat);
  }
  return v;
}

std::int64_t sum(const std::vector<std::int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), std::int64_t{0});
}

constexpr auto kTlb = static_cast<std::uint8_t>(StallLabel::kTlbShootdown);
constexpr auto kPre = static_cast<std::uint8_t>(StallLabel::kPreempted);

}  // namespace

TEST(Timeline, BucketWidthIsSizedToTheRun) {
  EXPECT_EQ(timeline_bucket_ns(5'000'000'000), 5'000'000);    // 5 s: 5 ms, 1000 buckets
  EXPECT_EQ(timeline_bucket_ns(1'000'000'000), 1'000'000);    // 1 s: 1 ms
  EXPECT_EQ(timeline_bucket_ns(60'000'000'000), 50'000'000);  // 60 s: 50 ms, 1200 buckets
  EXPECT_EQ(timeline_bucket_ns(10'000'000), kTimelineMinBucketNs);
  EXPECT_EQ(timeline_bucket_ns(0), kTimelineMinBucketNs);
  for (std::int64_t span : {200'000'000LL, 3'700'000'000LL, 17'000'000'000LL, 600'000'000'000LL}) {
    const std::int64_t w = timeline_bucket_ns(span);
    const std::int64_t n = (span + w - 1) / w;
    EXPECT_LE(n, kTimelineMaxBuckets) << span;
    EXPECT_GE(n, kTimelineMaxBuckets / 5) << span;  // 1-2-5 steps: at most 2.5x coarser than needed
  }
}

TEST(Timeline, StallIsSplitByLabelAndTime) {
  // 30 000 samples of 1 us; sample 5000 is a 30 us shootdown, sample 20000 a
  // 12 ms preemption, which must be spread over the 5 ms buckets it spans.
  VictimSamples v = samples(30000, {{5000, 30000}, {20000, 12'000'000}});
  std::vector<std::uint8_t> labels(v.size(), 0);
  labels[5000] = kTlb;
  labels[20000] = kPre;
  const std::int64_t width = 5'000'000;
  const BucketSpec b{0, width, static_cast<std::size_t>((v.end_ns.back() + width - 1) / width)};
  const TimelineVictim tv = bucket_victim(v, &labels, 1000, 8000, b);
  ASSERT_TRUE(tv.attributed);
  ASSERT_EQ(tv.stall_ns[kTlb].size(), b.buckets);
  // Totals equal the unsplit per-label sums (VictimAttribution::stall_ns).
  EXPECT_EQ(sum(tv.stall_ns[kTlb]), 29000);
  EXPECT_EQ(sum(tv.stall_ns[kPre]), 12'000'000 - 1000);
  EXPECT_EQ(sum(tv.stall_ns[0]), 0);  // 1 us samples at the median: no jitter
  // The shootdown ends at 5000 us + 30 us: bucket 1 only.
  EXPECT_EQ(tv.stall_ns[kTlb][1], 29000);
  // The preemption spans [20.029 ms, 32.029 ms]: buckets 4, 5 and 6, none above its width.
  int touched = 0;
  for (std::size_t k = 0; k < b.buckets; ++k) {
    EXPECT_LE(tv.stall_ns[kPre][k], width) << k;
    touched += tv.stall_ns[kPre][k] > 0;
  }
  EXPECT_EQ(touched, 3);
  EXPECT_GT(tv.stall_ns[kPre][5], 4'900'000);  // the middle bucket is almost all stall
  // Unattributed: every sample above the threshold, all causes together.
  EXPECT_EQ(sum(tv.unattributed_ns), 29000 + 12'000'000 - 1000);
  // Latency per bucket: max and p99 from the samples ending there.
  EXPECT_EQ(tv.max_ns[1], 30000);
  EXPECT_EQ(tv.p50_ns[1], 1000);
  EXPECT_EQ(tv.p99_ns[1], 1000);
  EXPECT_EQ(tv.max_ns[6], 12'000'000);  // ends in bucket 6
  EXPECT_EQ(tv.samples[5], 0);          // nothing ended inside the preemption
  EXPECT_EQ(tv.max_ns[5], -1);
  EXPECT_EQ(tv.covered_ns, v.end_ns.back());
}

TEST(Timeline, PercentilesNeedEnoughSamples) {
  VictimSamples v = samples(150, {{140, 9000}});
  const BucketSpec b{0, 100'000, 2};  // samples ending in (0, 100 us]: bucket 0, the rest bucket 1
  const TimelineVictim tv = bucket_victim(v, nullptr, 1000, 8000, b);
  EXPECT_FALSE(tv.attributed);
  EXPECT_EQ(tv.samples[0], 100);
  EXPECT_EQ(tv.p99_ns[0], 1000);
  EXPECT_EQ(tv.samples[1], 50);
  EXPECT_EQ(tv.p99_ns[1], -1);  // < 100 samples: no p99
  EXPECT_EQ(tv.p90_ns[1], 1000);
  EXPECT_EQ(tv.max_ns[1], 9000);
  EXPECT_EQ(sum(tv.unattributed_ns), 8000);
  for (const auto& l : tv.stall_ns) EXPECT_EQ(sum(l), 0);  // no labels: nothing split by cause
}

TEST(Timeline, BuildTimelineUsesTheAttribution) {
  Result r;
  r.measure_start_ns = 0;
  r.plan.stall_factor = 8;
  r.victims.push_back(samples(20000, {{7000, 40000}}));
  Analysis a;
  a.attribution.available = true;
  VictimAttribution va;
  va.cpu = 1;
  va.labels.assign(20000, 0);
  va.labels[7000] = kTlb;
  va.baseline_median_ns = 1000;
  va.stall_threshold_ns = 8000;
  a.attribution.victims.push_back(va);
  const Timeline tl = build_timeline(r, a);
  EXPECT_EQ(tl.bucket_ns, kTimelineMinBucketNs);  // 20 ms run
  EXPECT_EQ(tl.buckets, 201u);
  EXPECT_FALSE(tl.partial);
  ASSERT_EQ(tl.victims.size(), 1u);
  EXPECT_TRUE(tl.victims[0].attributed);
  EXPECT_EQ(sum(tl.victims[0].stall_ns[kTlb]), 39000);
  EXPECT_EQ(tl.victims[0].stall_ns[kTlb][70], 39000);  // (7.0 ms, 7.04 ms]

  // Labels that do not cover the samples are not used.
  a.attribution.victims[0].labels.resize(10);
  EXPECT_FALSE(build_timeline(r, a).victims[0].attributed);
}

TEST(Timeline, ReadBackResultTakesLatencyFromIntervals) {
  Result r;
  r.measure_start_ns = 0;
  VictimSamples v = samples(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v.index.push_back(static_cast<std::int64_t>(5000 + i));
  for (auto& e : v.end_ns) e += 5'000'000;
  r.victims.push_back(v);
  Interval iv;
  iv.victim_cpu = 1;
  iv.start_ns = 0;
  iv.end_ns = 10'000'000;
  iv.summary.count = 10000;
  iv.summary.p50 = 1000;
  iv.summary.p99 = 2500;
  iv.summary.max = 70000;
  r.intervals.push_back(iv);
  const Timeline tl = build_timeline(r, Analysis{});
  ASSERT_EQ(tl.victims.size(), 1u);
  const TimelineVictim& tv = tl.victims[0];
  EXPECT_TRUE(tl.partial);
  EXPECT_TRUE(tv.latency_from_intervals);
  EXPECT_EQ(tv.intervals_used, 1);
  for (std::size_t k = 0; k < tl.buckets; ++k) EXPECT_EQ(tv.max_ns[k], 70000) << k;  // the interval covers all
  EXPECT_EQ(sum(tv.samples), 1000);  // the kept samples, not the interval's count
  EXPECT_EQ(tv.covered_ns, 1'000'000);
}

TEST(Timeline, IntervalsByTimeAreWallClockSlots) {
  Result r;
  r.measure_start_ns = 0;
  r.plan.report_every_ns = 10'000'000;
  // Victim 1: 1 us samples for 36.5 ms, one of them a 25 ms stall from 2 ms.
  // Victim 2: 1 us samples for 35.0 ms.
  VictimSamples a = samples(11500, {{2000, 25'000'000}});
  VictimSamples b = samples(35000);
  b.cpu = 2;
  r.victims = {a, b};
  r.measure_end_ns = a.end_ns.back();  // 36.499 ms: the last slot [30, 36.499] is 6.5 ms
  build_time_intervals(r);
  std::vector<std::int64_t> starts_a, starts_b;
  std::int64_t count_a = 0;
  for (const auto& iv : r.intervals) {
    EXPECT_EQ(iv.start_ns % 10'000'000, 0) << iv.start_ns;  // on the slot grid
    EXPECT_EQ(iv.end_ns, std::min<std::int64_t>(iv.start_ns + 10'000'000, r.measure_end_ns));
    (iv.victim_cpu == 1 ? starts_a : starts_b).push_back(iv.start_ns);
    if (iv.victim_cpu == 1) count_a += iv.total_count();
  }
  // Victim 1's stall ends in slot 2 (at 27 ms): slot 1 has no sample and is left out.
  EXPECT_EQ(starts_a, (std::vector<std::int64_t>{0, 20'000'000, 30'000'000}));
  EXPECT_EQ(starts_b, (std::vector<std::int64_t>{0, 10'000'000, 20'000'000, 30'000'000}));
  EXPECT_EQ(count_a, 11500);  // every sample in exactly one interval

  // A last slot under 2 ms is merged into the one before.
  r.measure_end_ns = 31'000'000;
  r.victims[0] = samples(31000);
  r.victims[1] = samples(30500);
  r.victims[1].cpu = 2;
  build_time_intervals(r);
  ASSERT_FALSE(r.intervals.empty());
  EXPECT_EQ(r.intervals.back().start_ns, 20'000'000);
  EXPECT_EQ(r.intervals.back().end_ns, 31'000'000);
  EXPECT_EQ(r.intervals.size(), 6u);  // 3 per victim
}

// Issue 19: a store that folded blocks leaves a partial series; its time
// slots never span a gap, and a slot at a gap's edge starts or ends with its
// own samples, so it does not overlap the folded interval there.
TEST(Timeline, IntervalsByTimeStopAtTheGapsOfAFoldedSeries) {
  Result r;
  r.measure_start_ns = 0;
  r.plan.report_every_ns = 10'000'000;
  const VictimSamples all = samples(40000);  // 1 us each, 0..40 ms
  VictimSamples v;
  v.cpu = 1;
  // Kept raw: samples 0-4999 (0..5 ms) and 25000-39999 (25..40 ms); 5000-24999 folded.
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i >= 5000 && i < 25000) continue;
    v.end_ns.push_back(all.end_ns[i]);
    v.lat_ns.push_back(all.lat_ns[i]);
    v.index.push_back(static_cast<std::int64_t>(i));
  }
  r.victims = {v};
  r.measure_end_ns = all.end_ns.back();
  build_time_intervals(r);
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  std::int64_t count = 0;
  for (const auto& iv : r.intervals) {
    spans.emplace_back(iv.start_ns, iv.end_ns);
    count += iv.total_count();
  }
  EXPECT_EQ(spans, (std::vector<std::pair<std::int64_t, std::int64_t>>{
                       {0, 5'000'000}, {25'000'000, 30'000'000}, {30'000'000, 40'000'000}}));
  EXPECT_EQ(count, 20000);

  // The same with samples 0-9999 folded too: the series starts after a gap.
  VictimSamples w;
  w.cpu = 1;
  for (std::size_t k = 0; k < v.size(); ++k)
    if (v.index[k] >= 2500) {
      w.end_ns.push_back(v.end_ns[k]);
      w.lat_ns.push_back(v.lat_ns[k]);
      w.index.push_back(v.index[k]);
    }
  r.victims = {w};
  build_time_intervals(r);
  ASSERT_FALSE(r.intervals.empty());
  EXPECT_EQ(r.intervals.front().start_ns, 2'500'000) << "the first slot starts with its first sample, not at 0";
  EXPECT_EQ(r.intervals.front().end_ns, 5'000'000);
}
