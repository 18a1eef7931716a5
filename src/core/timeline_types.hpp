// SPDX-License-Identifier: Apache-2.0
// Victim samples aggregated by time, as data (core/timeline.hpp computes
// them): report.html's latency-over-time chart and its stall-over-time chart
// stacked by cause. Standard library only, so sinks may include it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/attribution_types.hpp"

namespace shootdown {

// One victim's buckets; every vector has Timeline::buckets entries.
struct TimelineVictim {
  int cpu = -1;
  // Latency of the samples ending in each bucket (ns). samples == 0: no
  // sample ended there (a gap, or outside the kept raw windows). p99 and p90
  // need 100 and 10 samples in the bucket; -1 when the bucket has fewer.
  std::vector<std::int64_t> samples;
  std::vector<std::int64_t> p50_ns;
  std::vector<std::int64_t> p90_ns;
  std::vector<std::int64_t> p99_ns;
  std::vector<std::int64_t> max_ns;
  // Latency from the saved report intervals instead of samples (a result
  // read back from result.json keeps every interval but only raw windows of
  // samples): each interval's p50/p90/p99/max is spread over the buckets it
  // overlaps, the highest one winning (samples still counts the kept raw
  // samples, which the stall buckets are made of).
  bool latency_from_intervals = false;
  std::int64_t intervals_used = 0;
  // Stall = max(0, latency - baseline median) per sample, as
  // VictimAttribution::stall_ns sums it, split over the buckets the sample's
  // span overlaps in proportion to the overlap (a 40 ms stall fills eight
  // 5 ms buckets, not one), so a bucket never holds more than its width.
  bool attributed = false;  // labels given: stall_ns is split by StallLabel
  std::array<std::vector<std::int64_t>, kStallLabelCount> stall_ns;
  // Without labels: the stall of samples above threshold_ns (the
  // attribution's rule for a stall), all causes together. Also filled when
  // attributed, so a sink can fall back to it.
  std::vector<std::int64_t> unattributed_ns;
  std::int64_t baseline_median_ns = 0;
  std::int64_t threshold_ns = 0;
  // Sample spans covered by the buckets (ns); equal to the run span for a
  // measured series, the kept windows for one read back.
  std::int64_t covered_ns = 0;
  std::int64_t sample_count = 0;
};

struct Timeline {
  std::int64_t origin_ns = 0;  // CLOCK_MONOTONIC ns of bucket 0's start
  std::int64_t bucket_ns = 0;  // bucket width
  std::size_t buckets = 0;
  std::int64_t span_ns = 0;  // origin .. the last sample's end
  // Samples only around the releases (result read back from result.json):
  // stall buckets outside those windows are empty, not zero-stall.
  bool partial = false;
  std::vector<TimelineVictim> victims;
};

}  // namespace shootdown
