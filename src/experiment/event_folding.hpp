// SPDX-License-Identifier: Apache-2.0
// How a run or a probe past its --memory-limit stops keeping kernel events:
// the stretches at least a margin away from every raw sample (fold_gaps,
// core/compaction.hpp) are taken out of the tracer and counted in a
// FoldedEvents (per CPU and type, TLB reasons, remote-run context), so the
// counts stay exact while memory stays bounded.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "core/events.hpp"
#include "sys/perf_trace.hpp"

namespace shootdown::exp {

// Takes the tracer's events in `ranges` (mono ns, sorted, disjoint) into
// `folded`: counted, no longer kept; widens folded's [from_ns, until_ns).
void fold_ranges(sys::Tracer& tracer, std::span<const std::pair<std::int64_t, std::int64_t>> ranges,
                 FoldedEvents& folded);

}  // namespace shootdown::exp
