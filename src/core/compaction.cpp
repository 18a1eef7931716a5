// SPDX-License-Identifier: Apache-2.0
#include "core/compaction.hpp"

#include <algorithm>

namespace shootdown {

namespace {
std::uint64_t sat_sub(std::uint64_t a, std::uint64_t b) {
  return a > b ? a - b : 0;
}
bool overlaps(const TickRange& b, std::uint64_t lo, std::uint64_t hi) {
  return b.from < hi && b.to > lo;
}
}  // namespace

std::optional<std::size_t> choose_fold(std::span<const TickRange> blocks, const KeepRules& r) {
  if (blocks.size() < 2) return std::nullopt;
  const std::size_t last = blocks.size() - 1;  // takes the next samples: never folded
  const std::uint64_t wm = r.window_margin.value_or(r.margin);
  auto in_window = [&](const TickRange& b) {
    if (r.open && b.to > sat_sub(*r.open, r.margin)) return true;
    for (const TickRange& w : r.windows)
      if (overlaps(b, sat_sub(w.from, wm), w.to + wm)) return true;
    return false;
  };
  auto first_baseline = [&](const TickRange& b) {
    return r.first && overlaps(b, sat_sub(*r.first, r.margin), *r.first);
  };
  // The after phase of the newest closed window, up to `margin`: the last
  // release's counterpart of the first baseline (the phase table "after").
  auto last_after = [&](const TickRange& b) {
    return !r.windows.empty() && overlaps(b, r.windows.back().to, r.windows.back().to + r.margin);
  };
  auto kept_raw = [&](const TickRange& b) {
    if (!r.final && b.to > sat_sub(r.now, r.margin)) return true;
    if (last_after(b)) return true;
    for (const std::uint64_t m : r.marks)
      if (overlaps(b, sat_sub(m, r.mark_margin), m + r.mark_margin + 1)) return true;
    return in_window(b) || first_baseline(b);
  };
  for (std::size_t i = 0; i < last; ++i)
    if (!kept_raw(blocks[i])) return i;
  if (r.final) return std::nullopt;
  // Only raw windows, marks and the look-back are left: the oldest goes,
  // keeping the release windows, the first baseline, then the start of an
  // open window, to the last.
  auto open_start = [&](const TickRange& b) {
    return r.open && overlaps(b, sat_sub(*r.open, r.margin), *r.open + r.margin);
  };
  for (std::size_t i = 0; i < last; ++i)
    if (!in_window(blocks[i]) && !open_start(blocks[i]) && !first_baseline(blocks[i])) return i;
  for (std::size_t i = 0; i < last; ++i)
    if (!open_start(blocks[i]) && !first_baseline(blocks[i])) return i;
  for (std::size_t i = 0; i < last; ++i)
    if (!open_start(blocks[i])) return i;
  for (std::size_t i = 0; i < last; ++i)
    if (!r.open || !(blocks[i].from <= *r.open && *r.open < blocks[i].to)) return i;
  return std::nullopt;
}

void fold_gaps(std::vector<std::pair<std::int64_t, std::int64_t>>& kept, std::int64_t lo, std::int64_t hi,
               std::int64_t margin, std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
  out.clear();
  std::sort(kept.begin(), kept.end());
  std::int64_t at = lo;  // everything before `at` is decided
  for (const auto& [a, b] : kept) {
    const std::int64_t from = a - margin;
    if (from > at) {
      const std::int64_t to = std::min(from, hi);
      if (to > at) out.emplace_back(at, to);
    }
    at = std::max(at, b + margin);
    if (at >= hi) break;
  }
  if (at < hi) out.emplace_back(at, hi);
}

void mark_near(std::int64_t start, std::span<const std::int64_t> end, std::span<const std::int64_t> times,
               std::int64_t window, std::vector<bool>& keep) {
  keep.assign(end.size(), false);
  std::size_t e = 0;
  std::int64_t from = start;
  for (std::size_t i = 0; i < end.size(); ++i) {
    while (e < times.size() && times[e] < from - window) ++e;
    keep[i] = e < times.size() && times[e] <= end[i] + window;
    from = end[i];
  }
}

int ring_pages_tracing_every_cpu(std::size_t cpus) {
  const std::size_t budget = (std::size_t{256} << 20) / 4096;  // pages
  const std::size_t per = budget / std::max<std::size_t>(cpus, 1);
  std::size_t p = 256;
  while (p * 2 <= per && p < 2048) p *= 2;
  return static_cast<int>(p);
}

}  // namespace shootdown
