// SPDX-License-Identifier: Apache-2.0
// The victim's circular ring and the store its drainer fills: wrap-around,
// the end of the loop when the drainer falls behind, and the store's limit.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <numeric>
#include <vector>

#include "experiment/sample_store.hpp"
#include "experiment/victim.hpp"

namespace shootdown::exp {
namespace {

struct Ring {
  std::vector<std::uint32_t> data;
  std::vector<Victim::Overflow> overflow = std::vector<Victim::Overflow>(4);
  std::atomic<std::size_t> published{0};
  std::atomic<std::size_t> consumed{0};
  std::atomic<bool> stop{false};
  BatchRecorder rec;
  explicit Ring(std::size_t cap, bool drained)
      : data(cap), rec{data.data(), cap, overflow.data(), overflow.size(), &published, drained ? &consumed : nullptr,
                       &stop} {}
};

TEST(BatchRecorder, UndrainedRingEndsWhenFilledOnce) {
  Ring r(8, false);
  int batches = 0;
  while (!r.rec.end_batch()) ++batches;
  EXPECT_EQ(batches + 1, 8);
  EXPECT_EQ(r.published.load(), 8u);
}

TEST(BatchRecorder, DrainedRingWrapsAndStopsOnlyWhenTheDrainerFallsBehind) {
  Ring r(8, true);
  for (int i = 0; i < 7; ++i) ASSERT_FALSE(r.rec.end_batch()) << i;
  r.consumed.store(5);                                               // the drainer copied 5: 5 more slots are free
  ASSERT_FALSE(r.rec.end_batch());                                   // n = 8: the limit is re-read (5 + 8 = 13)
  EXPECT_EQ(r.rec.pos, 0u);                                          // wrapped
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(r.rec.end_batch()) << i;  // n = 12
  EXPECT_TRUE(r.rec.end_batch());                                    // n = 13: unread samples would be overwritten next
  EXPECT_EQ(r.rec.n, 13u);
  EXPECT_EQ(r.published.load(), 13u);
}

TEST(BatchRecorder, StopEndsTheLoop) {
  Ring r(64, true);
  ASSERT_FALSE(r.rec.end_batch());
  r.stop.store(true);
  EXPECT_TRUE(r.rec.end_batch());
}

TEST(SampleStore, AppendsAcrossBlocksInOrder) {
  SampleStore s(3 * SampleStore::kBlockSamples, 0);
  std::vector<std::uint32_t> v(SampleStore::kBlockSamples + 100);
  std::iota(v.begin(), v.end(), 1u);
  ASSERT_EQ(s.append(v.data(), 50), 50u);
  ASSERT_EQ(s.append(v.data() + 50, v.size() - 50), v.size() - 50);  // crosses into block 2
  ASSERT_EQ(s.size(), v.size());
  for (std::size_t i = 0; i < v.size(); i += 997) ASSERT_EQ(s[i], v[i]) << i;
  EXPECT_EQ(s[SampleStore::kBlockSamples - 1], v[SampleStore::kBlockSamples - 1]);
  EXPECT_EQ(s[SampleStore::kBlockSamples], v[SampleStore::kBlockSamples]);
  EXPECT_EQ(s[v.size() - 1], v.back());
  EXPECT_FALSE(s.full());
}

TEST(SampleStore, KeepsWhatFitsAndSaysWhyWhenTheLimitIsReached) {
  SampleStore s(10, 0);
  std::vector<std::uint32_t> v(16, 7);
  EXPECT_EQ(s.append(v.data(), 6), 6u);
  EXPECT_EQ(s.append(v.data(), 6), 4u);
  EXPECT_TRUE(s.full());
  EXPECT_EQ(s.size(), 10u);
  EXPECT_NE(s.why().find("limit of 10 samples"), std::string::npos) << s.why();
  EXPECT_EQ(s.append(v.data(), 1), 0u);
}

TEST(SampleStore, RecyclingDropsTheOldestBlockAndKeepsGlobalIndices) {
  constexpr std::size_t B = SampleStore::kBlockSamples;
  SampleStore s(2 * B + B / 2, 0, /*recycle=*/true);  // 3 slots, limit 2.5 blocks
  ASSERT_TRUE(s.recycling());
  std::vector<std::uint32_t> v(B);
  std::uint32_t next = 0;
  auto fill = [&] {
    for (auto& x : v) x = next++;
  };
  fill();
  ASSERT_EQ(s.append(v.data(), B), B);
  fill();
  ASSERT_EQ(s.append(v.data(), B), B);
  fill();
  EXPECT_EQ(s.append(v.data(), B), B / 2);  // the limit: 2.5 blocks held
  EXPECT_TRUE(s.full());
  EXPECT_TRUE(s.can_drop());
  EXPECT_EQ(s.front_block()[0], 0u);
  s.drop_front_block();
  EXPECT_FALSE(s.full());
  EXPECT_EQ(s.first(), B);
  EXPECT_EQ(s.held(), B + B / 2);
  // The rest of the third batch, then more: they go into the dropped block's memory.
  EXPECT_EQ(s.append(v.data() + B / 2, B / 2), B / 2);
  EXPECT_EQ(s.size(), 3 * B);
  EXPECT_FALSE(s.full());  // 2 blocks held of 2.5: B/2 more fit
  s.drop_front_block();
  fill();
  EXPECT_EQ(s.append(v.data(), B), B);
  EXPECT_EQ(s.first(), 2 * B);
  EXPECT_EQ(s.size(), 4 * B);
  for (std::size_t i = s.first(); i < s.size(); i += 4099) ASSERT_EQ(s[i], static_cast<std::uint32_t>(i)) << i;
  EXPECT_EQ(s[s.size() - 1], static_cast<std::uint32_t>(s.size() - 1));
  EXPECT_EQ(s.front_block()[0], static_cast<std::uint32_t>(2 * B));
}

TEST(SampleStore, ALimitUnderTwoBlocksDoesNotRecycle) {
  SampleStore s(SampleStore::kBlockSamples + 10, 0, /*recycle=*/true);
  EXPECT_FALSE(s.recycling());
  std::vector<std::uint32_t> v(SampleStore::kBlockSamples + 20, 1);
  EXPECT_EQ(s.append(v.data(), v.size()), SampleStore::kBlockSamples + 10);
  EXPECT_FALSE(s.can_drop());
  s.drop_front_block();  // no effect
  EXPECT_EQ(s.first(), 0u);
  EXPECT_TRUE(s.full());
}

}  // namespace
}  // namespace shootdown::exp

namespace shootdown::exp {
namespace {

TEST(SampleStore, DropsABlockFromTheMiddleAndReusesItsSlot) {
  constexpr std::size_t B = SampleStore::kBlockSamples;
  SampleStore s(3 * B, 0, /*recycle=*/true);
  std::vector<std::uint32_t> v(B);
  std::uint32_t next = 0;
  for (int b = 0; b < 3; ++b) {
    for (auto& x : v) x = next++;
    ASSERT_EQ(s.append(v.data(), B), B);
  }
  ASSERT_EQ(s.held_blocks().size(), 3u);
  const std::size_t slot1 = s.held_blocks()[1].slot;
  s.drop_block(2);  // the newest: never
  EXPECT_EQ(s.held_blocks().size(), 3u);
  s.drop_block(1);
  ASSERT_EQ(s.held_blocks().size(), 2u);
  EXPECT_EQ(s.held_blocks()[0].block, 0u);
  EXPECT_EQ(s.held_blocks()[1].block, 2u);
  EXPECT_EQ(s.held(), 2 * B);
  for (auto& x : v) x = next++;
  ASSERT_EQ(s.append(v.data(), B), B);  // block 3 takes block 1's slot
  ASSERT_EQ(s.held_blocks().size(), 3u);
  EXPECT_EQ(s.held_blocks()[2].block, 3u);
  EXPECT_EQ(s.held_blocks()[2].slot, slot1);
  EXPECT_EQ(s.first(), 0u);
  for (std::size_t i : {std::size_t{0}, B - 1, 2 * B, 3 * B - 1, 3 * B, 4 * B - 1})
    EXPECT_EQ(s[i], static_cast<std::uint32_t>(i)) << i;
}

}  // namespace
}  // namespace shootdown::exp
