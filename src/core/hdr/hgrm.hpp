// SPDX-License-Identifier: Apache-2.0
// The percentile distribution text (.hgrm) exactly as the Java reference's
// AbstractHistogram.outputPercentileDistribution(printStream,
// percentileTicksPerHalfDistance, outputValueUnitScalingRatio) prints it
// (HdrHistogram 2.1.11), and therefore as HistogramLogProcessor prints the
// sum of a log's intervals (after its own "#[StartTime: ...]" line). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/hdr/histogram.hpp"

namespace shootdown::hdr {

// We record nanoseconds; .hgrm and .hlog report microseconds. Read our files
// with the Java tools using `-outputValueUnitRatio 1000`.
inline constexpr double kNsPerUs = 1000.0;
inline constexpr double kDefaultOutputValueUnitRatio = kNsPerUs;
inline constexpr int kDefaultTicksPerHalfDistance = 5;

// One step of the reference PercentileIterator.
struct PercentileTick {
  std::int64_t value = 0;        // highest equivalent value of the bucket reached
  double percentile = 0.0;       // percentile level iterated to (0..100)
  std::int64_t total_count = 0;  // count of values <= value
};

// The reference's percentile iteration: levels start at 0% and advance by
// 100 / (ticks * 2^(floor(log2(100 / (100 - level))) + 1)), so each halving of
// the distance to 100% gets `ticks_per_half_distance` steps; a level is
// reported at the first non-empty bucket whose cumulative percentile reaches
// it; one final 100% step at the last recorded value. Empty for an empty
// histogram. ticks_per_half_distance must be >= 1 (clamped).
std::vector<PercentileTick> percentile_ticks(const Histogram& histogram,
                                             int ticks_per_half_distance = kDefaultTicksPerHalfDistance);

// The full .hgrm text: header, one line per tick, then the #[Mean ...],
// #[Max ...], #[Buckets ...] footer. Values are divided by
// output_value_unit_ratio and printed with significant_figures() decimals.
std::string format_percentile_distribution(const Histogram& histogram,
                                           int ticks_per_half_distance = kDefaultTicksPerHalfDistance,
                                           double output_value_unit_ratio = kDefaultOutputValueUnitRatio);

}  // namespace shootdown::hdr
