// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/stats.hpp"

using namespace shootdown;

TEST(Stats, ExactNearestRank) {
  std::vector<std::int64_t> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  const Summary s = summarize_exact(v);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 100);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_EQ(s.p99, 99);
  EXPECT_EQ(s.p999, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
}

TEST(Stats, HistogramSummaryAndScale) {
  auto h = make_latency_histogram();
  for (int i = 0; i < 99; ++i) h.record(1000);
  h.record(50000);
  const Summary s = summarize(h);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.p50, h.highest_equivalent(1000));
  EXPECT_EQ(s.max, h.highest_equivalent(50000));
  const Summary p = s.scaled(16);
  EXPECT_DOUBLE_EQ(p.p50, s.p50 / 16);
  EXPECT_EQ(p.count, 100);
}

TEST(Stats, Empty) {
  EXPECT_EQ(summarize_exact({}).count, 0);
  EXPECT_EQ(summarize(make_latency_histogram()).max, 0);
}

namespace shootdown {
namespace {
// The one quantile rule (nearest rank): an observed value, the lower middle
// one for the median of an even count, the same sorted or selected.
TEST(NearestRank, OneRuleSortedOrSelected) {
  const std::vector<std::int64_t> v = {10, 20, 30, 40};
  EXPECT_EQ(nearest_rank_sorted(v, 0), 10);
  EXPECT_EQ(nearest_rank_sorted(v, 25), 10);
  EXPECT_EQ(nearest_rank_sorted(v, 26), 20);
  EXPECT_EQ(nearest_rank_sorted(v, 50), 20);  // lower middle
  EXPECT_EQ(nearest_rank_sorted(v, 75), 30);
  EXPECT_EQ(nearest_rank_sorted(v, 99), 40);
  EXPECT_EQ(nearest_rank_sorted(v, 100), 40);
  EXPECT_EQ(nearest_rank_sorted(std::vector<std::int64_t>{}, 50), 0);
  for (double p : {0.0, 1.0, 33.3, 50.0, 90.0, 99.9, 100.0}) {
    std::vector<std::int64_t> shuffled = {40, 10, 30, 20};
    EXPECT_EQ(nearest_rank_select(shuffled, p), nearest_rank_sorted(v, p)) << p;
    EXPECT_EQ(percentile_sorted(v, p), static_cast<double>(nearest_rank_sorted(v, p))) << p;
  }
  std::vector<std::int64_t> odd = {5, 1, 3};
  EXPECT_EQ(nearest_rank_select(odd, 50), 3);
}
}  // namespace
}  // namespace shootdown
