// SPDX-License-Identifier: Apache-2.0
// Summary statistics. Percentiles follow the HdrHistogram rule (see
// core/hdr/histogram.hpp) so every table agrees with the .hgrm/.hlog files.
#pragma once

#include <cstdint>
#include <vector>

#include "core/hdr/histogram.hpp"

namespace shootdown {

struct Summary {
  std::int64_t count = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  double p9999 = 0, p99999 = 0;  // p99.99, p99.999

  Summary scaled(double divisor) const;  // per-page values from per-batch ones
};

// Histogram layout used for latency values in ns: 1 ns .. 1 hour, 3 digits.
hdr::Histogram make_latency_histogram();
Summary summarize(const hdr::Histogram& h);
// Exact order statistics of raw values (for small sets: per-release stats).
Summary summarize_exact(std::vector<std::int64_t> values);
// Nearest-rank percentile of sorted values (p in 0..100).
double percentile_sorted(const std::vector<std::int64_t>& sorted, double p);

}  // namespace shootdown
