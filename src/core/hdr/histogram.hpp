// SPDX-License-Identifier: Apache-2.0
// HdrHistogram, implemented from the published specification (bucket layout,
// value equivalence, percentile rule of the Java reference implementation).
// Pure: no I/O, no system headers. record() is allocation-free and branch-light
// so the victim's hot loop can call it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace shootdown::hdr {

class Histogram {
 public:
  // Throws std::invalid_argument on an impossible configuration:
  // lowest >= 1, highest >= 2 * lowest, 0 <= significant_figures <= 5.
  Histogram(std::int64_t lowest_discernible, std::int64_t highest_trackable, int significant_figures);

  // Length of the counts array the constructor would allocate for this
  // configuration, or 0 when the configuration is impossible. Lets decoders
  // cap memory before trusting header fields from a file.
  static std::int64_t counts_length_for(std::int64_t lowest_discernible, std::int64_t highest_trackable,
                                        int significant_figures) noexcept;

  // Records one value. Values above highest_trackable are clamped to it and
  // counted in saturated_count() (a measurement tool must never drop a sample);
  // negative values are clamped to 0.
  void record(std::int64_t value) noexcept {
    if (value < 0) value = 0;
    if (value > highest_trackable_) {
      value = highest_trackable_;
      ++saturated_;
    }
    counts_[static_cast<std::size_t>(counts_index_for(value))] += 1;
    ++total_;
    if (value > max_value_) max_value_ = value;
    if (value != 0 && value < min_non_zero_) min_non_zero_ = value;
  }
  void record_n(std::int64_t value, std::int64_t n) noexcept;
  void reset() noexcept;
  // Adds every count of other (any configuration; values re-bucketed through
  // their equivalent value when layouts differ).
  void add(const Histogram& other);

  std::int64_t total_count() const noexcept { return total_; }
  std::int64_t saturated_count() const noexcept { return saturated_; }
  // Java semantics: min = lowest equivalent of the smallest value (0 if any 0
  // was recorded), max = highest equivalent of the largest value.
  std::int64_t min() const noexcept;
  std::int64_t max() const noexcept;
  // Raw extremes as recorded (not rounded to bucket edges).
  std::int64_t max_recorded() const noexcept { return max_value_; }
  std::int64_t min_non_zero_recorded() const noexcept { return total_ ? min_non_zero_ : 0; }
  double mean() const noexcept;
  double stddev() const noexcept;
  // Java semantics (HdrHistogram 2.1.11): mean and stddev use each bucket's
  // median equivalent value, accumulated in double in index order.
  // value at percentile p (0..100): highest equivalent value of the first
  // bucket whose cumulative count reaches max(1, ceil(p * N / 100)), where p is
  // first moved one ulp towards -inf so that decimal p such as 99.9 does not
  // round up past an exact count; for p == 0 the lowest equivalent value.
  // 0 for an empty histogram.
  std::int64_t value_at_percentile(double p) const noexcept;
  std::int64_t count_at_value(std::int64_t value) const noexcept;

  std::int64_t lowest_equivalent(std::int64_t value) const noexcept;
  std::int64_t highest_equivalent(std::int64_t value) const noexcept;
  std::int64_t median_equivalent(std::int64_t value) const noexcept;
  std::int64_t size_of_equivalent_range(std::int64_t value) const noexcept;
  std::int64_t next_non_equivalent(std::int64_t value) const noexcept;
  bool values_are_equivalent(std::int64_t a, std::int64_t b) const noexcept {
    return lowest_equivalent(a) == lowest_equivalent(b);
  }

  std::int32_t counts_index_for(std::int64_t value) const noexcept {
    const std::int32_t bucket = bucket_index(value);
    const std::int32_t sub = sub_bucket_index(value, bucket);
    return counts_index(bucket, sub);
  }
  std::int64_t value_from_index(std::int32_t index) const noexcept;
  std::int32_t counts_length() const noexcept { return counts_len_; }
  std::int64_t count_at_index(std::int32_t index) const noexcept { return counts_[static_cast<std::size_t>(index)]; }
  std::span<const std::int64_t> counts() const noexcept { return counts_; }
  // For decoders: set a raw count at an index and recompute totals afterwards.
  void set_count_at_index(std::int32_t index, std::int64_t count) noexcept;
  void recompute_totals() noexcept;

  std::int64_t lowest_discernible() const noexcept { return lowest_; }
  std::int64_t highest_trackable() const noexcept { return highest_trackable_; }
  int significant_figures() const noexcept { return sig_figs_; }
  std::int32_t unit_magnitude() const noexcept { return unit_magnitude_; }
  std::int32_t sub_bucket_count() const noexcept { return sub_bucket_count_; }
  std::int32_t bucket_count() const noexcept { return bucket_count_; }

  bool same_layout(const Histogram& o) const noexcept {
    return lowest_ == o.lowest_ && highest_trackable_ == o.highest_trackable_ && sig_figs_ == o.sig_figs_;
  }
  bool operator==(const Histogram& o) const noexcept;

 private:
  std::int32_t bucket_index(std::int64_t value) const noexcept {
    // Smallest power of two containing value (or the first bucket's mask).
    const int pow2ceiling = 64 - __builtin_clzll(static_cast<std::uint64_t>(value) | sub_bucket_mask_);
    return pow2ceiling - unit_magnitude_ - (sub_bucket_half_count_magnitude_ + 1);
  }
  std::int32_t sub_bucket_index(std::int64_t value, std::int32_t bucket) const noexcept {
    return static_cast<std::int32_t>(static_cast<std::uint64_t>(value) >> (bucket + unit_magnitude_));
  }
  std::int32_t counts_index(std::int32_t bucket, std::int32_t sub) const noexcept {
    const std::int32_t base = (bucket + 1) << sub_bucket_half_count_magnitude_;
    return base + (sub - sub_bucket_half_count_);
  }
  std::int64_t value_from(std::int32_t bucket, std::int32_t sub) const noexcept {
    return static_cast<std::int64_t>(sub) << (bucket + unit_magnitude_);
  }

  std::int64_t lowest_;
  std::int64_t highest_trackable_;
  int sig_figs_;
  std::int32_t unit_magnitude_ = 0;
  std::int32_t sub_bucket_half_count_magnitude_ = 0;
  std::int32_t sub_bucket_count_ = 0;
  std::int32_t sub_bucket_half_count_ = 0;
  std::uint64_t sub_bucket_mask_ = 0;
  std::int32_t bucket_count_ = 0;
  std::int32_t counts_len_ = 0;
  std::vector<std::int64_t> counts_;
  std::int64_t total_ = 0;
  std::int64_t saturated_ = 0;
  std::int64_t max_value_ = 0;
  std::int64_t min_non_zero_ = INT64_MAX;
};

}  // namespace shootdown::hdr
