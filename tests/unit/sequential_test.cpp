// SPDX-License-Identifier: Apache-2.0
// Group-sequential stopping (core/sequential): boundaries against published
// tables and values worked by hand, the rank-sum z by hand, and the error rate
// under optional stopping by simulation (deterministic seeds).
//
// Hand checks of the first look (no integration involved): c_1 =
// z_{1 - alpha(t_1)/2}.
//   Pocock-type, t_1 = 1/4: alpha(t) = 0.05 ln(1 + (e-1)/4) = 0.05 ln 1.429570 (= 0.05 x 0.357374)
//     = 0.0178687; c_1 = z_{0.9910656} = 2.3683.
//   Pocock-type, t_1 = 1/5: 0.05 ln 1.343656 = 0.0147698; c_1 = 2.4380.
//   OBF-type, t_1 = 1/5: 4 - 4 Phi(z_{0.9875} / sqrt(0.2)) = 4 - 4 Phi(2.241403
//     * 2.236068) = 4 Q(5.011942) = 1.0785e-6; c_1 = z_{1 - 5.39e-7} = 4.8769.
// Later looks against the published Lan–DeMets tables (two-sided alpha 0.05,
// equally spaced; Jennison & Turnbull 2000 ch. 7, gsDesign/ldbounds output):
//   Pocock-type K = 5: 2.4380 2.4268 2.4101 2.3966 2.3859
//   OBF-type K = 5:    4.8769 3.3569 2.6803 2.2898 2.0310
//   OBF-type K = 2:    2.9626 1.9686
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "core/compare.hpp"
#include "core/sequential.hpp"

using namespace shootdown::sequential;

namespace {

std::vector<double> equal_fractions(int k) {
  std::vector<double> t;
  for (int i = 1; i <= k; ++i) t.push_back(static_cast<double>(i) / k);
  return t;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "look " << i + 1;
}

// Runs the procedure over n values per arm; returns the look that stopped (0 = none).
int run_pair(const Design& d, const std::vector<double>& a, const std::vector<double>& b, PairState* st) {
  for (std::size_t k = 0; k < d.looks.size(); ++k)
    if (evaluate_look(d, k, a, b, st).stop) return st->stop_look;
  return 0;
}

}  // namespace

TEST(Sequential, NormalQuantileAndCdf) {
  EXPECT_NEAR(normal_quantile(0.975), 1.959964, 1e-6);
  EXPECT_NEAR(normal_quantile(0.025), -1.959964, 1e-6);
  EXPECT_NEAR(normal_cdf(1.959964), 0.975, 1e-7);
  EXPECT_NEAR(normal_quantile(1 - 0.0178687 / 2), 2.3683, 1e-4);
}

TEST(Sequential, SpendingFunctions) {
  EXPECT_DOUBLE_EQ(alpha_spent(Spending::kPocock, 0.05, 0), 0);
  EXPECT_NEAR(alpha_spent(Spending::kPocock, 0.05, 1), 0.05, 1e-15);
  EXPECT_NEAR(alpha_spent(Spending::kPocock, 0.05, 0.25), 0.0178687, 1e-7);
  EXPECT_NEAR(alpha_spent(Spending::kPocock, 0.05, 0.2), 0.0147698, 1e-7);
  EXPECT_NEAR(alpha_spent(Spending::kOBrienFleming, 0.05, 1), 0.05, 1e-12);
  EXPECT_NEAR(alpha_spent(Spending::kOBrienFleming, 0.05, 0.2), 1.0785e-6, 2e-9);
  // Monotone, and OBF spends less early than Pocock.
  double prev = 0;
  for (int i = 1; i <= 20; ++i) {
    const double t = i / 20.0;
    const double p = alpha_spent(Spending::kPocock, 0.05, t);
    EXPECT_GT(p, prev);
    prev = p;
    if (i < 20) {
      EXPECT_LT(alpha_spent(Spending::kOBrienFleming, 0.05, t), p);
    }
  }
  EXPECT_EQ(parse_spending("pocock"), Spending::kPocock);
  EXPECT_EQ(parse_spending("obf"), Spending::kOBrienFleming);
  EXPECT_FALSE(parse_spending("Pocock"));
}

TEST(Sequential, LookSchedule) {
  EXPECT_EQ(look_schedule(5, 20), (std::vector<int>{5, 10, 15, 20}));
  EXPECT_EQ(look_schedule(5, 22), (std::vector<int>{5, 10, 15, 20, 22}));
  EXPECT_EQ(look_schedule(5, 3), (std::vector<int>{3}));
  EXPECT_EQ(look_schedule(5, 5), (std::vector<int>{5}));
  EXPECT_EQ(look_schedule(1, 3), (std::vector<int>{1, 2, 3}));
}

TEST(Sequential, BoundariesMatchPublishedTables) {
  expect_near_all(boundaries(Spending::kPocock, 0.05, equal_fractions(5)), {2.4380, 2.4268, 2.4101, 2.3966, 2.3859},
                  2e-4);
  expect_near_all(boundaries(Spending::kOBrienFleming, 0.05, equal_fractions(5)),
                  {4.8769, 3.3569, 2.6803, 2.2898, 2.0310}, 2e-4);
  expect_near_all(boundaries(Spending::kOBrienFleming, 0.05, equal_fractions(2)), {2.9626, 1.9686}, 2e-4);
  // One look spends everything: the fixed-sample test.
  expect_near_all(boundaries(Spending::kPocock, 0.05, {1.0}), {1.959964}, 1e-6);
  // compare's default design: 20 trials per arm, a look every 5.
  const Design d = make_design(Spending::kPocock, 0.05, 5, 20);
  EXPECT_EQ(d.looks, (std::vector<int>{5, 10, 15, 20}));
  EXPECT_NEAR(d.boundaries[0], 2.3683, 1e-4);
  EXPECT_NEAR(d.spent[0], 0.0178687, 1e-7);
  EXPECT_NEAR(d.spent[3], 0.05, 1e-15);
  // Pocock-type boundaries decrease slowly; all above the fixed 1.96.
  for (std::size_t k = 1; k < d.boundaries.size(); ++k) {
    EXPECT_LT(d.boundaries[k], d.boundaries[k - 1]);
    EXPECT_GT(d.boundaries[k], 1.96);
  }
}

TEST(Sequential, RankSumZByHand) {
  // No ties, <= 20 a side: the exact permutation p, as a z with the same p.
  // Complete separation, 5 vs 5: U = 0, P = 1 / C(10, 5) = 1/252 a side, two-
  // sided p = 2/252 = 0.0079365, z = z_{1 - 1/252} = 2.65476 (the normal
  // approximation with continuity correction would give (12.5 - 0.5) /
  // sqrt(22.9167) = 2.50672: conservative).
  EXPECT_NEAR(rank_sum_z({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), -2.65476, 1e-5);
  EXPECT_NEAR(rank_sum_z({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 2.65476, 1e-5);
  // 4 vs 4 complete separation: p = 2/70 = 0.0285714, z = 2.18935 < 2.3683:
  // a look after 4 trials per arm could never stop (why look_every defaults to 5).
  EXPECT_NEAR(rank_sum_z({5, 6, 7, 8}, {1, 2, 3, 4}), 2.18935, 1e-5);
  // Ties: x = {1, 1, 2}, y = {1, 3}: midranks 1,1,1 -> 2; U_x = (2+2+4) - 6 = 2
  // = mean 3 - 1; tie term 3^3 - 3 = 24; var = 6/12 * (6 - 24/20) = 2.4;
  // z = (-1 + 0.5) / sqrt(2.4) = -0.322749.
  EXPECT_NEAR(rank_sum_z({1, 1, 2}, {1, 3}), -0.322749, 1e-6);
  // Everything tied (reuse: 0 shootdowns in every trial): no information.
  EXPECT_EQ(rank_sum_z({0, 0, 0}, {0, 0, 0}), 0);
  EXPECT_EQ(rank_sum_z({}, {1, 2}), 0);
}

TEST(Sequential, DecisionAtLooks) {
  const Design d = make_design(Spending::kPocock, 0.05, 5, 20);
  // A clear difference stops at look 1 (5 per arm) with the sign of the arm.
  std::vector<double> arm, ctl;
  for (int i = 0; i < 20; ++i) arm.push_back(100 + i), ctl.push_back(i);
  PairState st;
  EXPECT_EQ(run_pair(d, arm, ctl, &st), 1);
  EXPECT_TRUE(st.stopped);
  EXPECT_EQ(st.direction, 1);
  EXPECT_EQ(st.history.size(), 1u);
  EXPECT_EQ(st.last()->n, 5);
  EXPECT_NEAR(st.last()->alpha_spent, 0.0178687, 1e-7);
  EXPECT_FALSE(st.active(d));
  // One inversion at look 1 (U = 24 of 25): P(U >= 24) = 2/252, two-sided
  // p = 4/252 = 0.015873 <= 0.0178687, z = 2.41182 >= 2.3683: stops.
  PairState st1;
  const Look& l1 = evaluate_look(d, 0, {2, 3, 4, 5, 6}, {0.5, 1.0, 1.2, 1.5, 2.5}, &st1);
  EXPECT_NEAR(l1.z, 2.41182, 1e-5);
  EXPECT_TRUE(l1.stop);
  // Two inversions (U = 23): P(U >= 23) = 4/252, p = 8/252 = 0.031746, z =
  // 2.14759 < 2.3683: go on.
  PairState st2;
  const Look& l = evaluate_look(d, 0, {2, 3, 4, 5, 6}, {0.5, 1.0, 1.2, 2.5, 2.7}, &st2);
  EXPECT_NEAR(l.z, 2.14759, 1e-5);
  EXPECT_FALSE(l.stop);
  EXPECT_TRUE(st2.active(d));
  // Identical arms never stop; after the last look all of alpha is spent.
  PairState st3;
  std::vector<double> same(20, 1.0);
  EXPECT_EQ(run_pair(d, same, same, &st3), 0);
  EXPECT_EQ(st3.history.size(), 4u);
  EXPECT_NEAR(st3.last()->alpha_spent, 0.05, 1e-15);
  EXPECT_FALSE(st3.active(d));
  EXPECT_EQ(look_index_at(d, 10), 1);
  EXPECT_EQ(look_index_at(d, 11), -1);
}

// The error rate under optional stopping: i.i.d. arms (A/A), the procedure as
// compare runs it, 4000 replications per design. The normal approximation of
// the rank statistic with its continuity correction is conservative at these
// sizes (measured 3-5 %); the bound allows 3 standard errors (0.0034 each)
// of Monte Carlo noise above 5 %.
TEST(Sequential, AaErrorRateHoldsUnderOptionalStopping) {
  shootdown::compare::Rng rng(20261203);
  const auto draw = [&](bool ties) {
    if (ties) return std::floor(4 * rng.uniform()) * std::floor(2 * rng.uniform());  // many ties, like counts
    const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
    return std::exp(1.5 * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));  // log-normal, heavy tail
  };
  for (Spending s : {Spending::kPocock, Spending::kOBrienFleming})
    for (int every : {1, 5})
      for (bool ties : {false, true}) {
        const Design d = make_design(s, 0.05, every, 20);
        const int reps = 4000;
        int false_verdicts = 0;
        for (int r = 0; r < reps; ++r) {
          std::vector<double> a, b;
          for (int i = 0; i < 20; ++i) a.push_back(draw(ties)), b.push_back(draw(ties));
          PairState st;
          if (run_pair(d, a, b, &st) != 0) ++false_verdicts;
        }
        const double rate = static_cast<double>(false_verdicts) / reps;
        std::printf("A/A %s every %d %s: %.4f false verdicts\n", spending_name(s), every, ties ? "ties" : "continuous",
                    rate);
        EXPECT_LE(rate, 0.05 + 3 * 0.0034) << spending_name(s) << " every " << every << (ties ? " ties" : "");
        EXPECT_GE(rate, 0.005) << "absurdly conservative: " << spending_name(s) << " every " << every;
      }
}

// Looking after every trial without correcting (naive repeated 1.96) is what
// the spending function prevents: the same simulation shows the inflation.
TEST(Sequential, NaiveRepeatedLooksInflateTheErrorRate) {
  shootdown::compare::Rng rng(7);
  Design naive = make_design(Spending::kPocock, 0.05, 1, 20);
  for (auto& c : naive.boundaries) c = 1.959964;
  int false_verdicts = 0;
  const int reps = 2000;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> a, b;
    for (int i = 0; i < 20; ++i) a.push_back(rng.uniform()), b.push_back(rng.uniform());
    PairState st;
    if (run_pair(naive, a, b, &st) != 0) ++false_verdicts;
  }
  EXPECT_GT(static_cast<double>(false_verdicts) / reps, 0.10);
}

// compare's summary with sequential pairs: a stopped arm is compared with the
// control's first n trials and its verdict is the sequential decision; an
// undecided arm says "no detectable difference" even where the naive
// bootstrap interval excludes 0.
TEST(Sequential, SummaryUsesTheDecision) {
  using namespace shootdown::compare;
  std::vector<TrialMetrics> trials;
  const auto add = [&](const std::string& arm, int idx, int trial, double stall) {
    TrialMetrics t;
    t.arm = arm;
    t.arm_index = idx;
    t.trial = trial;
    t.set(Metric::kStallUs, stall);
    trials.push_back(t);
  };
  for (int i = 1; i <= 10; ++i) add("ctl", 0, i, i);       // control ran 10 (for arm b)
  for (int i = 1; i <= 5; ++i) add("a", 1, i, 100 + i);    // a stopped after 5
  for (int i = 1; i <= 10; ++i) add("b", 2, i, 1000 + i);  // b clearly higher, but undecided here
  const Design d = make_design(Spending::kPocock, 0.05, 5, 20);
  std::vector<PairState> pairs(3);
  std::vector<double> a, b, c;
  for (int i = 1; i <= 5; ++i) a.push_back(100 + i);
  for (int i = 1; i <= 10; ++i) c.push_back(i);
  ASSERT_TRUE(evaluate_look(d, 0, a, c, &pairs[1]).stop);
  pairs[2].history.push_back(Look{1, 5, 0.5, d.boundaries[0], d.spent[0], false});  // synthetic: not crossed
  CompareOptions o;
  o.design = &d;
  o.pairs = &pairs;
  const auto s = summarize_arms(trials, {"ctl", "a", "b"}, o);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].control_trials, 5u);
  EXPECT_EQ(s[1].decision, 1);
  EXPECT_NE(s[1].verdict.find("worse than ctl"), std::string::npos) << s[1].verdict;
  EXPECT_EQ(s[2].control_trials, 10u);  // not stopped: every control trial
  EXPECT_EQ(s[2].decision, 0);
  EXPECT_EQ(s[2].vs_control[0].direction, 1);  // the naive CI alone would have said "worse"
  EXPECT_NE(s[2].verdict.find("no detectable difference from ctl"), std::string::npos) << s[2].verdict;
  EXPECT_NE(sequential_line(s[1], d).find("a stopped at look 1 of 4 (5 of 20 trials per arm)"), std::string::npos);
  // Without a design: the fixed rule (the CI) decides.
  const auto f = summarize_arms(trials, {"ctl", "a", "b"}, CompareOptions{});
  EXPECT_EQ(f[2].decision, 1);
  EXPECT_EQ(f[1].control_trials, 10u);
}
