#include "core/hdr/histogram.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace shootdown::hdr {

namespace {
std::int32_t floor_log2(std::int64_t v) { return 63 - __builtin_clzll(static_cast<std::uint64_t>(v)); }
}  // namespace

Histogram::Histogram(std::int64_t lowest_discernible, std::int64_t highest_trackable, int significant_figures)
    : lowest_(lowest_discernible), highest_trackable_(highest_trackable), sig_figs_(significant_figures) {
  if (lowest_ < 1) throw std::invalid_argument("hdr: lowest discernible value must be >= 1");
  if (highest_trackable_ < 2 * lowest_)
    throw std::invalid_argument("hdr: highest trackable value must be >= 2 * lowest discernible value");
  if (sig_figs_ < 0 || sig_figs_ > 5) throw std::invalid_argument("hdr: significant figures must be in [0, 5]");

  const std::int64_t largest_single_unit = 2 * static_cast<std::int64_t>(std::pow(10.0, sig_figs_));
  const auto sub_bucket_count_magnitude =
      static_cast<std::int32_t>(std::ceil(std::log2(static_cast<double>(largest_single_unit))));
  sub_bucket_half_count_magnitude_ = (sub_bucket_count_magnitude > 1 ? sub_bucket_count_magnitude : 1) - 1;
  unit_magnitude_ = floor_log2(lowest_);
  if (unit_magnitude_ + sub_bucket_half_count_magnitude_ > 61)
    throw std::invalid_argument("hdr: lowest discernible value too large for the precision");
  sub_bucket_count_ = 1 << (sub_bucket_half_count_magnitude_ + 1);
  sub_bucket_half_count_ = sub_bucket_count_ / 2;
  sub_bucket_mask_ = static_cast<std::uint64_t>(sub_bucket_count_ - 1) << unit_magnitude_;

  // Buckets needed to cover highest_trackable (spec: smallest untrackable
  // value doubles per bucket).
  std::int64_t smallest_untrackable = static_cast<std::int64_t>(sub_bucket_count_) << unit_magnitude_;
  std::int32_t buckets = 1;
  while (smallest_untrackable <= highest_trackable_) {
    if (smallest_untrackable > std::numeric_limits<std::int64_t>::max() / 2) {
      ++buckets;
      break;
    }
    smallest_untrackable <<= 1;
    ++buckets;
  }
  bucket_count_ = buckets;
  counts_len_ = (bucket_count_ + 1) * (sub_bucket_count_ / 2);
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
  long double sum = 0;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    const std::int64_t c = counts_[static_cast<std::size_t>(i)];
    if (c != 0) sum += static_cast<long double>(median_equivalent(value_from_index(i))) * c;
  }
  return static_cast<double>(sum / total_);
}

double Histogram::stddev() const noexcept {
  if (total_ == 0) return 0.0;
  const double m = mean();
  long double geo = 0;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    const std::int64_t c = counts_[static_cast<std::size_t>(i)];
    if (c != 0) {
      const double d = static_cast<double>(median_equivalent(value_from_index(i))) - m;
      geo += static_cast<long double>(d) * d * c;
    }
  }
  return std::sqrt(static_cast<double>(geo / total_));
}

std::int64_t Histogram::value_at_percentile(double p) const noexcept {
  if (total_ == 0) return 0;
  const double requested = std::min(std::max(p, 0.0), 100.0);
  const double fp_count = (requested / 100.0) * static_cast<double>(total_);
  auto count_at = static_cast<std::int64_t>(std::ceil(fp_count));
  if (count_at < 1) count_at = 1;
  std::int64_t running = 0;
  for (std::int32_t i = 0; i < counts_len_; ++i) {
    running += counts_[static_cast<std::size_t>(i)];
    if (running >= count_at) {
      const std::int64_t v = value_from_index(i);
      return requested == 0.0 ? lowest_equivalent(v) : highest_equivalent(v);
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
