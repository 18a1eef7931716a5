// SPDX-License-Identifier: Apache-2.0
// Histogram layout and semantics against numbers derived by hand from the
// HdrHistogram specification (not computed by our code):
//   sub_bucket_count = 2^ceil(log2(2 * 10^sig)), unit = 2^floor(log2(lowest)),
//   bucket b covers [sub_bucket_count/2 * 2^b, sub_bucket_count * 2^b) * unit
//   (bucket 0 also [0, sub_bucket_count/2)), resolution 2^b * unit;
//   bucket_count = smallest b with sub_bucket_count * 2^(b-1) * unit > highest;
//   counts length = (bucket_count + 1) * sub_bucket_count / 2;
//   percentile p: the ceil(p * N / 100)-th smallest value (at least the 1st),
//   reported as the highest value equivalent to it (lowest for p == 0).
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/hdr/histogram.hpp"

namespace shootdown::hdr {
namespace {

constexpr std::int64_t kHour = 3600LL * 1000 * 1000 * 1000;  // ns

TEST(HdrHistogramLayout, ThreeFiguresOneNanosecondToOneHour) {
  const Histogram h(1, kHour, 3);
  // 2 * 10^3 = 2000 -> 2^11 = 2048 sub-buckets.
  EXPECT_EQ(h.sub_bucket_count(), 2048);
  EXPECT_EQ(h.unit_magnitude(), 0);
  // 2048 * 2^(b-1) > 3.6e12 first at b - 1 = 31 (2^31 = 2147483648 > 1757812500).
  EXPECT_EQ(h.bucket_count(), 32);
  EXPECT_EQ(h.counts_length(), 33 * 1024);
  EXPECT_EQ(Histogram::counts_length_for(1, kHour, 3), 33 * 1024);
}

TEST(HdrHistogramLayout, LowestDiscernibleRoundsDownToPowerOfTwo) {
  const Histogram h(1000, 10LL * 1000 * 1000 * 1000, 2);
  EXPECT_EQ(h.unit_magnitude(), 9);      // 512 <= 1000 < 1024
  EXPECT_EQ(h.sub_bucket_count(), 256);  // 2 * 10^2 = 200 -> 256
  // 256 * 512 * 2^(b-1) > 1e10 -> 2^(b-1) > 76293.9 -> b - 1 = 17.
  EXPECT_EQ(h.bucket_count(), 18);
  EXPECT_EQ(h.counts_length(), 19 * 128);
}

TEST(HdrHistogramLayout, ZeroAndFiveFigures) {
  const Histogram tiny(1, 2, 0);  // 2 * 10^0 = 2 -> 2 sub-buckets
  EXPECT_EQ(tiny.sub_bucket_count(), 2);
  EXPECT_EQ(tiny.bucket_count(), 2);  // 2 <= 2, 4 > 2
  EXPECT_EQ(tiny.counts_length(), 3);
  const Histogram fine(1, 1000LL * 1000 * 1000, 5);  // 200000 -> 2^18
  EXPECT_EQ(fine.sub_bucket_count(), 262144);
  // 262144 * 2^(b-1) > 1e9 -> 2^(b-1) > 3814.7 -> b - 1 = 12.
  EXPECT_EQ(fine.bucket_count(), 13);
}

TEST(HdrHistogramLayout, RejectsImpossibleConfigurations) {
  EXPECT_THROW(Histogram(0, 100, 3), std::invalid_argument);
  EXPECT_THROW(Histogram(10, 19, 3), std::invalid_argument);
  EXPECT_THROW(Histogram(1, 100, 6), std::invalid_argument);
  EXPECT_THROW(Histogram(1, 100, -1), std::invalid_argument);
  EXPECT_EQ(Histogram::counts_length_for(10, 19, 3), 0);
  EXPECT_EQ(Histogram::counts_length_for(1, 100, 6), 0);
}

TEST(HdrHistogramEquivalence, BucketEdges) {
  const Histogram h(1, kHour, 3);
  // Bucket 0: exact up to 2047.
  EXPECT_EQ(h.lowest_equivalent(2047), 2047);
  EXPECT_EQ(h.highest_equivalent(2047), 2047);
  EXPECT_EQ(h.size_of_equivalent_range(2047), 1);
  // Bucket 1 [2048, 4096): pairs.
  EXPECT_EQ(h.lowest_equivalent(2049), 2048);
  EXPECT_EQ(h.highest_equivalent(2048), 2049);
  EXPECT_EQ(h.size_of_equivalent_range(4095), 2);
  EXPECT_EQ(h.lowest_equivalent(4095), 4094);
  // Bucket 2 starts at 4096 with resolution 4.
  EXPECT_EQ(h.size_of_equivalent_range(4096), 4);
  EXPECT_EQ(h.highest_equivalent(4096), 4099);
  // 10007 is in [8192, 16384): resolution 8, range [10000, 10007].
  EXPECT_EQ(h.lowest_equivalent(10007), 10000);
  EXPECT_EQ(h.highest_equivalent(10001), 10007);
  EXPECT_EQ(h.median_equivalent(10001), 10004);
  EXPECT_EQ(h.next_non_equivalent(10001), 10008);
  EXPECT_TRUE(h.values_are_equivalent(10000, 10007));
  EXPECT_FALSE(h.values_are_equivalent(10007, 10008));
  // Counts index: value v < 2048 sits at index v; 2048 at index 2048 too
  // (bucket 1's upper half continues the array), 4096 at 2048 + 1024.
  EXPECT_EQ(h.counts_index_for(2047), 2047);
  EXPECT_EQ(h.counts_index_for(2048), 2048);
  EXPECT_EQ(h.counts_index_for(2049), 2048);
  EXPECT_EQ(h.counts_index_for(4096), 3072);
  EXPECT_EQ(h.value_from_index(3072), 4096);
}

TEST(HdrHistogramEquivalence, LowestDiscernibleUnit) {
  const Histogram h(1000, 10LL * 1000 * 1000 * 1000, 2);
  // Unit 512: everything below 512 is one bucket [0, 511].
  EXPECT_EQ(h.lowest_equivalent(511), 0);
  EXPECT_EQ(h.highest_equivalent(0), 511);
  EXPECT_EQ(h.lowest_equivalent(1000), 512);
  EXPECT_EQ(h.highest_equivalent(1000), 1023);
  // Top of bucket 0: 255 * 512 = 130560 .. 131071; bucket 1 resolution 1024.
  EXPECT_EQ(h.highest_equivalent(130560), 131071);
  EXPECT_EQ(h.size_of_equivalent_range(131072), 1024);
}

TEST(HdrHistogramLargest, HighestTrackableAndClamping) {
  Histogram h(1, kHour, 3);
  // 3.6e12 lies in bucket 31 (resolution 2^31): sub-bucket 1676 covers
  // [1676 * 2^31, 1677 * 2^31 - 1] = [3599182594048, 3601330077695].
  EXPECT_EQ(h.lowest_equivalent(kHour), 3599182594048LL);
  EXPECT_EQ(h.highest_equivalent(kHour), 3601330077695LL);
  // The last counts slot is sub-bucket 2047 of bucket 31.
  EXPECT_EQ(h.value_from_index(h.counts_length() - 1), 2047LL << 31);
  h.record(kHour);
  h.record(kHour * 10);  // clamped to highest trackable, counted as saturated
  h.record(-5);          // clamped to 0
  EXPECT_EQ(h.total_count(), 3);
  EXPECT_EQ(h.saturated_count(), 1);
  EXPECT_EQ(h.count_at_value(kHour), 2);
  EXPECT_EQ(h.count_at_value(0), 1);
  EXPECT_EQ(h.max(), 3601330077695LL);
  EXPECT_EQ(h.min(), 0);
}

TEST(HdrHistogramPercentile, RuleOnExactValues) {
  Histogram h(1, kHour, 3);
  for (int v = 1; v <= 1000; ++v) h.record(v);  // all exact (< 2048)
  EXPECT_EQ(h.value_at_percentile(0.0), 1);
  EXPECT_EQ(h.value_at_percentile(0.05), 1);       // ceil(0.5) = 1
  EXPECT_EQ(h.value_at_percentile(0.1), 1);        // exactly 1
  EXPECT_EQ(h.value_at_percentile(0.15), 2);       // ceil(1.5) = 2
  EXPECT_EQ(h.value_at_percentile(33.3333), 334);  // ceil(333.333)
  EXPECT_EQ(h.value_at_percentile(50.0), 500);
  EXPECT_EQ(h.value_at_percentile(90.0), 900);
  EXPECT_EQ(h.value_at_percentile(99.0), 990);
  EXPECT_EQ(h.value_at_percentile(99.9), 999);    // not 1000: 99.9 is stored a hair above
  EXPECT_EQ(h.value_at_percentile(99.95), 1000);  // ceil(999.5)
  EXPECT_EQ(h.value_at_percentile(100.0), 1000);
  EXPECT_EQ(h.value_at_percentile(150.0), 1000);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 1000);
  EXPECT_DOUBLE_EQ(h.mean(), 500.5);
  // Population stddev of 1..n: sqrt((n^2 - 1) / 12).
  EXPECT_NEAR(h.stddev(), 288.6749902572095, 1e-9);
}

TEST(HdrHistogramPercentile, ReportsHighestEquivalent) {
  Histogram h(1, kHour, 3);
  h.record(10001);  // bucket [10000, 10007]
  h.record(5);
  EXPECT_EQ(h.value_at_percentile(0.0), 5);
  EXPECT_EQ(h.value_at_percentile(50.0), 5);
  EXPECT_EQ(h.value_at_percentile(50.1), 10007);
  EXPECT_EQ(h.value_at_percentile(100.0), 10007);
  EXPECT_EQ(h.max(), 10007);
  // Mean uses median equivalents: (5 + 10004) / 2.
  EXPECT_DOUBLE_EQ(h.mean(), 5004.5);
  EXPECT_EQ(Histogram(1, kHour, 3).value_at_percentile(50.0), 0);
}

TEST(HdrHistogramAdd, SameAndDifferentLayouts) {
  Histogram a(1, kHour, 3);
  Histogram b(1, kHour, 3);
  a.record(100);
  b.record_n(200, 3);
  a.add(b);
  EXPECT_EQ(a.total_count(), 4);
  EXPECT_EQ(a.count_at_value(200), 3);
  Histogram c(1, 1000000, 2);
  c.add(a);
  EXPECT_EQ(c.total_count(), 4);
  EXPECT_EQ(c.value_at_percentile(100.0), c.highest_equivalent(200));
}

}  // namespace
}  // namespace shootdown::hdr
