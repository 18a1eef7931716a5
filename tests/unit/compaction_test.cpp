// SPDX-License-Identifier: Apache-2.0
// Which block a full sample store folds, and where kernel events may be
// folded (core/compaction): the raw windows around releases survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/compaction.hpp"

namespace shootdown {
namespace {

// Ten blocks of 100 ticks: [0,100), [100,200), ...
std::vector<TickRange> blocks(int n) {
  std::vector<TickRange> b;
  for (int i = 0; i < n; ++i)
    b.push_back({static_cast<std::uint64_t>(i) * 100, static_cast<std::uint64_t>(i + 1) * 100});
  return b;
}

TEST(ChooseFold, TheOldestBlockAwayFromWindowsAndTheLookBack) {
  const auto b = blocks(10);
  KeepRules r;
  r.now = 1000;
  r.margin = 50;
  EXPECT_EQ(choose_fold(b, r), 0u);
  const std::vector<TickRange> w = {{120, 180}};  // a closed release window inside block 1
  r.windows = w;
  EXPECT_EQ(choose_fold(b, r), 3u) << "the window and its margin (70..230) touch blocks 0-2";
  const std::vector<TickRange> w2 = {{20, 30}, {160, 280}};
  r.windows = w2;
  EXPECT_EQ(choose_fold(b, r), 4u) << "blocks 0 and 1-3 are within 50 of a window";
}

TEST(ChooseFold, NeverTheNewestBlockNorTheStartOfAnOpenWindow) {
  const auto b = blocks(3);
  KeepRules r;
  r.now = 300;
  r.margin = 20;
  r.open = 50;  // a release window opened at tick 50: block 0 holds its start (30..70)
  EXPECT_EQ(choose_fold(b, r), 1u) << "only the open window is left: block 1 goes, block 0 (its start) stays";
  r.margin = 150;  // the open start's margin (0..200) covers blocks 0 and 1
  EXPECT_EQ(choose_fold(b, r), 1u) << "the margin goes before the block holding the open window's start";
  const std::vector<TickRange> two = {{0, 100}, {100, 200}};
  EXPECT_EQ(choose_fold(two, r), std::nullopt) << "block 0 holds the open start, block 1 is the newest";
  EXPECT_EQ(choose_fold(blocks(1), KeepRules{}), std::nullopt);
}

TEST(ChooseFold, UnderPressureOldWindowsGoFirstAndTheFirstBaselineLast) {
  const auto b = blocks(6);
  KeepRules r;
  r.now = 600;
  r.margin = 10;
  r.first = 200;  // the first release began at 200: block 1 is its baseline
  const std::vector<TickRange> w = {{200, 250}, {320, 330}, {420, 430}, {510, 520}};
  r.windows = w;  // every block is near a window
  EXPECT_EQ(choose_fold(b, r), 0u) << "block 0 is away from all windows (margin 10)";
  const std::vector<TickRange> w2 = {{90, 95}, {200, 250}, {320, 330}, {420, 430}, {510, 520}};
  r.windows = w2;
  EXPECT_EQ(choose_fold(b, r), 0u) << "all pinned: the oldest, block 0, is not the first baseline";
  std::vector<TickRange> from1(b.begin() + 1, b.end());
  EXPECT_EQ(choose_fold(from1, r), 1u) << "block 1 (index 0) is the first release's baseline: block 2 goes first";
}

TEST(ChooseFold, AMarkedIpiKeepsItsBlockButFoldsBeforeAReleaseWindow) {
  const auto b = blocks(6);
  KeepRules r;
  r.now = 600;
  r.margin = 10;
  r.mark_margin = 5;
  const std::vector<std::uint64_t> marks = {50, 198};  // in block 0; near the end of block 1 (reaches 203: block 2)
  r.marks = marks;
  EXPECT_EQ(choose_fold(b, r), 3u);
  const std::vector<TickRange> w = {{350, 360}, {450, 460}};  // blocks 3 and 4 hold release windows
  r.windows = w;
  EXPECT_EQ(choose_fold(b, r), 0u) << "all kept raw: the marked block goes before the release windows";
  r.final = true;
  EXPECT_EQ(choose_fold(b, r), std::nullopt) << "after the run a marked block stays raw";
}

TEST(ChooseFold, AfterTheRunOnlyBlocksAwayFromEveryWindow) {
  const auto b = blocks(6);
  KeepRules r;
  r.now = 600;
  r.margin = 10;
  r.final = true;
  const std::vector<TickRange> w = {{150, 160}};
  r.windows = w;
  EXPECT_EQ(choose_fold(b, r), 0u);
  std::vector<TickRange> rest(b.begin() + 1, b.end());  // block 0 folded
  EXPECT_EQ(choose_fold(rest, r), 1u) << "block 1 holds the window: block 2 goes, no look-back after the run";
  const std::vector<TickRange> left = {b[1], b[5]};
  EXPECT_EQ(choose_fold(left, r), std::nullopt) << "the window's block stays raw; the newest is never folded";
}

TEST(ChooseFold, ClosedWindowsKeepASmallerMarginThanTheFirstBaseline) {
  const auto b = blocks(8);
  KeepRules r;
  r.now = 800;
  r.margin = 150;
  r.window_margin = 10;
  r.first = 350;  // the first release began at 350: blocks 2-3 hold its baseline (200..350)
  const std::vector<TickRange> w = {{350, 360}, {550, 560}};
  r.windows = w;
  EXPECT_EQ(choose_fold(b, r), 0u);
  std::vector<TickRange> rest(b.begin() + 1, b.end());
  EXPECT_EQ(choose_fold(rest, r), 0u) << "block 1 (100..200) is outside the first baseline (200..350)";
  std::vector<TickRange> later(b.begin() + 4, b.end());
  EXPECT_EQ(choose_fold(later, r), 0u) << "block 4 (400..500): 10 from the windows, not 150";
  r.final = true;
  std::vector<TickRange> at_end(b.begin() + 2, b.end());
  EXPECT_EQ(choose_fold(at_end, r), 2u)
      << "after the run the first baseline (blocks 2-3) and block 5 stay; block 4 goes";
}

TEST(ChooseFold, AfterTheRunTheLastReleasesAfterPhaseStaysRaw) {
  const auto b = blocks(8);
  KeepRules r;
  r.now = 800;
  r.margin = 250;
  r.window_margin = 10;
  r.final = true;
  const std::vector<TickRange> w = {{120, 130}, {240, 250}};  // the last window closes at 250
  r.windows = w;
  std::vector<TickRange> rest(b.begin() + 3, b.end());  // blocks 3..7 (300..800)
  EXPECT_EQ(choose_fold(rest, r), 2u) << "blocks 3-4 hold the last release's after phase (250..500): block 5 goes";
  r.margin = 40;
  EXPECT_EQ(choose_fold(rest, r), 0u) << "with a margin of 40 the after phase ends in block 2";
  r.final = false;
  r.margin = 250;
  std::vector<TickRange> full(b.begin() + 1, b.begin() + 6);  // blocks 1..5, now 600
  r.now = 600;
  EXPECT_EQ(choose_fold(full, r), 2u) << "blocks 1-2 hold windows, 3-4 the after phase and look-back: "
                                         "under pressure block 3 goes before a window";
}

TEST(FoldGaps, StretchesFarFromEveryKeptSpan) {
  std::vector<std::pair<std::int64_t, std::int64_t>> kept = {{500, 600}, {100, 200}, {150, 250}};
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  fold_gaps(kept, 0, 1000, 10, out);
  const std::vector<std::pair<std::int64_t, std::int64_t>> want = {{0, 90}, {260, 490}, {610, 1000}};
  EXPECT_EQ(out, want);
  fold_gaps(kept, 0, 400, 10, out);
  const std::vector<std::pair<std::int64_t, std::int64_t>> want2 = {{0, 90}, {260, 400}};
  EXPECT_EQ(out, want2);
  kept = {{0, 1000}};
  fold_gaps(kept, 0, 1000, 10, out);
  EXPECT_TRUE(out.empty());
}

TEST(MarkNear, KeepsTheSamplesWithinTheWindowOfAnIpi) {
  // Ten samples of 10 ns from t = 100: sample i spans (100 + 10i, 110 + 10i].
  std::vector<std::int64_t> end;
  for (int i = 0; i < 10; ++i) end.push_back(110 + 10 * i);
  const std::vector<std::int64_t> times = {135, 400};  // an IPI in sample 3; another far after the stretch
  std::vector<bool> keep;
  mark_near(100, end, times, 10, keep);
  const std::vector<bool> want = {false, false, true, true, true, false, false, false, false, false};
  EXPECT_EQ(keep, want);
  mark_near(100, end, {}, 10, keep);
  EXPECT_EQ(std::count(keep.begin(), keep.end(), true), 0);
  const std::vector<std::int64_t> before = {95};  // just before the stretch: its first sample is within 10 ns
  mark_near(100, end, before, 10, keep);
  EXPECT_TRUE(keep[0]);
  EXPECT_FALSE(keep[1]);
}

}  // namespace
}  // namespace shootdown

namespace shootdown {
namespace {
// probe traces every online CPU: the rings stay within a budget that still
// gives each CPU at least 1 MiB.
TEST(RingPages, EveryCpuTracedWithinABudget) {
  EXPECT_EQ(ring_pages_tracing_every_cpu(1), 2048);
  EXPECT_EQ(ring_pages_tracing_every_cpu(2), 2048);
  EXPECT_EQ(ring_pages_tracing_every_cpu(72), 512);
  EXPECT_EQ(ring_pages_tracing_every_cpu(512), 256);
  EXPECT_EQ(ring_pages_tracing_every_cpu(8192), 256);
  for (std::size_t n : {1, 2, 8, 32, 64, 72, 128, 256, 512}) {
    const int p = ring_pages_tracing_every_cpu(n);
    EXPECT_EQ(p & (p - 1), 0) << n;  // a power of two (perf needs it)
    EXPECT_LE(static_cast<std::size_t>(p) * 4096 * n, std::max<std::size_t>(256u << 20, n * 4096 * 256)) << n;
  }
}
}  // namespace
}  // namespace shootdown
