// SPDX-License-Identifier: Apache-2.0
#include "experiment/event_folding.hpp"

#include <algorithm>

namespace shootdown::exp {

void fold_ranges(sys::Tracer& tracer, std::span<const std::pair<std::int64_t, std::int64_t>> ranges,
                 FoldedEvents& folded) {
  if (ranges.empty()) return;
  if (folded.events == 0 && folded.until_ns == 0) folded.from_ns = ranges.front().first;
  folded.from_ns = std::min(folded.from_ns, ranges.front().first);
  tracer.take_events_between(ranges, [&folded](const KernelEvent& e) { folded.add(e); });
  folded.until_ns = std::max(folded.until_ns, ranges.back().second);
}

}  // namespace shootdown::exp
