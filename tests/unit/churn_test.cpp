// SPDX-License-Identifier: Apache-2.0
// core/churn_plan: the allocator arms' workload plan, --allocator-conf parsing and
// the per-GiB price list.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/analysis_types.hpp"
#include "core/churn_plan.hpp"
#include "core/result.hpp"
#include "core/strategy.hpp"

namespace shootdown {
namespace {

TEST(Churn, PlanIsDeterministicAndAddsUp) {
  const ChurnPlan a = make_churn(64 << 20), b = make_churn(64 << 20);
  EXPECT_EQ(a.sizes, b.sizes);
  EXPECT_EQ(a.free_order, b.free_order);
  EXPECT_EQ(a.live_bytes, 64 << 20);
  std::int64_t sum = 0;
  for (auto s : a.sizes) {
    EXPECT_GE(s, 1u);  // the last block may be cut below 16 B
    EXPECT_LE(s, kChurnMaxBlock);
    sum += s;
  }
  EXPECT_EQ(sum, a.live_bytes);
  // 7 of 8 freed, each block at most once, and the freed bytes are theirs.
  EXPECT_EQ(a.free_order.size(), a.sizes.size() - a.sizes.size() / 8);
  std::set<std::uint32_t> uniq(a.free_order.begin(), a.free_order.end());
  EXPECT_EQ(uniq.size(), a.free_order.size());
  std::int64_t freed = 0;
  for (auto i : a.free_order) freed += a.sizes[i];
  EXPECT_EQ(freed, a.freed_bytes);
  // Shuffled, not in allocation order.
  EXPECT_FALSE(std::is_sorted(a.free_order.begin(), a.free_order.end()));
  // Another seed, another pattern.
  EXPECT_NE(make_churn(64 << 20, 7).sizes, a.sizes);
  EXPECT_EQ(released_bytes(ReleaseStrategy::kJemalloc, 64 << 20), a.freed_bytes);
  EXPECT_NE(released_what(ReleaseStrategy::kTcmalloc, 64 << 20).find(" freed blocks of "), std::string::npos);
}

TEST(Churn, MixedSizesSpanTheRange) {
  const ChurnPlan p = make_churn(256 << 20);
  const auto [lo, hi] = std::minmax_element(p.sizes.begin(), p.sizes.end() - 1);  // the last may be cut
  EXPECT_LT(*lo, 256u);
  EXPECT_GT(*hi, 512u << 10);
  std::size_t small = 0;
  for (auto s : p.sizes) small += s <= (4u << 10);
  EXPECT_GT(small, p.sizes.size() / 4);  // log-uniform: a third of the blocks are <= 4 KiB
}

TEST(Churn, ConfParsing) {
  auto out = parse_allocator_conf(ReleaseStrategy::kGlibcMalloc, "");
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->empty());
  out = parse_allocator_conf(ReleaseStrategy::kGlibcMalloc, "M_TRIM_THRESHOLD=0,M_MMAP_THRESHOLD=4096");
  ASSERT_TRUE(out);
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[1].name, "M_MMAP_THRESHOLD");
  EXPECT_EQ((*out)[1].value, "4096");
  const auto foo = parse_allocator_conf(ReleaseStrategy::kGlibcMalloc, "M_FOO=1");
  ASSERT_FALSE(foo);
  EXPECT_NE(foo.error().find("'M_FOO=1': unknown mallopt parameter (accepted: "), std::string::npos) << foo.error();
  EXPECT_FALSE(parse_allocator_conf(ReleaseStrategy::kGlibcMalloc, "M_TRIM_THRESHOLD=-1"));
  out = parse_allocator_conf(ReleaseStrategy::kJemalloc, "dirty_decay_ms:0,background_thread:true");
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].name, "dirty_decay_ms");
  EXPECT_EQ((*out)[1].value, "true");
  EXPECT_FALSE(parse_allocator_conf(ReleaseStrategy::kJemalloc, "dirty_decay_ms=0"));
  EXPECT_TRUE(parse_allocator_conf(ReleaseStrategy::kTcmalloc, "TCMALLOC_RELEASE_RATE=10"));
  EXPECT_FALSE(parse_allocator_conf(ReleaseStrategy::kTcmalloc, "MIMALLOC_RESET_DELAY=0"));
  EXPECT_TRUE(parse_allocator_conf(ReleaseStrategy::kMimalloc, "MIMALLOC_RESET_DELAY=0"));
  EXPECT_FALSE(parse_allocator_conf(ReleaseStrategy::kMimalloc, "MIMALLOC_RESET_DELAY=0,"));
  EXPECT_FALSE(parse_allocator_conf(ReleaseStrategy::kMunmap, "x=1"));
  EXPECT_TRUE(is_allocator_arm(ReleaseStrategy::kMimalloc));
  EXPECT_FALSE(is_allocator_arm(ReleaseStrategy::kReuse));
}

TEST(ReleaseCost, PerGib) {
  Result r;
  Verdict v;
  EXPECT_FALSE(release_cost(r, v).has_value());  // no memory record (journal, probe, older results)
  MemoryKept m;
  m.released_bytes = 512LL << 20;
  m.rss_before = 900LL << 20;
  m.rss_settled = (900LL << 20) - (448LL << 20);
  m.kept_bytes = memory_kept_bytes(m.released_bytes, m.rss_before, m.rss_settled);
  EXPECT_EQ(m.kept_bytes, 64LL << 20);             // 512 MiB released, RSS fell by 448 MiB
  EXPECT_EQ(memory_kept_bytes(100, 500, 300), 0);  // RSS fell by more (other memory went too): 0, not negative
  EXPECT_EQ(memory_kept_bytes(100, -1, 300), -1);
  r.memory = m;
  EXPECT_FALSE(release_cost(r, v).has_value());  // no release
  for (int i = 0; i < 2; ++i) {
    Release rel;
    rel.bytes = m.released_bytes;
    rel.before_ns = 0;
    rel.after_ns = 50'000'000;  // 50 ms each
    r.releases.push_back(rel);
  }
  VictimVerdict x;
  x.evidence = true;
  x.shootdowns = 300;
  x.stall_ns = 9'000'000;
  VictimVerdict y = x;
  y.shootdowns = 100;
  y.stall_ns = 3'000'000;
  VictimVerdict none;  // no evidence: not in the mean
  v.victims = {x, y, none};
  const auto c = release_cost(r, v);
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->gib_released, 1.0);
  EXPECT_DOUBLE_EQ(c->shootdowns_per_gib, 200.0);
  EXPECT_DOUBLE_EQ(c->stall_ms_per_gib, 6.0);
  EXPECT_DOUBLE_EQ(c->release_ms_per_gib, 100.0);
  EXPECT_DOUBLE_EQ(c->kept_mib_per_gib, 128.0);  // 64 MiB kept of 0.5 GiB freed in the last release
  v.victims = {none};
  EXPECT_TRUE(std::isnan(release_cost(r, v)->shootdowns_per_gib));
}

}  // namespace
}  // namespace shootdown
