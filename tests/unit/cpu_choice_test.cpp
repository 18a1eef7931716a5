// SPDX-License-Identifier: Apache-2.0
// Default CPU choice (core/cpu_choice.hpp): victims get the best CPUs.
#include "core/cpu_choice.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace shootdown {
namespace {

struct Builder {
  Topology t;
  void add(int cpu, int node, std::vector<int> sib, bool iso = false, bool nohz = false) {
    CpuInfo c;
    c.cpu = cpu;
    c.online = true;
    c.node = node;
    c.siblings = std::move(sib);
    c.isolated = iso;
    c.nohz_full = nohz;
    t.cpus.push_back(c);
    t.online.push_back(cpu);
    if (iso) t.isolated.push_back(cpu);
    if (nohz) t.nohz_full.push_back(cpu);
  }
};

// The lab's smt-numa8: -smp 8,sockets=2,cores=2,threads=2, node 0 = 0-3,
// node 1 = 4-7, isolcpus=nohz_full=2-3,6-7.
Topology smt_numa8() {
  Builder b;
  for (int c = 0; c < 8; ++c) {
    const int first = c & ~1;
    const bool iso = c == 2 || c == 3 || c == 6 || c == 7;
    b.add(c, c < 4 ? 0 : 1, {first, first + 1}, iso, iso);
  }
  return b.t;
}

bool on_core(const Topology& t, int a, int b) {
  return a == b || t.smt_siblings(a, b);
}

TEST(CpuChoice, SmtNumaIsolatedGivesTheVictimTheIsolatedCpu) {
  const Topology t = smt_numa8();
  const CpuChoice c = choose_cpus(t, 1);
  ASSERT_TRUE(c.ok()) << c.why;
  ASSERT_EQ(c.victims.size(), 1u);
  const int v = c.victims[0];
  EXPECT_TRUE(t.find(v)->isolated);
  EXPECT_TRUE(t.find(v)->nohz_full);
  EXPECT_NE(v, 0);
  // The culprit does not take an isolated CPU while a housekeeping one exists,
  // shares no core with the victim and sits on the victim's node.
  EXPECT_TRUE(t.housekeeping(c.culprit)) << c.why;
  EXPECT_FALSE(on_core(t, c.culprit, v));
  EXPECT_EQ(t.find(c.culprit)->node, t.find(v)->node);
  EXPECT_EQ(c.culprit, 0);
  EXPECT_EQ(v, 2);
  EXPECT_NE(c.why.find("isolated"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("culprit 0 (housekeeping)"), std::string::npos) << c.why;
}

TEST(CpuChoice, SeveralVictimsOnDistinctCoresOfOneNode) {
  // 2 nodes x 4 cores x 2 threads; isolated cores 1-3 of each node.
  Builder b;
  for (int c = 0; c < 16; ++c) {
    const int first = c & ~1;
    const bool iso = (c % 8) >= 2;
    b.add(c, c < 8 ? 0 : 1, {first, first + 1}, iso, iso);
  }
  const CpuChoice c = choose_cpus(b.t, 3);
  ASSERT_TRUE(c.ok()) << c.why;
  ASSERT_EQ(c.victims.size(), 3u);
  std::vector<int> all = c.cpus();
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = i + 1; j < all.size(); ++j) EXPECT_FALSE(on_core(b.t, all[i], all[j])) << c.why;
  for (int v : c.victims) {
    EXPECT_TRUE(b.t.find(v)->isolated);
    EXPECT_EQ(b.t.find(v)->node, b.t.find(c.culprit)->node);
  }
  EXPECT_TRUE(b.t.housekeeping(c.culprit));
  // 4 victims + a culprit need 5 cores: a node has 4.
  EXPECT_FALSE(choose_cpus(b.t, 4).ok());
  EXPECT_FALSE(choose_cpus(b.t, 4).why.empty());
}

TEST(CpuChoice, PlainMachineKeepsCulpritZeroVictimOne) {
  Builder b;
  b.add(0, 0, {0});
  b.add(1, 0, {1});
  const CpuChoice c = choose_cpus(b.t, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.cpus(), (std::vector<int>{0, 1}));
}

TEST(CpuChoice, VictimAvoidsCpuZeroAndSiblingsOfTheCulprit) {
  // Cores {0,1} {2,3}; only CPU 1 isolated: the victim takes 1, so the
  // culprit must leave core {0,1}.
  Builder b;
  b.add(0, 0, {0, 1});
  b.add(1, 0, {0, 1}, true);
  b.add(2, 0, {2, 3});
  b.add(3, 0, {2, 3});
  const CpuChoice c = choose_cpus(b.t, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.victims, std::vector<int>{1});
  EXPECT_EQ(c.culprit, 2);
}

TEST(CpuChoice, CulpritTakesAnIsolatedCpuOnlyWhenNothingElseIsLeft) {
  // Node 0 is fully isolated, node 1 has housekeeping CPUs: equal victim
  // quality is impossible there (node 1 not isolated), so node 0 wins and
  // the culprit must take an isolated CPU; the why says so.
  Builder b;
  b.add(0, 0, {0}, true);
  b.add(1, 0, {1}, true);
  b.add(2, 1, {2});
  b.add(3, 1, {3});
  const CpuChoice c = choose_cpus(b.t, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(b.t.find(c.victims[0])->isolated);
  EXPECT_NE(c.why.find("no housekeeping CPU left"), std::string::npos) << c.why;
}

TEST(CpuChoice, TiesPreferTheNodeWithAHousekeepingCulprit) {
  Builder b;
  b.add(0, 0, {0, 2});
  b.add(1, 0, {1, 3});
  b.add(2, 0, {0, 2});
  b.add(3, 0, {1, 3}, true);
  b.add(4, 1, {4}, true);
  b.add(5, 1, {5}, true);
  const CpuChoice c = choose_cpus(b.t, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.victims, std::vector<int>{3});
  EXPECT_EQ(c.culprit, 0);
}

TEST(CpuChoice, NoVictimsOrNoCpus) {
  EXPECT_FALSE(choose_cpus(Topology{}, 1).ok());
  EXPECT_FALSE(choose_cpus(smt_numa8(), 0).ok());
}

}  // namespace
}  // namespace shootdown
