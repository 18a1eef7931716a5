// SPDX-License-Identifier: Apache-2.0
// compare statistics against values computed independently: quantiles from
// the type-7 definition by hand, Mann–Whitney exact p-values by brute-force
// enumeration of every split (Python itertools), normal approximations from
// the textbook formula, bootstrap coverage and A/A false-positive rates by
// simulation over many seeds (deterministic: every seed is fixed).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/compare.hpp"
#include "core/errors.hpp"

using namespace shootdown;
using namespace shootdown::compare;

namespace {

// Samples from known distributions with our own generator (portable).
double normal(Rng& r) {
  // Box–Muller.
  const double u1 = 1.0 - r.uniform(), u2 = r.uniform();
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}
double exponential(Rng& r) {
  return -std::log(1.0 - r.uniform());
}

// Shaped like real trial metrics: a positive level, log-normal noise and an
// occasional large outlier (host preemption landing in the window).
std::vector<double> trial_like(Rng& r, std::size_t n, double level) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) {
    double x = level * std::exp(0.3 * normal(r));
    if (r.uniform() < 0.1) x += level * 3 * exponential(r);
    v.push_back(x);
  }
  return v;
}

// Trials 1..n of every arm, in trial-major order (a callback drawing from an
// Rng sees the same sequence as a hand-written loop), stall_us from
// stall(arm index, trial index), every other metric 0.
template <class F>
std::vector<TrialMetrics> trials_of(const std::vector<std::string>& arms, int n, F stall) {
  std::vector<TrialMetrics> trials;
  for (int i = 0; i < n; ++i)
    for (std::size_t k = 0; k < arms.size(); ++k) {
      TrialMetrics t;
      t.arm = arms[k];
      t.trial = i + 1;
      for (auto& v : t.v) v = 0;
      t.set(Metric::kStallUs, stall(static_cast<int>(k), i));
      trials.push_back(t);
    }
  return trials;
}

}  // namespace

TEST(CompareStats, QuantileType7) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.25), 1.75);  // h = 3 * 0.25 = 0.75
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0), 1);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1), 4);
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median({5, 1, 3, 10}), 4);
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(CompareStats, SpreadIgnoresNaN) {
  const Spread s = spread({7, NAN, 1, 3, 5});
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.median, 4);
  EXPECT_DOUBLE_EQ(s.q1, 2.5);  // h = 0.75 between 1 and 3
  EXPECT_DOUBLE_EQ(s.q3, 5.5);  // h = 2.25 between 5 and 7
  EXPECT_DOUBLE_EQ(s.iqr(), 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 7);
}

TEST(CompareStats, RngIsDeterministicAndUniform) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  // SplitMix64 reference: first output for seed 0 (Vigna's splitmix64.c).
  Rng z(0);
  EXPECT_EQ(z.next(), 0xE220A8397B1DCDAFULL);
  Rng r(7);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) ++counts[r.below(7)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);  // ~4 sigma
}

TEST(CompareStats, MannWhitneyExactMatchesEnumeration) {
  // Values from brute-force enumeration of all C(m+n, m) splits.
  auto a = mann_whitney({1, 3, 5}, {2, 4, 6});
  EXPECT_TRUE(a.exact);
  EXPECT_DOUBLE_EQ(a.u, 3);
  EXPECT_NEAR(a.p, 0.7, 1e-12);  // U distribution 1,1,2,3,3,3,3,2,1,1 / 20
  auto b = mann_whitney({1.1, 2.5, 3.7, 8.0, 9.2}, {4.4, 5.1, 6.3, 7.7, 10.5, 11.0});
  EXPECT_DOUBLE_EQ(b.u, 8);
  EXPECT_NEAR(b.p, 0.24675324675324675, 1e-12);
  auto c = mann_whitney({12, 15, 9, 20, 17, 14, 11}, {8, 7, 10, 13, 6, 5, 4, 3});
  EXPECT_DOUBLE_EQ(c.u, 52);
  EXPECT_NEAR(c.p, 0.0037296037296037296, 1e-12);
  // Complete separation, 3 vs 3: p = 2 / C(6,3).
  EXPECT_NEAR(mann_whitney({1, 2, 3}, {4, 5, 6}).p, 0.1, 1e-12);
  // Symmetry: swapping the samples gives U' = mn - U and the same p.
  auto d = mann_whitney({2, 4, 6}, {1, 3, 5});
  EXPECT_DOUBLE_EQ(d.u, 6);
  EXPECT_NEAR(d.p, 0.7, 1e-12);
}

TEST(CompareStats, MannWhitneyNormalWithTies) {
  // By hand: U = 3.5, tie term sum(t^3 - t) = 6+24+6+6 ... computed with the
  // textbook formula (continuity corrected): z = -2.8206029683336107.
  auto a = mann_whitney({1, 2, 2, 3, 3, 3, 4}, {3, 4, 4, 5, 5, 6, 7, 7});
  EXPECT_FALSE(a.exact);
  EXPECT_DOUBLE_EQ(a.u, 3.5);
  EXPECT_NEAR(a.z, -2.8206029683336107, 1e-12);
  EXPECT_NEAR(a.p, 0.004793348746185464, 1e-12);
  auto b = mann_whitney({1, 1, 1}, {1, 1, 1, 2});
  EXPECT_DOUBLE_EQ(b.u, 4.5);
  EXPECT_NEAR(b.z, -0.5773502691896258, 1e-12);
  EXPECT_NEAR(b.p, 0.563702861650773, 1e-12);
  // Everything tied: no evidence at all.
  EXPECT_DOUBLE_EQ(mann_whitney({0, 0, 0}, {0, 0}).p, 1.0);
}

TEST(CompareStats, MannWhitneyLargeSamplesUseNormal) {
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) {
    x.push_back(i);
    y.push_back(i + 0.5);
  }
  auto r = mann_whitney(x, y);
  EXPECT_FALSE(r.exact);
  // U = sum_i #{j: i > j + 0.5} = 0 + 0 + 1 + ... + 29 = 435; mu = 450,
  // sigma^2 = 900 * 61 / 12 = 4575: z = (435 - 450 + 0.5) / sqrt(4575).
  EXPECT_DOUBLE_EQ(r.u, 435);
  EXPECT_NEAR(r.z, -14.5 / std::sqrt(4575.0), 1e-12);
  EXPECT_NEAR(r.p, std::erfc(14.5 / std::sqrt(4575.0) / std::sqrt(2.0)), 1e-12);
}

TEST(CompareStats, NormalTail) {
  EXPECT_NEAR(normal_sf(0), 0.5, 1e-15);
  EXPECT_NEAR(normal_sf(1.959963984540054), 0.025, 1e-12);
  EXPECT_NEAR(normal_sf(-1), 0.8413447460685429, 1e-12);
}

TEST(CompareStats, MannWhitneyExactNullIsCalibrated) {
  // Under H0 the exact two-sided test rejects at most 5% of the time.
  Rng r(2024);
  int reject = 0;
  const int reps = 2000;
  for (int k = 0; k < reps; ++k) {
    std::vector<double> x, y;
    for (int i = 0; i < 10; ++i) x.push_back(normal(r));
    for (int i = 0; i < 10; ++i) y.push_back(normal(r));
    if (mann_whitney(x, y).p < 0.05) ++reject;
  }
  EXPECT_LE(reject, reps * 6 / 100);
  EXPECT_GE(reject, reps * 2 / 100);
}

TEST(CompareStats, BootstrapIsSeededAndBracketsTheDifference) {
  const std::vector<double> x = {10, 11, 12, 13, 14, 15, 16};
  const std::vector<double> y = {0, 1, 2, 3, 4, 5, 6};
  BootstrapOptions o;
  o.seed = 5;
  const ConfInterval a = bootstrap_median_diff(x, y, o);
  const ConfInterval b = bootstrap_median_diff(x, y, o);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  // Every resampled median lies in [min, max] of its sample: diff in [4, 16].
  EXPECT_GE(a.lo, 4);
  EXPECT_LE(a.hi, 16);
  EXPECT_TRUE(a.contains(10));
  EXPECT_FALSE(a.contains(0));
  // Identical constant samples: the interval is exactly [0, 0].
  const ConfInterval c = bootstrap_median_diff({3, 3, 3}, {3, 3, 3, 3}, o);
  EXPECT_EQ(c.lo, 0);
  EXPECT_EQ(c.hi, 0);
}

TEST(CompareStats, OneSampleBootstrapOfTheMedian) {
  const std::vector<double> x = {0.97, 0.99, 1.00, 1.01, 1.02, 1.03, 1.05};
  BootstrapOptions o;
  o.seed = 3;
  const ConfInterval a = bootstrap_median(x, o);
  const ConfInterval b = bootstrap_median(x, o);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  // Resampled medians are order statistics of x: the interval lies in [min, max].
  EXPECT_GE(a.lo, 0.97);
  EXPECT_LE(a.hi, 1.05);
  EXPECT_TRUE(a.contains(1.01));
  const ConfInterval c = bootstrap_median({2, 2, 2, NAN}, o);
  EXPECT_EQ(c.lo, 2);
  EXPECT_EQ(c.hi, 2);
  EXPECT_TRUE(std::isnan(bootstrap_median({}, o).lo));
  // Coverage of the true median of N(1, 0.01^2), n = 30, over 300 seeds.
  int covered = 0;
  const int reps = 300;
  for (int k = 0; k < reps; ++k) {
    Rng r(500 + static_cast<std::uint64_t>(k));
    std::vector<double> v;
    for (int i = 0; i < 30; ++i) v.push_back(1 + 0.01 * normal(r));
    BootstrapOptions ok;
    ok.seed = static_cast<std::uint64_t>(k);
    if (bootstrap_median(v, ok).contains(1.0)) ++covered;
  }
  const double rate = covered / static_cast<double>(reps);
  EXPECT_GE(rate, 0.90) << "coverage " << rate;
  EXPECT_LE(rate, 0.99) << "coverage " << rate;
}

TEST(CompareStats, BootstrapCoverageOfAKnownShift) {
  // y ~ N(0,1), x ~ N(delta,1), n = 20: the true median difference is delta.
  // A 95% interval should contain it in roughly 95% of 400 replications.
  int covered = 0;
  const int reps = 400;
  const double delta = 0.8;
  for (int k = 0; k < reps; ++k) {
    Rng r(1000 + static_cast<std::uint64_t>(k));
    std::vector<double> x, y;
    for (int i = 0; i < 20; ++i) x.push_back(delta + normal(r));
    for (int i = 0; i < 20; ++i) y.push_back(normal(r));
    BootstrapOptions o;
    o.seed = static_cast<std::uint64_t>(k);
    if (bootstrap_median_diff(x, y, o).contains(delta)) ++covered;
  }
  const double rate = covered / static_cast<double>(reps);
  EXPECT_GE(rate, 0.90) << "coverage " << rate;
  EXPECT_LE(rate, 0.99) << "coverage " << rate;
  std::printf("bootstrap coverage %.3f over %d replications\n", rate, reps);
}

TEST(CompareStats, BootstrapDetectsALargeShift) {
  // 30 shootdowns x ~25 us against background noise: always detected.
  int detected = 0;
  for (int k = 0; k < 100; ++k) {
    Rng r(77 + static_cast<std::uint64_t>(k));
    const auto ctl = trial_like(r, 20, 100);
    auto arm = trial_like(r, 20, 100);
    for (auto& v : arm) v += 750;
    BootstrapOptions o;
    o.seed = static_cast<std::uint64_t>(k);
    if (bootstrap_median_diff(arm, ctl, o).lo > 0) ++detected;
  }
  EXPECT_EQ(detected, 100);
}

// A/A: two arms from the same distribution. The verdict must say "no
// detectable difference" in at least 95% of seeds (the issue's criterion for
// the real `compare --arms reuse,reuse`); nominally ~95% of intervals cover 0.
TEST(CompareStats, AAFalsePositiveRateOverManySeeds) {
  int no_difference = 0;
  const int seeds = 200;
  for (int k = 0; k < seeds; ++k) {
    Rng r(9000 + static_cast<std::uint64_t>(k));
    std::vector<TrialMetrics> trials;
    for (int i = 0; i < 20; ++i)
      for (int a = 0; a < 2; ++a) {
        TrialMetrics t;
        t.arm = a == 0 ? "reuse" : "reuse#2";
        t.arm_index = a;
        t.trial = i + 1;
        for (auto& v : t.v) v = trial_like(r, 1, 100)[0];
        t.set(Metric::kShootdowns, 0);
        trials.push_back(t);
      }
    CompareOptions o;
    o.bootstrap.seed = static_cast<std::uint64_t>(k);
    const auto arms = summarize_arms(trials, {"reuse", "reuse#2"}, o);
    ASSERT_EQ(arms.size(), 2u);
    if (arms[1].vs_control[0].direction == 0) {
      ++no_difference;
      EXPECT_NE(arms[1].verdict.find("no detectable difference from reuse"), std::string::npos) << arms[1].verdict;
    }
  }
  const double rate = no_difference / static_cast<double>(seeds);
  EXPECT_GE(rate, 0.95) << "A/A no-difference rate " << rate;
  std::printf("A/A no-difference rate %.3f over %d seeds\n", rate, seeds);
}

TEST(CompareArms, LabelsAndVerdict) {
  EXPECT_EQ(arm_labels({"reuse", "munmap", "reuse", "reuse"}),
            (std::vector<std::string>{"reuse", "munmap", "reuse#2", "reuse#3"}));
  std::vector<TrialMetrics> trials;
  for (int i = 0; i < 10; ++i) {
    TrialMetrics c, m;
    c.arm = "reuse";
    m.arm = "munmap";
    m.arm_index = 1;
    c.trial = m.trial = i + 1;
    for (auto& v : c.v) v = 0;
    for (auto& v : m.v) v = 0;
    c.set(Metric::kStallUs, 10 + i);   // median 14.5
    m.set(Metric::kStallUs, 220 + i);  // median 224.5: diff +210
    m.set(Metric::kShootdowns, 30);
    c.shootdown_source = m.shootdown_source = "trace";
    trials.push_back(c);
    trials.push_back(m);
  }
  const auto arms = summarize_arms(trials, {"reuse", "munmap"}, {});
  ASSERT_EQ(arms.size(), 2u);
  EXPECT_EQ(arms[0].verdict, "reuse: control");
  const auto& v = arms[1].vs_control[0];
  EXPECT_DOUBLE_EQ(v.diff, 210);
  EXPECT_GE(v.ci.lo, 205);  // resampled medians of 220..229 minus 10..19
  EXPECT_LE(v.ci.hi, 215);
  EXPECT_EQ(v.direction, 1);
  EXPECT_TRUE(v.mw.exact);
  EXPECT_NEAR(v.mw.p, 2.0 / 184756.0, 1e-15);  // complete separation: 2 / C(20,10)
  EXPECT_EQ(arms[1].verdict.rfind("munmap: +210 µs stall per release [CI ", 0), 0u) << arms[1].verdict;
  EXPECT_NE(arms[1].verdict.find("30 shootdowns/release vs 0 — worse than reuse"), std::string::npos)
      << arms[1].verdict;
  EXPECT_EQ(arms[1].shootdown_source, "trace");
}

TEST(CompareGate, ParseErrors) {
  const std::vector<std::string> arms = {"reuse", "munmap", "madvise-dontneed"};
  EXPECT_NO_THROW(parse_gate("munmap.stall_us > reuse.stall_us", arms));
  EXPECT_NO_THROW(parse_gate("madvise-dontneed.p99_us>=12.5", arms));
  EXPECT_THROW(parse_gate("munmap.stall_us reuse.stall_us", arms), UsageError);
  EXPECT_THROW(parse_gate("free.stall_us > reuse.stall_us", arms), UsageError);
  EXPECT_THROW(parse_gate("munmap.speed > reuse.stall_us", arms), UsageError);
  EXPECT_THROW(parse_gate("munmap.stall_us > 1 > 2", arms), UsageError);
  EXPECT_THROW(parse_gate("munmap > 3", arms), UsageError);
  EXPECT_THROW(parse_gate("munmap.stall_us > munmap.stall_us", arms), UsageError);
  try {
    parse_gate("free.stall_us > reuse.stall_us", arms);
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown arm 'free' (arms: reuse, munmap, madvise-dontneed)"),
              std::string::npos);
  }
  const GateExpr g = parse_gate(" munmap.shootdowns <= 4 ", arms);
  EXPECT_EQ(g.lhs_arm, "munmap");
  EXPECT_EQ(g.lhs_metric, Metric::kShootdowns);
  EXPECT_EQ(g.op, "<=");
  EXPECT_TRUE(g.rhs_is_number);
  EXPECT_DOUBLE_EQ(g.rhs_number, 4);
}

TEST(CompareGate, Evaluate) {
  Rng r(3);
  const std::vector<std::string> arms = {"reuse", "munmap", "reuse#2"};
  const auto trials = trials_of(arms, 12, [&](int k, int) { return (k == 1 ? 500 : 100) + 10 * normal(r); });
  const BootstrapOptions o;
  EXPECT_TRUE(evaluate_gate(parse_gate("munmap.stall_us > reuse.stall_us", arms), trials, o).failed);
  EXPECT_FALSE(evaluate_gate(parse_gate("munmap.stall_us < reuse.stall_us", arms), trials, o).failed);
  EXPECT_FALSE(evaluate_gate(parse_gate("reuse#2.stall_us > reuse.stall_us", arms), trials, o).failed);
  EXPECT_TRUE(evaluate_gate(parse_gate("munmap.stall_us > 400", arms), trials, o).failed);
  EXPECT_FALSE(evaluate_gate(parse_gate("munmap.stall_us > 600", arms), trials, o).failed);
  const auto g = evaluate_gate(parse_gate("munmap.stall_us > reuse.stall_us", arms), trials, o);
  EXPECT_NE(g.detail.find("munmap.stall_us - reuse.stall_us = +"), std::string::npos) << g.detail;

  const auto sum = summarize_arms(trials, arms, {});
  const auto mr = evaluate_max_regression(10, sum);
  ASSERT_EQ(mr.size(), 2u);
  EXPECT_TRUE(mr[0].failed);                                   // munmap: +400 us against an allowance of ~10
  EXPECT_FALSE(mr[1].failed);                                  // reuse#2
  EXPECT_FALSE(evaluate_max_regression(1000, sum)[0].failed);  // allowance ~1000 us
}

// CI, stop 24: at 5 trials per arm with one slow control trial, the gate's own
// bootstrap said "detectably > 0" while the verdict's said "no detectable
// difference". Given the summary, the gate reads the verdict's interval.
TEST(CompareGate, AgreesWithTheVerdictOnBorderlineData) {
  // The shape of that run: one munmap trial and one reuse trial far off.
  const std::vector<std::string> arms = {"reuse", "munmap"};
  const double reuse[] = {900, 1054, 1237, 4976, 5500}, munmap[] = {3385, 34700, 39800, 41400, 45000};
  const auto trials = trials_of(arms, 5, [&](int k, int i) { return k ? munmap[i] : reuse[i]; });
  int failed = 0;
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    CompareOptions co;
    co.bootstrap.seed = seed;
    const auto sum = summarize_arms(trials, arms, co);
    const MetricComparison& c = sum[1].vs_control[static_cast<std::size_t>(Metric::kStallUs)];
    ASSERT_TRUE(c.available);
    const auto g = evaluate_gate(parse_gate("munmap.stall_us > reuse.stall_us", arms), trials, co.bootstrap, &sum);
    EXPECT_EQ(g.failed, c.ci.lo > 0) << "seed " << seed << ": " << g.detail;
    EXPECT_EQ(g.failed, sum[1].decision > 0) << "seed " << seed;
    // Control on the left: the same interval, negated.
    const auto h = evaluate_gate(parse_gate("reuse.stall_us < munmap.stall_us", arms), trials, co.bootstrap, &sum);
    EXPECT_EQ(h.failed, g.failed) << "seed " << seed << ": " << h.detail;
    failed += g.failed;
  }
  // The data are borderline: some bootstrap seeds call it, some do not, so
  // agreement is tested both ways.
  EXPECT_GT(failed, 0);
  EXPECT_LT(failed, 100);
}

// A/A, 2026-12-06, mimalloc seed 38: the naive CI after the sequential
// looks was [0.8, 37] (excludes 0) while the sequential verdict was "no
// detectable difference"; a gate must follow the verdict.
TEST(CompareGate, FollowsTheSequentialDecisionOnStall) {
  const std::vector<std::string> arms = {"mimalloc", "mimalloc#2"};
  const auto trials = trials_of(arms, 10, [](int k, int i) { return (k ? 120.0 : 100.0) + i; });
  std::vector<ArmSummary> sum = summarize_arms(trials, arms, {});
  ASSERT_EQ(sum.size(), 2u);
  auto& c = sum[1].vs_control[static_cast<std::size_t>(Metric::kStallUs)];
  ASSERT_TRUE(c.available);
  ASSERT_GT(c.ci.lo, 0);  // the interval alone would fail the gate
  const auto gate = parse_gate("mimalloc#2.stall_us > mimalloc.stall_us", arms);
  EXPECT_TRUE(evaluate_gate(gate, trials, {}, &sum).failed);
  sum[1].sequential = true;
  sum[1].decision = 0;
  const auto r = evaluate_gate(gate, trials, {}, &sum);
  EXPECT_FALSE(r.failed) << r.detail;
  EXPECT_NE(r.detail.find("(sequential verdict)"), std::string::npos) << r.detail;
  sum[1].decision = 1;
  EXPECT_TRUE(evaluate_gate(gate, trials, {}, &sum).failed);
  // Control on the left, and another metric keeps its interval.
  EXPECT_TRUE(evaluate_gate(parse_gate("mimalloc.stall_us < mimalloc#2.stall_us", arms), trials, {}, &sum).failed);
  sum[1].decision = 0;
  EXPECT_FALSE(evaluate_gate(parse_gate("mimalloc.stall_us < mimalloc#2.stall_us", arms), trials, {}, &sum).failed);
}

TEST(CompareTrial, MetricsFromASyntheticResult) {
  Result r;
  r.plan.settle_ns = 0;
  Release rel;
  rel.before_ns = 1000;
  rel.after_ns = 2000;
  r.releases.push_back(rel);
  VictimSamples v;
  v.cpu = 1;
  v.start_ns = 0;
  // Spans of 100 ns in the baseline (median 100), then in the release
  // window one 5100 ns stall and one 600 ns sample, then after.
  std::int64_t t = 0;
  auto add = [&](std::int64_t lat) {
    t += lat;
    v.end_ns.push_back(t);
    v.lat_ns.push_back(lat);
  };
  for (int i = 0; i < 9; ++i) add(100);  // ends at 900: baseline
  add(600);                              // ends 1500: release
  add(400);                              // ends 1900: release
  add(5100);                             // ends 7000: after (past 2000)
  r.victims.push_back(v);
  CpuCounters c;
  c.cpu = 1;
  c.role = CpuRole::kVictim;
  c.tlb = 7;
  r.counters.push_back(c);

  TrialMetrics m = trial_metrics(r, nullptr);
  EXPECT_EQ(m.shootdown_source, "interrupts");
  EXPECT_DOUBLE_EQ(m.get(Metric::kShootdowns), 7);
  EXPECT_DOUBLE_EQ(m.get(Metric::kStallUs), (500 + 300) / 1e3);
  EXPECT_DOUBLE_EQ(m.get(Metric::kMaxUs), 0.6);
  EXPECT_DOUBLE_EQ(m.get(Metric::kP99Us), 0.6);
  EXPECT_DOUBLE_EQ(m.get(Metric::kReleaseUs), 1.0);
  EXPECT_TRUE(std::isnan(m.get(Metric::kUnexplainedUs)));
  EXPECT_TRUE(std::isnan(m.get(Metric::kIpiStallUs)));

  // With a trace: reason-1 flushes of this process (pid 42) in the window.
  r.trace.enabled = true;
  auto flush = [&](std::int64_t ns, int pid, int cpu, int reason) {
    KernelEvent e;
    e.mono_ns = ns;
    e.cpu = cpu;
    e.pid = pid;
    e.type = EventType::kTlbFlush;
    e.a = reason;
    r.trace.events.push_back(e);
  };
  flush(1200, 42, 1, 1);
  flush(1300, 42, 1, 1);
  flush(1400, 99, 1, 1);  // another process
  flush(1450, 42, 0, 1);  // not the victim CPU
  flush(1500, 42, 1, 4);  // initiator side
  flush(3000, 42, 1, 1);  // outside the window
  Attribution at;
  at.available = true;
  VictimAttribution va;
  va.cpu = 1;
  // Sample 9 (600 ns) is a shootdown, sample 10 (400 ns) unexplained.
  constexpr auto kS = static_cast<std::uint8_t>(StallLabel::kTlbShootdown);
  constexpr auto kU = static_cast<std::uint8_t>(StallLabel::kUnexplained);
  va.labels = {0, 0, 0, 0, 0, 0, 0, 0, 0, kS, kU, 0};
  ASSERT_EQ(va.labels.size(), v.size());
  at.victims.push_back(va);
  m = trial_metrics(r, &at, TrialOptions{42});
  EXPECT_EQ(m.shootdown_source, "trace");
  EXPECT_DOUBLE_EQ(m.get(Metric::kShootdowns), 2);
  EXPECT_DOUBLE_EQ(m.get(Metric::kUnexplainedUs), 0.3);
  EXPECT_DOUBLE_EQ(m.get(Metric::kIpiStallUs), 0.5);
  m = trial_metrics(r, &at, TrialOptions{0});
  EXPECT_DOUBLE_EQ(m.get(Metric::kShootdowns), 3);
}
