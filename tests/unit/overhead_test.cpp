// SPDX-License-Identifier: Apache-2.0
// Tracing-overhead statistics (core/overhead) on synthetic victim series with
// known answers: segment assignment and the guard, percentiles per segment,
// pairing by block, a known 5% shift recovered with a CI containing 1.05, no
// shift within target, short/empty segments skipped and counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/overhead.hpp"

using namespace shootdown;
using namespace shootdown::overhead;

namespace {

// A gapless series: each sample spans (previous end, end].
struct Series {
  VictimSamples v;
  std::int64_t now = 0;
  Series() { v.cpu = 1; }
  void add(std::int64_t lat) {
    now += lat;
    v.end_ns.push_back(now);
    v.lat_ns.push_back(lat);
  }
  void fill(std::int64_t lat, std::int64_t until) {
    while (now + lat <= until) add(lat);
  }
};

double normal(compare::Rng& r) {
  const double u1 = 1.0 - r.uniform(), u2 = r.uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

constexpr std::int64_t kGuard = 200000;  // 200 us

// `blocks` blocks of one traced and one untraced segment in a random order,
// like bench/trace_overhead. Each block has its own level (log-normal, sd
// 15%: the run-to-run spread that swamped separate runs), every sample its
// own noise (5%) and rare spikes; traced samples are scaled by `shift`.
// Between segments a few long "transition" samples (tracer open/close), and
// at each segment start a burst inside the guard.
struct Synth {
  Series s;
  std::vector<Segment> segments;
  std::vector<double> untraced_levels;
};
Synth synth(std::uint64_t seed, int blocks, double shift, int per_segment) {
  compare::Rng r(seed);
  Synth out;
  for (int b = 0; b < blocks; ++b) {
    const double level = 3500 * std::exp(0.15 * normal(r));
    const bool traced_first = r.below(2) == 1;
    for (int k = 0; k < 2; ++k) {
      const bool traced = (k == 0) == traced_first;
      for (int i = 0; i < 3; ++i) out.s.add(40000);  // outside every segment
      Segment seg;
      seg.start_ns = out.s.now;
      seg.traced = traced;
      seg.block = b;
      for (int i = 0; i < 10; ++i) out.s.add(9000);  // 90 us burst: inside the guard
      for (int i = 0; i < per_segment; ++i) {
        double x = level * (traced ? shift : 1.0) * std::exp(0.05 * normal(r));
        if (r.uniform() < 0.005) x += 50000;
        out.s.add(std::llround(x));
      }
      seg.end_ns = out.s.now;
      out.segments.push_back(seg);
      if (!traced) out.untraced_levels.push_back(level);
    }
  }
  return out;
}

Options synth_options() {
  Options o;
  o.guard_ns = kGuard;
  o.min_samples = 100;
  return o;
}

}  // namespace

TEST(Overhead, SegmentAssignmentAndGuard) {
  Series s;
  s.fill(1000, 100000);                     // before: 100 samples
  for (int i = 0; i < 4; ++i) s.add(5000);  // traced segment [100, 300] us: 20 us burst, then 1250 ns
  s.fill(1250, 300000);
  for (int i = 0; i < 4; ++i) s.add(5000);  // untraced segment [300, 500] us: burst, then 1000 ns
  s.fill(1000, 500000);
  s.fill(1000, 600000);  // after
  const std::vector<Segment> segs = {{100000, 300000, true, 0}, {300000, 500000, false, 0}};
  Options o;
  o.guard_ns = 20000;
  o.min_samples = 10;
  o.min_pairs = 1;
  const Report r = analyze(s.v, segs, o);
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].samples, 144u);  // 180 us / 1250 ns
  EXPECT_EQ(r.segments[0].guarded, 4u);
  EXPECT_EQ(r.segments[1].samples, 180u);  // 180 us / 1000 ns
  EXPECT_EQ(r.segments[1].guarded, 4u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r.segments[0].pct[k], 1250) << kPercentileNames[k];
    EXPECT_EQ(r.segments[1].pct[k], 1000) << kPercentileNames[k];
  }
  ASSERT_EQ(r.pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(r.pairs[0].ratio[kP50], 1.25);
  EXPECT_EQ(r.skipped_segments, 0u);
  EXPECT_EQ(r.unpaired_blocks, 0u);

  // Without the guard the bursts are kept: 4 of 148 samples are above p99.
  o.guard_ns = 0;
  const Report g = analyze(s.v, segs, o);
  EXPECT_EQ(g.segments[0].samples, 148u);
  EXPECT_EQ(g.segments[0].guarded, 0u);
  EXPECT_EQ(g.segments[0].pct[kP50], 1250);
  EXPECT_EQ(g.segments[0].pct[kP99], 5000);

  // A sample straddling the segment start is not the segment's.
  const Report st = analyze(s.v, {{99500, 300000, true, 0}}, o);
  EXPECT_EQ(st.segments[0].samples, 148u);
  EXPECT_EQ(st.segments[0].guarded, 1u);
  // Nor one straddling its end.
  const Report en = analyze(s.v, {{100000, 299500, true, 0}}, o);
  EXPECT_EQ(en.segments[0].samples, 147u);
}

TEST(Overhead, FindsAKnownFivePercentShift) {
  const Synth d = synth(11, 30, 1.05, 3000);
  const Report r = analyze(d.s.v, d.segments, synth_options());
  ASSERT_EQ(r.pairs.size(), 30u);
  const RatioSummary& p50 = r.summary[kP50];
  EXPECT_EQ(p50.pairs, 30u);
  EXPECT_NEAR(p50.median, 1.05, 0.003);
  EXPECT_TRUE(p50.ci.contains(1.05)) << p50.ci.lo << " " << p50.ci.hi;
  EXPECT_LT(p50.ci.hi - p50.ci.lo, 0.01);
  EXPECT_EQ(p50.verdict, Verdict::kAboveTarget);
  EXPECT_NE(summary_line(r, kP50).find("above target (> 1%)"), std::string::npos) << summary_line(r, kP50);

  // Coverage: over 40 seeds the 95% interval contains the true ratio in most.
  int covered = 0;
  for (std::uint64_t seed = 100; seed < 140; ++seed) {
    const Synth e = synth(seed, 20, 1.05, 1000);
    Options o = synth_options();
    o.bootstrap.seed = seed;
    if (analyze(e.s.v, e.segments, o).summary[kP50].ci.contains(1.05)) ++covered;
  }
  EXPECT_GE(covered, 34) << covered << "/40";
  std::printf("5%% shift: CI contains 1.05 for %d of 40 seeds\n", covered);
}

TEST(Overhead, ZeroShiftIsWithinTargetWithEnoughPairs) {
  const Synth d = synth(7, 30, 1.0, 3000);
  // The blocks' levels differ far more than the 1% target: comparing
  // segments of different blocks (separate runs) could not resolve it.
  const auto [lo, hi] = std::minmax_element(d.untraced_levels.begin(), d.untraced_levels.end());
  EXPECT_GT(*hi / *lo, 1.3);
  const Report r = analyze(d.s.v, d.segments, synth_options());
  const RatioSummary& p50 = r.summary[kP50];
  EXPECT_EQ(p50.pairs, 30u);
  EXPECT_NEAR(p50.median, 1.0, 0.003);
  EXPECT_EQ(p50.verdict, Verdict::kWithinTarget) << p50.ci.lo << " " << p50.ci.hi;
  const std::string line = summary_line(r, kP50);
  EXPECT_EQ(line.rfind("median p50 ratio traced/untraced = ", 0), 0u) << line;
  EXPECT_NE(line.find("[95% CI "), std::string::npos) << line;
  EXPECT_NE(line.find("over 30 pairs: within target (< 1%)"), std::string::npos) << line;
  // Deterministic: the same seed gives the same interval.
  const Report again = analyze(d.s.v, d.segments, synth_options());
  EXPECT_EQ(again.summary[kP50].ci.lo, p50.ci.lo);
  EXPECT_EQ(again.summary[kP50].ci.hi, p50.ci.hi);

  // Two pairs: a median but no interval.
  const Synth few = synth(7, 2, 1.0, 3000);
  const Report f = analyze(few.s.v, few.segments, synth_options());
  EXPECT_EQ(f.summary[kP50].pairs, 2u);
  EXPECT_TRUE(std::isfinite(f.summary[kP50].median));
  EXPECT_TRUE(std::isnan(f.summary[kP50].ci.lo));
  EXPECT_EQ(f.summary[kP50].verdict, Verdict::kInconclusive);
  EXPECT_NE(summary_line(f, kP50).find("over 2 pairs (too few for an interval, need 3): inconclusive"),
            std::string::npos)
      << summary_line(f, kP50);
}

TEST(Overhead, ShortAndEmptySegmentsAreSkippedAndCounted) {
  Synth d = synth(3, 6, 1.0, 1000);
  Options o = synth_options();
  // Block 1: its traced segment cut to 50 us after the guard (too few samples).
  for (auto& s : d.segments)
    if (s.block == 1 && s.traced) s.end_ns = s.start_ns + kGuard + 50000;
  // Block 2: its untraced segment lies after the last sample (empty).
  for (auto& s : d.segments)
    if (s.block == 2 && !s.traced) {
      s.start_ns = d.s.now + 1000000;
      s.end_ns = s.start_ns + 1000000;
    }
  // Block 3: a segment that ends before it starts.
  for (auto& s : d.segments)
    if (s.block == 3 && s.traced) std::swap(s.start_ns, s.end_ns);
  // Block 9: a traced segment without an untraced partner.
  d.segments.push_back({d.segments[0].start_ns, d.segments[0].end_ns, true, 9});

  const Report r = analyze(d.s.v, d.segments, o);
  EXPECT_EQ(r.skipped_segments, 3u);
  EXPECT_EQ(r.unpaired_blocks, 4u);  // 1, 2, 3 and 9
  ASSERT_EQ(r.pairs.size(), 3u);     // 0, 4, 5
  EXPECT_EQ(r.pairs[0].block, 0);
  EXPECT_EQ(r.pairs[1].block, 4);
  EXPECT_EQ(r.pairs[2].block, 5);
  EXPECT_EQ(r.summary[kP50].pairs, 3u);
  for (const auto& s : r.segments) {
    if (s.skipped) {
      EXPECT_TRUE(std::isnan(s.pct[kP50]));
    }
  }
  const auto empty = std::find_if(r.segments.begin(), r.segments.end(),
                                  [](const SegmentStats& s) { return s.seg.block == 2 && !s.seg.traced; });
  ASSERT_NE(empty, r.segments.end());
  EXPECT_EQ(empty->samples, 0u);
  EXPECT_TRUE(empty->skipped);

  // No samples at all: nothing to pair, no ratio, inconclusive.
  const Report none = analyze(VictimSamples{}, d.segments, o);
  EXPECT_EQ(none.pairs.size(), 0u);
  EXPECT_EQ(none.skipped_segments, d.segments.size());
  EXPECT_EQ(none.summary[kP50].pairs, 0u);
  EXPECT_TRUE(std::isnan(none.summary[kP50].median));
  EXPECT_EQ(none.summary[kP50].verdict, Verdict::kInconclusive);
  EXPECT_NE(summary_line(none, kP50).find("= n/a over 0 pairs"), std::string::npos) << summary_line(none, kP50);
  // No segments either.
  EXPECT_EQ(analyze(d.s.v, {}, o).pairs.size(), 0u);
}

TEST(Overhead, VerdictAgainstTheTarget) {
  EXPECT_EQ(verdict_for({0.995, 1.005}, 0.01), Verdict::kWithinTarget);
  EXPECT_EQ(verdict_for({0.99, 1.01}, 0.01), Verdict::kWithinTarget);
  EXPECT_EQ(verdict_for({1.02, 1.03}, 0.01), Verdict::kAboveTarget);
  EXPECT_EQ(verdict_for({1.005, 1.03}, 0.01), Verdict::kInconclusive);  // may be above, may be within
  EXPECT_EQ(verdict_for({0.97, 0.98}, 0.01), Verdict::kInconclusive);  // faster with tracing: not the target's question
  EXPECT_EQ(verdict_for({NAN, NAN}, 0.01), Verdict::kInconclusive);
  EXPECT_EQ(verdict_for({1.015, 1.03}, 0.02), Verdict::kInconclusive);
  EXPECT_STREQ(verdict_text(Verdict::kWithinTarget), "within target");
  EXPECT_STREQ(verdict_text(Verdict::kAboveTarget), "above target");
  EXPECT_STREQ(verdict_text(Verdict::kInconclusive), "inconclusive");
}
