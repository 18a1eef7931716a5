// SPDX-License-Identifier: Apache-2.0
// .hgrm text against outputPercentileDistribution() of the Java reference
// (golden files from tests/fixtures/hdr/gen/GenGolden.java), and the Java
// %f rounding rule it depends on.
#include <gtest/gtest.h>

#include "core/hdr/codec.hpp"
#include "core/hdr/hgrm.hpp"
#include "core/hdr/java_format.hpp"
#include "hdr_test_util.hpp"

namespace shootdown::hdr {
namespace {

using test::read_text;

TEST(HdrJavaFormat, FixedRoundsShortestDigitsHalfUp) {
  EXPECT_EQ(java_fixed(0.125, 2), "0.13");  // printf: 0.12
  EXPECT_EQ(java_fixed(1.005, 2), "1.01");  // printf: 1.00 (binary 1.00499...)
  EXPECT_EQ(java_fixed(2.5, 0), "3");
  EXPECT_EQ(java_fixed(0.0005, 3), "0.001");
  EXPECT_EQ(java_fixed(0.0004, 3), "0.000");
  EXPECT_EQ(java_fixed(9.9996, 3), "10.000");
  EXPECT_EQ(java_fixed(1234.5, 3, 12), "    1234.500");
  EXPECT_EQ(java_fixed(1e20, 1), "100000000000000000000.0");
  EXPECT_EQ(java_fixed(-1.5, 1), "-1.5");
  EXPECT_EQ(java_fixed(0.0, 3), "0.000");
  EXPECT_EQ(java_fixed(1.0 / 3.0, 12), "0.333333333333");
  EXPECT_EQ(java_int(42, 10), "        42");
  EXPECT_EQ(java_date_utc(0), "Thu Jan 01 00:00:00 UTC 1970");
  EXPECT_EQ(java_date_utc(1700000000123), "Tue Nov 14 22:13:20 UTC 2023");
}

TEST(HdrHgrm, MatchesJavaOutputPercentileDistribution) {
  for (const char* name : {"basic", "lowest1000", "empty", "bigcounts", "sig5"}) {
    auto h = decode_base64(read_text(std::string(name) + ".v2z.b64"));
    ASSERT_TRUE(h.ok()) << name << ": " << h.error();
    EXPECT_EQ(format_percentile_distribution(*h, 5, 1.0), read_text(std::string(name) + ".r1.hgrm")) << name;
    EXPECT_EQ(format_percentile_distribution(*h, 5, 1000.0), read_text(std::string(name) + ".r1000.hgrm")) << name;
  }
}

TEST(HdrHgrm, TicksHandDerived) {
  // Four values 1, 2, 3, 4: levels 0, 10, 20, ... per the half-distance rule;
  // each reported at the first value whose cumulative percentile reaches it.
  Histogram h(1, 1000, 3);
  for (int v = 1; v <= 4; ++v) h.record(v);
  const auto ticks = percentile_ticks(h, 5);
  ASSERT_GE(ticks.size(), 6u);
  EXPECT_EQ(ticks[0].value, 1);
  EXPECT_DOUBLE_EQ(ticks[0].percentile, 0.0);
  EXPECT_EQ(ticks[0].total_count, 1);
  EXPECT_DOUBLE_EQ(ticks[1].percentile, 10.0);  // 25% >= 10%: still value 1
  EXPECT_EQ(ticks[1].value, 1);
  EXPECT_DOUBLE_EQ(ticks[3].percentile, 30.0);  // needs 50%: value 2
  EXPECT_EQ(ticks[3].value, 2);
  EXPECT_EQ(ticks.back().value, 4);
  EXPECT_DOUBLE_EQ(ticks.back().percentile, 100.0);
  EXPECT_EQ(ticks.back().total_count, 4);
  EXPECT_TRUE(percentile_ticks(Histogram(1, 1000, 3)).empty());
}

}  // namespace
}  // namespace shootdown::hdr
