// SPDX-License-Identifier: Apache-2.0
#include "core/hdr/hgrm.hpp"

#include <cmath>

#include "core/hdr/java_format.hpp"

namespace shootdown::hdr {

std::vector<PercentileTick> percentile_ticks(const Histogram& histogram, int ticks_per_half_distance) {
  std::vector<PercentileTick> ticks;
  const std::int64_t total = histogram.total_count();
  if (total <= 0) return ticks;
  const auto ticks_per_half = static_cast<std::int64_t>(ticks_per_half_distance < 1 ? 1 : ticks_per_half_distance);
  const std::int32_t len = histogram.counts_length();
  const auto total_d = static_cast<double>(total);

  double level = 0.0;
  std::int64_t running = 0;
  std::int32_t index = 0;
  bool fresh = true;
  // Walk buckets like the reference iterator: stay on a bucket while it keeps
  // satisfying successive levels, then move on.
  while (running < total && index < len) {
    const std::int64_t count = histogram.count_at_index(index);
    if (fresh) {
      running += count;
      fresh = false;
    }
    if (count != 0 && (100.0 * static_cast<double>(running)) / total_d >= level) {
      ticks.push_back({histogram.highest_equivalent(histogram.value_from_index(index)), level, running});
      // The same floating-point steps as the reference, so levels match bit for bit.
      const auto halvings = static_cast<std::int64_t>(std::log(100.0 / (100.0 - level)) / std::log(2.0));
      const auto reporting_ticks =
          ticks_per_half * static_cast<std::int64_t>(std::pow(2.0, static_cast<double>(halvings + 1)));
      level += 100.0 / static_cast<double>(reporting_ticks);
      continue;
    }
    ++index;
    fresh = true;
  }
  // The final step to 100% at the bucket where the count ran out.
  if (index < len) ticks.push_back({histogram.highest_equivalent(histogram.value_from_index(index)), 100.0, running});
  return ticks;
}

std::string format_percentile_distribution(const Histogram& histogram, int ticks_per_half_distance,
                                           double output_value_unit_ratio) {
  const int digits = histogram.significant_figures();
  std::string out;
  // "%12s %14s %10s %14s\n\n"
  out += "       Value     Percentile TotalCount 1/(1-Percentile)\n\n";
  for (const PercentileTick& t : percentile_ticks(histogram, ticks_per_half_distance)) {
    const double fraction = t.percentile / 100.0;
    // "%12.<d>f %2.12f %10d %14.2f\n", the 100% line without the last column.
    out += java_fixed(static_cast<double>(t.value) / output_value_unit_ratio, digits, 12);
    out += ' ';
    out += java_fixed(fraction, 12, 2);
    out += ' ';
    out += java_int(t.total_count, 10);
    if (t.percentile != 100.0) {
      out += ' ';
      out += java_fixed(1.0 / (1.0 - fraction), 2, 14);
    }
    out += '\n';
  }
  out += "#[Mean    = " + java_fixed(histogram.mean() / output_value_unit_ratio, digits, 12) +
         ", StdDeviation   = " + java_fixed(histogram.stddev() / output_value_unit_ratio, digits, 12) + "]\n";
  out += "#[Max     = " + java_fixed(static_cast<double>(histogram.max()) / output_value_unit_ratio, digits, 12) +
         ", Total count    = " + java_int(histogram.total_count(), 12) + "]\n";
  out += "#[Buckets = " + java_int(histogram.bucket_count(), 12) +
         ", SubBuckets     = " + java_int(histogram.sub_bucket_count(), 12) + "]\n";
  return out;
}

}  // namespace shootdown::hdr
