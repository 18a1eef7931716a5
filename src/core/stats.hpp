// SPDX-License-Identifier: Apache-2.0
// Summary statistics. Percentiles follow the HdrHistogram rule (see
// core/hdr/histogram.hpp) so every table agrees with the .hgrm/.hlog files.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstddef>
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
// The project's one quantile rule: nearest rank. The p-th percentile
// (0 <= p <= 100) of n values is the k-th smallest, k = ceil(p / 100 * n)
// clamped to [1, n]: always a value that was observed, and the median of an
// even count the lower of the middle two. Every percentile and median of
// measured values uses it: latencies, handler and delivery times, per-bucket
// timelines, baseline medians (HDR histograms answer value_at_percentile by
// the same rank over their buckets). The estimators of compare and the
// tracing-overhead study (a median of per-trial metrics, its bootstrap
// interval) keep linear interpolation (core/compare.hpp quantile_sorted):
// with nearest rank the lower median of an even number of block ratios
// biased the 95% interval low and it missed a known 5% shift
// (tests/unit/overhead_test.cpp, seed 11: [1.04855, 1.04988]).
std::size_t nearest_rank_index(std::size_t n, double p);  // k - 1; n > 0
template <class T>
T nearest_rank_sorted(const std::vector<T>& sorted, double p) {
  return sorted.empty() ? T{} : sorted[nearest_rank_index(sorted.size(), p)];
}
// Unsorted values, partially reordered (nth_element).
template <class T>
T nearest_rank_select(std::vector<T>& values, double p) {
  if (values.empty()) return T{};
  const auto k = nearest_rank_index(values.size(), p);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}
// nearest_rank_sorted as a double (0 when empty).
double percentile_sorted(const std::vector<std::int64_t>& sorted, double p);

}  // namespace shootdown
