// SPDX-License-Identifier: Apache-2.0
// Compaction policy of a run past its memory limit, pure so it is
// unit-tested: which block of a full sample store is summarized and dropped,
// and which stretches of time the kernel events may be folded from.
//
// The store holds blocks of raw samples in time order. A full store folds
// one block into the run's interval histograms to make room. It keeps raw,
// as long as it can, everything within `margin` of a release window (the
// baseline just before it, the release, the settle and the start of the
// after phase: what attribution and the phase tables read), the newest
// `margin` (the look-back of a release that may begin at any moment) and
// the blocks holding an IPI the run marked on the victim's CPU, and the
// `margin` after the newest closed window (the last release's after phase,
// kept after the run as the first release's baseline is). When only
// such blocks are left it folds the oldest of them: first those kept for a
// mark or the look-back only, then a closed window's raw samples (the run
// says which releases lost theirs), keeping
// the baseline just before the first release (the reference of every stall
// threshold) and then the start of a window still open (its first `margin`
// and the `margin` before it) to the last; never the block holding the
// start of an open window, nor the newest block, which takes the next
// samples. After a run that folded, every block away from the windows is
// folded too (`final`), so what stays raw does not depend on when the store
// happened to fill.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace shootdown {

// [from, to): TSC ticks, or ns (fold_gaps).
struct TickRange {
  std::uint64_t from = 0, to = 0;
};

struct KeepRules {
  std::uint64_t now = 0;     // the end of the newest sample drained
  std::uint64_t margin = 0;  // raw samples kept behind now, before an open window and the first release
  // Raw samples kept before and after each closed window (unset: margin).
  // Smaller, so a --repeat keeps many windows raw; the first release's
  // baseline keeps `margin` (the reference of every stall threshold).
  std::optional<std::uint64_t> window_margin;
  std::optional<std::uint64_t> open;   // start of a release window still open
  std::optional<std::uint64_t> first;  // start of the first release's window (its baseline is the reference)
  // After the run (a run that folded): no release is coming, so no look-back
  // is kept, and only blocks away from every window are chosen.
  bool final = false;
  std::span<const TickRange> windows;  // closed release windows [before, after + settle), oldest first
  // IPIs on the victim's CPU outside the releases (a stray flush, a
  // membarrier): the samples within `mark_margin` of each stay raw too.
  std::span<const std::uint64_t> marks;
  std::uint64_t mark_margin = 0;
};

// The index in `blocks` (held blocks' spans, oldest first) of the block to
// fold, or nullopt when none may be folded (fewer than two blocks, or all
// are protected).
std::optional<std::size_t> choose_fold(std::span<const TickRange> blocks, const KeepRules& rules);

// The stretches of [lo, hi) at least `margin` away from every kept span:
// where nothing raw is left for the events to explain. `kept` is sorted in
// place (by start). `out` is cleared and filled in order, disjoint,
// non-empty (its capacity is reused: no allocation when it suffices).
void fold_gaps(std::vector<std::pair<std::int64_t, std::int64_t>>& kept, std::int64_t lo, std::int64_t hi,
               std::int64_t margin, std::vector<std::pair<std::int64_t, std::int64_t>>& out);

// A probe's samples (no releases to keep windows around): sample i spans
// (end[i-1], end[i]] (end[-1] = start). Sets keep[i] for the samples within
// `window` ns of one of `times` (sorted): an IPI on the probe's CPU, whose
// stall is one sample and whose neighbours give the baseline.
void mark_near(std::int64_t start, std::span<const std::int64_t> end, std::span<const std::int64_t> times,
               std::int64_t window, std::vector<bool>& keep);

// Pages per CPU of the kernel tracer's perf rings when every online CPU is
// traced (probe: the target's threads may run anywhere): a power of two in
// [256, 2048] (1..8 MiB) keeping the total near 256 MiB. 2 CPUs: 2048 pages
// (8 MiB) each; 72: 512 (2 MiB, 144 MiB in all); 512: 256 (1 MiB, 512 MiB).
int ring_pages_tracing_every_cpu(std::size_t cpus);

}  // namespace shootdown
