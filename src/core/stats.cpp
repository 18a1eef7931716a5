// SPDX-License-Identifier: Apache-2.0
#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shootdown {

Summary Summary::scaled(double divisor) const {
  Summary s = *this;
  if (divisor <= 0) return s;
  s.min /= divisor;
  s.mean /= divisor;
  s.p50 /= divisor;
  s.p90 /= divisor;
  s.p99 /= divisor;
  s.p999 /= divisor;
  s.p9999 /= divisor;
  s.p99999 /= divisor;
  s.max /= divisor;
  return s;
}

hdr::Histogram make_latency_histogram() {
  return hdr::Histogram(1, 3600LL * 1000000000LL, 3);
}

Summary summarize(const hdr::Histogram& h) {
  Summary s;
  s.count = h.total_count();
  if (s.count == 0) return s;
  s.min = static_cast<double>(h.min());
  s.mean = h.mean();
  s.p50 = static_cast<double>(h.value_at_percentile(50));
  s.p90 = static_cast<double>(h.value_at_percentile(90));
  s.p99 = static_cast<double>(h.value_at_percentile(99));
  s.p999 = static_cast<double>(h.value_at_percentile(99.9));
  s.p9999 = static_cast<double>(h.value_at_percentile(99.99));
  s.p99999 = static_cast<double>(h.value_at_percentile(99.999));
  s.max = static_cast<double>(h.max());
  return s;
}

std::size_t nearest_rank_index(std::size_t n, double p) {
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(n));
  return std::clamp<std::size_t>(static_cast<std::size_t>(rank), 1, n) - 1;
}

double percentile_sorted(const std::vector<std::int64_t>& sorted, double p) {
  return static_cast<double>(nearest_rank_sorted(sorted, p));
}

Summary summarize_exact(std::vector<std::int64_t> values) {
  Summary s;
  s.count = static_cast<std::int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = static_cast<double>(values.front());
  s.max = static_cast<double>(values.back());
  long double sum = 0;
  for (auto v : values) sum += v;
  s.mean = static_cast<double>(sum / static_cast<long double>(values.size()));
  s.p50 = percentile_sorted(values, 50);
  s.p90 = percentile_sorted(values, 90);
  s.p99 = percentile_sorted(values, 99);
  s.p999 = percentile_sorted(values, 99.9);
  s.p9999 = percentile_sorted(values, 99.99);
  s.p99999 = percentile_sorted(values, 99.999);
  return s;
}

}  // namespace shootdown
