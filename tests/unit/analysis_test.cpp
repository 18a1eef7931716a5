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
  EXPECT_EQ(r.intervals[0].phase, "baseline");
  EXPECT_EQ(r.intervals[5].phase, "release");  // 500..599 overlaps the window start
  EXPECT_EQ(r.intervals[6].phase, "release");
  EXPECT_EQ(r.intervals[9].phase, "after");
  EXPECT_EQ(r.intervals[1].start_ns, r.intervals[0].end_ns);  // gapless
}

TEST(Analysis, MaskRestrictsSamples) {
  Result r = synthetic();
  std::vector<bool> mask(1000, true);
  mask[600] = false;
  const auto va = analyze_victim(r, r.victims[0], &mask);
  EXPECT_LT(va.phases[1].per_batch.max, 1100);
}
