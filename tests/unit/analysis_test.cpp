// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/analysis.hpp"

using namespace shootdown;

namespace {
// 1000 samples of 1 µs starting at t=0; a 50 µs stall at sample 600.
Result synthetic() {
  Result r;
  r.plan.batch = 65536;
  r.plan.report_every = 65536 * 100;  // 100 samples per interval
  r.plan.settle_ns = 1000;
  VictimSamples v;
  v.cpu = 1;
  v.start_ns = 0;
  v.pages_per_batch = 16;
  std::int64_t t = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t lat = i == 600 ? 50000 : 1000;
    t += lat;
    v.end_ns.push_back(t);
    v.lat_ns.push_back(lat);
  }
  r.victims.push_back(v);
  Release rel;
  rel.before_ns = 590000;  // sample 590's end
  rel.after_ns = 700000;
  r.releases.push_back(rel);
  return r;
}
}  // namespace

TEST(Analysis, PhasesByMarkers) {
  Result r = synthetic();
  EXPECT_EQ(phase_at(r, 100), Phase::kBaseline);
  EXPECT_EQ(phase_at(r, 590000), Phase::kRelease);
  EXPECT_EQ(phase_at(r, 701000), Phase::kRelease);  // settle
  EXPECT_EQ(phase_at(r, 701001), Phase::kAfter);
  auto ph = sample_phases(r, r.victims[0]);
  for (std::size_t i = 0; i < ph.size(); ++i) EXPECT_EQ(ph[i], phase_at(r, r.victims[0].end_ns[i])) << i;
}

TEST(Analysis, PhaseStatsPerBatchAndPerPage) {
  Result r = synthetic();
  const Analysis a = analyze(r);
  ASSERT_EQ(a.victims.size(), 1u);
  const auto& ps = a.victims[0].phases;
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].per_batch.count + ps[1].per_batch.count + ps[2].per_batch.count, 1000);
  EXPECT_EQ(ps[1].per_batch.max, make_latency_histogram().highest_equivalent(50000));
  EXPECT_LT(ps[0].per_batch.max, 1100);
  EXPECT_DOUBLE_EQ(ps[1].per_page.max, ps[1].per_batch.max / 16);
  // The stall is inside the release window, so duration covers it.
  EXPECT_GE(ps[1].duration_ns, 50000);
}

TEST(Analysis, IntervalsCoverEverySampleOnce) {
  Result r = synthetic();
  build_intervals(r);
  ASSERT_EQ(r.intervals.size(), 10u);
  std::int64_t total = 0;
  for (const auto& iv : r.intervals) total += iv.total_count();
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(r.intervals[0].phase, Phase::kBaseline);
  EXPECT_EQ(r.intervals[5].phase, Phase::kRelease);  // 500..599 overlaps the window start
  EXPECT_EQ(r.intervals[6].phase, Phase::kRelease);
  EXPECT_EQ(r.intervals[9].phase, Phase::kAfter);
  EXPECT_EQ(r.intervals[1].start_ns, r.intervals[0].end_ns);  // gapless
}

// A series a full store folded in the middle (samples 250..449 gone): the
// intervals restart where the sample numbers jump, none spans the gap.
TEST(Analysis, IntervalsOfAPartialSeriesNeverSpanAGap) {
  Result r = synthetic();
  VictimSamples& v = r.victims[0];
  VictimSamples p;
  p.cpu = v.cpu;
  p.pages_per_batch = v.pages_per_batch;
  p.start_ns = v.start_ns;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i >= 250 && i < 450) continue;
    p.end_ns.push_back(v.end_ns[i]);
    p.lat_ns.push_back(v.lat_ns[i]);
    p.index.push_back(static_cast<std::int64_t>(i));
  }
  v = p;
  build_intervals(r);
  std::int64_t total = 0;
  for (const auto& iv : r.intervals) {
    total += iv.total_count();
    EXPECT_FALSE(iv.start_ns < 450'000 && iv.end_ns > 250'000) << iv.start_ns << ".." << iv.end_ns;
  }
  EXPECT_EQ(total, 800);
  ASSERT_EQ(r.intervals.size(), 9u);  // 0-99 100-199 200-249 | 450-549 ... 950-999
  EXPECT_EQ(r.intervals[2].total_count(), 50);
  EXPECT_EQ(r.intervals[3].start_ns, 450'000);
}

TEST(Analysis, MaskRestrictsSamples) {
  Result r = synthetic();
  std::vector<bool> mask(1000, true);
  mask[600] = false;
  const auto va = analyze_victim(r, r.victims[0], &mask);
  EXPECT_LT(va.phases[1].per_batch.max, 1100);
}

TEST(Analysis, StallLostPerPhaseFromTheBaselineMedian) {
  Result r = synthetic();
  const Analysis a = analyze(r);
  const auto& ps = a.victims[0].phases;
  EXPECT_EQ(ps[0].stall_lost_ns, 0);
  EXPECT_EQ(ps[1].stall_lost_ns, 49000);  // the one 50 µs sample, 1 µs median
  EXPECT_EQ(ps[2].stall_lost_ns, 0);
  // An explicit median (attribution's) is the one used.
  const VictimAnalysis v = analyze_victim(r, r.victims[0], nullptr, 500);
  EXPECT_EQ(v.phases[0].stall_lost_ns, 589 * 500);  // sample 590 ends at the release: not baseline
}

namespace {
// 200 000 baseline samples around 1 µs (deterministic jitter), then a release
// phase of `release_n` samples of latency `release_lat` (0: the same jitter).
Result spread_case(std::int64_t release_n, std::int64_t release_lat) {
  Result r;
  r.plan.batch = 65536;
  r.plan.report_every = 65536 * 1000;
  VictimSamples v;
  v.cpu = 1;
  v.pages_per_batch = 16;
  std::uint64_t x = 12345;
  auto jitter = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>(900 + (x >> 33) % 200);
  };
  std::int64_t t = 0;
  for (int i = 0; i < 200000; ++i) {
    t += jitter();
    v.end_ns.push_back(t);
    v.lat_ns.push_back(v.end_ns.size() > 1 ? t - v.end_ns[v.end_ns.size() - 2] : t);
  }
  Release rel;
  rel.before_ns = t + 1;
  for (std::int64_t i = 0; i < release_n; ++i) {
    const std::int64_t lat = release_lat ? release_lat : jitter();
    t += lat;
    v.end_ns.push_back(t);
    v.lat_ns.push_back(lat);
  }
  rel.after_ns = t;
  r.releases.push_back(rel);
  r.victims.push_back(v);
  return r;
}
}  // namespace

TEST(Analysis, SpreadMarksWhatTheBaselineNeverShows) {
  const Analysis a = analyze(spread_case(10000, 1500));
  const VictimAnalysis& va = a.victims[0];
  EXPECT_EQ(va.spread_windows, 13);  // ~200 ms of baseline in windows of the release phase (15 ms)
  const std::uint16_t m = va.phases[1].beyond_spread;
  EXPECT_TRUE(m & (1u << static_cast<int>(Column::kP50)));
  EXPECT_TRUE(m & (1u << static_cast<int>(Column::kMean)));
  EXPECT_TRUE(m & (1u << static_cast<int>(Column::kMin)));
  // p99.99 needs 10 000 samples per window: there are ~10 000, some fewer.
  EXPECT_FALSE(m & (1u << static_cast<int>(Column::kP99999)));
  EXPECT_EQ(va.phases[0].beyond_spread, 0);  // the baseline is never marked
}

TEST(Analysis, SpreadLeavesTheBaselinesOwnDistributionUnmarked) {
  const Analysis a = analyze(spread_case(10000, 0));
  EXPECT_EQ(a.victims[0].spread_windows, 19);  // ~200 ms in windows of 10 ms, the remainder left out
  // Same distribution: p50 and p90 stay inside the windows' range.
  const std::uint16_t m = a.victims[0].phases[1].beyond_spread;
  EXPECT_FALSE(m & (1u << static_cast<int>(Column::kP50)));
  EXPECT_FALSE(m & (1u << static_cast<int>(Column::kP90)));
}

TEST(Analysis, SpreadNeedsTenWindows) {
  Result r = synthetic();  // 590 baseline samples, no window would hold a quantile
  const Analysis a = analyze(r);
  EXPECT_EQ(a.victims[0].spread_windows >= 10 || a.victims[0].phases[1].beyond_spread == 0, true);
}

TEST(Analysis, VerdictWithoutEvidenceSaysUnknown) {
  Result r = synthetic();
  r.trace.status = "off (--trace off)";
  r.counters.push_back({1, CpuRole::kVictim, 7, 0, 0, 0});
  const Analysis a = analyze(r);
  ASSERT_EQ(a.verdict.victims.size(), 1u);
  EXPECT_FALSE(a.verdict.victims[0].evidence);
  EXPECT_EQ(a.verdict.unknown, "kernel trace off (--trace off)");
  EXPECT_EQ(a.verdict.victims[0].tlb_delta, 7);
  EXPECT_EQ(a.verdict.releases, 1);
  EXPECT_EQ(a.verdict.release_window_ns, 110000);
}

TEST(Analysis, VerdictTakesTheAttributionFigures) {
  Result r = synthetic();
  Analysis a = analyze(r);
  a.attribution.available = true;
  VictimAttribution v;
  v.cpu = 1;
  v.shootdowns_received = 108;
  v.shootdowns_matched = 100;
  v.stall_ns[static_cast<int>(StallLabel::kTlbShootdown)] = 3700000;
  v.stall_per_shootdown.p50 = 29000;
  v.wrong_cpu_flushes = 2;
  v.releases_on_cpu = 0;
  a.attribution.victims = {v};
  const Verdict d = make_verdict(r, a);
  ASSERT_EQ(d.victims.size(), 1u);
  const VictimVerdict& x = d.victims[0];
  EXPECT_TRUE(x.evidence);
  EXPECT_EQ(x.shootdowns, 108);
  EXPECT_EQ(x.seen, 100);
  EXPECT_EQ(x.stall_ns, 3700000);
  EXPECT_EQ(x.per_ipi_p50_ns, 29000);
  EXPECT_EQ(x.foreign, 2);
  EXPECT_TRUE(x.off_cpu_in_release);
  EXPECT_TRUE(d.unknown.empty());
}
