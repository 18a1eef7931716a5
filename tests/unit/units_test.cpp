#include <gtest/gtest.h>

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
  std::string why;
  EXPECT_FALSE(parse_size("12abc", &why));
  EXPECT_NE(why.find("unit"), std::string::npos);
  EXPECT_FALSE(parse_size("-1GiB", &why));
  EXPECT_NE(why.find("negative"), std::string::npos);
  EXPECT_FALSE(parse_size("", &why));
  EXPECT_FALSE(parse_size("GiB", &why));
  EXPECT_FALSE(parse_size("99999999999TiB", &why));
  EXPECT_FALSE(parse_size("0.3B", &why));
}

TEST(Units, Durations) {
  EXPECT_EQ(parse_duration_ns("250ms"), 250000000);
  EXPECT_EQ(parse_duration_ns("2s"), 2000000000);
  EXPECT_EQ(parse_duration_ns("50us"), 50000);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1500000000);
  EXPECT_FALSE(parse_duration_ns("10"));
  EXPECT_EQ(parse_duration_ns("10", nullptr, 1000000000), 10000000000);
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
