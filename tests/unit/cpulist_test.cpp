// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/cpulist.hpp"

using namespace shootdown;

TEST(CpuList, Parse) {
  EXPECT_EQ(parse_cpulist("1,3-5"), (std::vector<int>{1, 3, 4, 5}));
  EXPECT_EQ(parse_cpulist("0-1\n"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_cpulist("7"), (std::vector<int>{7}));
  EXPECT_EQ(parse_cpulist(""), (std::vector<int>{}));
}

TEST(CpuList, Errors) {
  auto twice = parse_cpulist("1,1");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("twice"), std::string::npos);
  EXPECT_FALSE(parse_cpulist("5-3"));
  EXPECT_FALSE(parse_cpulist("a"));
  EXPECT_FALSE(parse_cpulist("1,,2"));
  EXPECT_FALSE(parse_cpulist("-1"));
  EXPECT_EQ(parse_cpulist("1,1", true), (std::vector<int>{1}));
}

TEST(CpuList, Format) {
  EXPECT_EQ(format_cpulist({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(format_cpulist({}), "");
}

// The kernel's cpumask layout beyond one word: CPU n is bit n % 64 of word n / 64.
TEST(CpuMask, AnySizeAsTheKernelLaysItOut) {
  const CpuMask m = CpuMask::of({3, 65, 70, 511});
  EXPECT_TRUE(m.test(3));
  EXPECT_TRUE(m.test(65));
  EXPECT_TRUE(m.test(70));
  EXPECT_TRUE(m.test(511));
  EXPECT_FALSE(m.test(64));
  EXPECT_FALSE(m.test(512));
  EXPECT_FALSE(m.test(-1));
  EXPECT_EQ(m.count(), 4);
  EXPECT_EQ(m.cpus(), (std::vector<int>{3, 65, 70, 511}));
  ASSERT_EQ(m.words().size(), 8u);
  EXPECT_EQ(m.words()[0], 1ULL << 3);
  EXPECT_EQ(m.words()[1], (1ULL << 1) | (1ULL << 6));
  EXPECT_EQ(m.words()[7], 1ULL << 63);
  EXPECT_EQ(format_cpumask(m), "3,65,70,511");
  // Trailing zero words (a kernel with NR_CPUS 8192 and 72 CPUs) do not matter.
  EXPECT_EQ(CpuMask({1ULL << 3, (1ULL << 1) | (1ULL << 6), 0, 0}), CpuMask::of({3, 65, 70}));
  EXPECT_TRUE(CpuMask({0, 0}).empty());
  EXPECT_EQ(format_cpumask(CpuMask::of({64, 65, 66, 67})), "64-67");
}
