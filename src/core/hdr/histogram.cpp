// SPDX-License-Identifier: Apache-2.0
#include "core/hdr/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace shootdown::hdr {

namespace {
std::int32_t floor_log2(std::int64_t v) {
  return 63 - __builtin_clzll(static_cast<std::uint64_t>(v));
}
}  // namespace

namespace {
struct Layout {
  std::int32_t unit_magnitude = 0;
  std::int32_t sub_bucket_half_count_magnitude = 0;
  std::int32_t sub_bucket_count = 0;
  std::int32_t bucket_count = 0;
  std::int64_t counts_len = 0;
};

// The bucket layout of the spec; nullptr-free: returns false for an
// impossible configuration (message in *why).
bool compute_layout(std::int64_t lowest, std::int64_t highest, int sig_figs, Layout& out, const char** why) {
  if (lowest < 1) {
    *why = "hdr: lowest discernible value must be >= 1";
    return false;
  }
  if (highest / 2 < lowest) {
    *why = "hdr: highest trackable value must be >= 2 * lowest discernible value";
    return false;
  }
  if (sig_figs < 0 || sig_figs > 5) {
    *why = "hdr: significant figures must be in [0, 5]";
    return false;
  }
  const std::int64_t largest_single_unit = 2 * static_cast<std::int64_t>(std::pow(10.0, sig_figs));
  const auto sub_bucket_count_magnitude =
      static_cast<std::int32_t>(std::ceil(std::log2(static_cast<double>(largest_single_unit))));
  out.sub_bucket_half_count_magnitude = (sub_bucket_count_magnitude > 1 ? sub_bucket_count_magnitude : 1) - 1;
  // Exact floor(log2(lowest)); the Java reference computes it in floating
  // point, which agrees for every lowest that is not within one ulp below a
  // power of two.
  out.unit_magnitude = floor_log2(lowest);
  if (out.unit_magnitude + out.sub_bucket_half_count_magnitude > 61) {
    *why = "hdr: lowest discernible value too large for the precision";
    return false;
  }
  out.sub_bucket_count = 1 << (out.sub_bucket_half_count_magnitude + 1);
  // Buckets needed to cover highest_trackable (spec: smallest untrackable
  // value doubles per bucket).
  std::int64_t smallest_untrackable = static_cast<std::int64_t>(out.sub_bucket_count) << out.unit_magnitude;
  std::int32_t buckets = 1;
  while (smallest_untrackable <= highest) {
    if (smallest_untrackable > std::numeric_limits<std::int64_t>::max() / 2) {
      ++buckets;
      break;
    }
    smallest_untrackable <<= 1;
    ++buckets;
  }
  out.bucket_count = buckets;
  out.counts_len = static_cast<std::int64_t>(buckets + 1) * (out.sub_bucket_count / 2);
  return true;
}
}  // namespace

std::int64_t Histogram::counts_length_for(std::int64_t lowest_discernible, std::int64_t highest_trackable,
                                          int significant_figures) noexcept {
  Layout layout;
  const char* why = nullptr;
  if (!compute_layout(lowest_discernible, highest_trackable, significant_figures, layout, &why)) return 0;
  return layout.counts_len;
}

Histogram::Histogram(std::int64_t lowest_discernible, std::int64_t highest_trackable, int significant_figures)
    : lowest_(lowest_discernible), highest_trackable_(highest_trackable), sig_figs_(significant_figures) {
  Layout layout;
  const char* why = nullptr;
  if (!compute_layout(lowest_, highest_trackable_, sig_figs_, layout, &why)) throw std::invalid_argument(why);
  unit_magnitude_ = layout.unit_magnitude;
  sub_bucket_half_count_magnitude_ = layout.sub_bucket_half_count_magnitude;
  sub_bucket_count_ = layout.sub_bucket_count;
  sub_bucket_half_count_ = sub_bucket_count_ / 2;
  sub_bucket_mask_ = static_cast<std::uint64_t>(sub_bucket_count_ - 1) << unit_magnitude_;
  bucket_count_ = layout.bucket_count;
  counts_len_ = static_cast<std::int32_t>(layout.counts_len);
  counts_.assign(static_cast<std::size_t>(counts_len_), 0);
}

void Histogram::record_n(std::int64_t value, std::int64_t n) noexcept {
  if (n <= 0) return;
  if (value < 0) value = 0;
  if (value > highest_trackable_) {
    value = highest_trackable_;
    saturated_ += n;
  }
  counts_[static_cast<std::size_t>(counts_index_for(value))] += n;
  total_ += n;
  if (value > max_value_) max_value_ = value;
  if (value != 0 && value < min_non_zero_) min_non_zero_ = value;
}

void Histogram::reset() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  saturated_ = 0;
  max_value_ = 0;
  min_non_zero_ = INT64_MAX;
}

void Histogram::add(const Histogram& other) {
  if (same_layout(other)) {
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    saturated_ += other.saturated_;
    if (other.total_ > 0) {
      if (other.max_value_ > max_value_) max_value_ = other.max_value_;
      if (other.min_non_zero_ < min_non_zero_) min_non_zero_ = other.min_non_zero_;
    }
    return;
  }
  for (std::int32_t i = 0; i < other.counts_len_; ++i) {
    const std::int64_t c = other.count_at_index(i);
    if (c != 0) record_n(other.value_from_index(i), c);
  }
  saturated_ += other.saturated_;
}

std::int64_t Histogram::value_from_index(std::int32_t index) const noexcept {
  std::int32_t bucket = (index >> sub_bucket_half_count_magnitude_) - 1;
  std::int32_t sub = (index & (sub_bucket_half_count_ - 1)) + sub_bucket_half_count_;
  if (bucket < 0) {
    sub -= sub_bucket_half_count_;
    bucket = 0;
  }
  return value_from(bucket, sub);
}

std::int64_t Histogram::size_of_equivalent_range(std::int64_t value) const noexcept {
  const std::int32_t bucket = bucket_index(value);
  const std::int32_t sub = sub_bucket_index(value, bucket);
  const std::int32_t adjusted = (sub >= sub_bucket_count_) ? bucket + 1 : bucket;
  return std::int64_t{1} << (unit_magnitude_ + adjusted);
}

std::int64_t Histogram::lowest_equivalent(std::int64_t value) const noexcept {
  const std::int32_t bucket = bucket_index(value);
  const std::int32_t sub = sub_bucket_index(value, bucket);
  return value_from(bucket, sub);
}

std::int64_t Histogram::next_non_equivalent(std::int64_t value) const noexcept {
  return lowest_equivalent(value) + size_of_equivalent_range(value);
}

std::int64_t Histogram::highest_equivalent(std::int64_t value) const noexcept {
  return next_non_equivalent(value) - 1;
}

std::int64_t Histogram::median_equivalent(std::int64_t value) const noexcept {
  return lowest_equivalent(value) + (size_of_equivalent_range(value) >> 1);
}

std::int64_t Histogram::min() const noexcept {
  if (total_ == 0) return 0;
  if (counts_[0] > 0 || min_non_zero_ == INT64_MAX) return 0;
  return lowest_equivalent(min_non_zero_);
}

std::int64_t Histogram::max() const noexcept {
  if (max_value_ == 0) return 0;
  return highest_equivalent(max_value_);
}

double Histogram::mean() const noexcept {
  if (total_ == 0) return 0.0;
  // Same arithmetic as the Java reference so that .hgrm output matches it
  // digit for digit: double products, summed in index order.
  double sum = 0;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    const std::int64_t c = counts_[static_cast<std::size_t>(i)];
    if (c != 0) sum += static_cast<double>(median_equivalent(value_from_index(i))) * static_cast<double>(c);
  }
  return sum / static_cast<double>(total_);
}

double Histogram::stddev() const noexcept {
  if (total_ == 0) return 0.0;
  const double m = mean();
  double geo = 0;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    const std::int64_t c = counts_[static_cast<std::size_t>(i)];
    if (c != 0) {
      const double d = static_cast<double>(median_equivalent(value_from_index(i))) - m;
      geo += d * d * static_cast<double>(c);
    }
  }
  return std::sqrt(geo / static_cast<double>(total_));
}

std::int64_t Histogram::value_at_percentile(double p) const noexcept {
  if (total_ == 0) return 0;
  // One ulp down first: 99.9 is stored as 99.900000000000006, and
  // ceil(99.900000000000006 * 1000 / 100) would ask for the 1000th of 1000
  // values instead of the 999th.
  const double requested = std::min(std::max(std::nextafter(p, -std::numeric_limits<double>::infinity()), 0.0), 100.0);
  const double fp_count = requested * static_cast<double>(total_) / 100.0;
  // NaN asks for the first recorded value (Java: (long) NaN == 0).
  auto count_at = std::isnan(fp_count) ? 0 : static_cast<std::int64_t>(std::ceil(fp_count));
  if (count_at < 1) count_at = 1;
  std::int64_t running = 0;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    running += counts_[static_cast<std::size_t>(i)];
    if (running >= count_at) {
      const std::int64_t v = value_from_index(i);
      return p == 0.0 ? lowest_equivalent(v) : highest_equivalent(v);
    }
  }
  return 0;
}

std::int64_t Histogram::count_at_value(std::int64_t value) const noexcept {
  if (value < 0 || value > highest_trackable_) return 0;
  return counts_[static_cast<std::size_t>(counts_index_for(value))];
}

void Histogram::set_count_at_index(std::int32_t index, std::int64_t count) noexcept {
  counts_[static_cast<std::size_t>(index)] = count;
}

void Histogram::recompute_totals() noexcept {
  total_ = 0;
  max_value_ = 0;
  min_non_zero_ = INT64_MAX;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    const std::int64_t c = counts_[static_cast<std::size_t>(i)];
    if (c == 0) continue;
    total_ += c;
    const std::int64_t v = value_from_index(i);
    if (v > max_value_) max_value_ = v;
    if (v != 0 && v < min_non_zero_) min_non_zero_ = v;
  }
}

bool Histogram::operator==(const Histogram& o) const noexcept {
  if (total_ != o.total_) return false;
  if (same_layout(o)) return counts_ == o.counts_;
  return false;
}

}  // namespace shootdown::hdr
