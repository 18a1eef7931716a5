// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/strategy.hpp"
#include "core/units.hpp"

using namespace shootdown;

TEST(Units, Sizes) {
  EXPECT_EQ(parse_size("4GiB"), 4LL << 30);
  EXPECT_EQ(parse_size("64KiB"), 64LL << 10);
  EXPECT_EQ(parse_size("512MiB"), 512LL << 20);
  EXPECT_EQ(parse_size("1.5GiB"), 3LL << 29);
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_EQ(parse_size("1KB"), 1000);
  EXPECT_EQ(parse_size("2G"), 2LL << 30);
}

TEST(Units, BadSizes) {
  auto bad = parse_size("12abc");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("unit"), std::string::npos);
  bad = parse_size("-1GiB");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("negative"), std::string::npos);
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("GiB"));
  EXPECT_FALSE(parse_size("99999999999TiB"));
  EXPECT_FALSE(parse_size("0.3B"));
}

TEST(Units, Durations) {
  EXPECT_EQ(parse_duration_ns("250ms"), 250000000);
  EXPECT_EQ(parse_duration_ns("2s"), 2000000000);
  EXPECT_EQ(parse_duration_ns("50us"), 50000);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1500000000);
  EXPECT_FALSE(parse_duration_ns("10"));
  EXPECT_EQ(parse_duration_ns("10", 1000000000), 10000000000);
  EXPECT_FALSE(parse_duration_ns("3 days"));
  EXPECT_FALSE(parse_duration_ns("-1s"));
}

TEST(Units, Format) {
  EXPECT_EQ(format_size(4LL << 30), "4 GiB");
  EXPECT_EQ(format_size(1536LL << 20), "1.50 GiB");
  EXPECT_EQ(format_duration_ns(812), "812 ns");
  EXPECT_EQ(format_duration_ns(25100), "25.1 us");
  EXPECT_EQ(format_duration_ns(12345678), "12.3 ms");
}

TEST(Units, Ints) {
  EXPECT_EQ(parse_int("42"), 42);
  EXPECT_FALSE(parse_int("4x"));
  EXPECT_FALSE(parse_int(""));
}

TEST(Strategy, PacedAndChunked) {
  ASSERT_TRUE(find_strategy("paced").has_value());
  ASSERT_TRUE(find_strategy("chunked").has_value());
  for (auto s : {ReleaseStrategy::kPaced, ReleaseStrategy::kChunked}) {
    EXPECT_TRUE(is_paced(s));
    EXPECT_TRUE(strategy_info(s).run_option);
    EXPECT_TRUE(is_compare_arm(s, Workload::kMemory));
    EXPECT_EQ(strategy_info(s).rearm, Rearm::kRefault);
    EXPECT_EQ(released_bytes(s, 4LL << 30), 4LL << 30);  // all of A
  }
  EXPECT_FALSE(is_paced(ReleaseStrategy::kMadviseDontneed));
  EXPECT_EQ(default_pace(ReleaseStrategy::kPaced).step, 64LL << 10);
  EXPECT_EQ(default_pace(ReleaseStrategy::kPaced).gap_ns, 100'000);
  EXPECT_EQ(default_pace(ReleaseStrategy::kChunked).step, 64LL << 20);
  EXPECT_EQ(default_pace(ReleaseStrategy::kChunked).gap_ns, 10'000'000);
  EXPECT_EQ(default_pace(ReleaseStrategy::kMunmap).step, 0);
  EXPECT_EQ(pace_steps(4LL << 30, 64LL << 10), 65536);
  EXPECT_EQ(pace_steps((128LL << 20) + 4096, 64LL << 20), 3);  // a shorter last step
  EXPECT_EQ(pace_steps(0, 4096), 0);
  EXPECT_EQ(format_gap(100'000), "100 us");
  EXPECT_EQ(format_gap(10'000'000), "10 ms");
  EXPECT_EQ(format_gap(2'000'000'000), "2 s");
  EXPECT_EQ(format_gap(1'500'000), "1500 us");
  EXPECT_EQ(format_gap(0), "0 ns");
  EXPECT_EQ(format_pace({2LL << 20, 1'000'000}), "2MiB/1ms");
  EXPECT_EQ(released_what(ReleaseStrategy::kPaced, 4LL << 30, {64LL << 10, 100'000}),
            "4 GiB in 65536 steps of 64 KiB with 100 us gaps");
  EXPECT_EQ(released_what(ReleaseStrategy::kChunked, 32LL << 20, {64LL << 20, 10'000'000}),
            "32 MiB in 1 steps of 32 MiB with 10 ms gaps");
  EXPECT_EQ(released_what(ReleaseStrategy::kMunmap, 1LL << 30, {64LL << 10, 100'000}), "1 GiB");
  EXPECT_EQ(partial_release_note(40LL << 20, 128LL << 20), "stopped after 40 MiB of 128 MiB");
}
