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
  std::string why;
  EXPECT_FALSE(parse_cpulist("1,1", &why));
  EXPECT_NE(why.find("twice"), std::string::npos);
  EXPECT_FALSE(parse_cpulist("5-3", &why));
  EXPECT_FALSE(parse_cpulist("a", &why));
  EXPECT_FALSE(parse_cpulist("1,,2", &why));
  EXPECT_FALSE(parse_cpulist("-1", &why));
  EXPECT_EQ(parse_cpulist("1,1", nullptr, true), (std::vector<int>{1}));
}

TEST(CpuList, Format) {
  EXPECT_EQ(format_cpulist({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(format_cpulist({}), "");
}
