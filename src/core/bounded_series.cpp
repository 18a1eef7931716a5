// SPDX-License-Identifier: Apache-2.0
#include "core/bounded_series.hpp"

#include <algorithm>
#include <iterator>

namespace shootdown {

BoundedSeries::BoundedSeries(std::size_t max_keys, std::size_t width, std::int64_t idle_ns, std::int64_t decay_ns)
    : max_keys_(max_keys), width_(width), idle_ns_(idle_ns), decay_ns_(decay_ns), other_(width, 0) {}

void BoundedSeries::decay(std::int64_t now_ns) {
  if (last_decay_ns_ < 0 || decay_ns_ <= 0) {
    last_decay_ns_ = now_ns;
    return;
  }
  int halvings = 0;
  while (now_ns - last_decay_ns_ >= decay_ns_ && halvings < 64) {
    last_decay_ns_ += decay_ns_;
    ++halvings;
  }
  if (halvings == 64) last_decay_ns_ = now_ns;
  if (halvings == 0) return;
  const double f = 1.0 / static_cast<double>(1ULL << std::min(halvings, 62));
  for (auto& e : slots_) e.recent *= f;
  for (auto it = candidates_.begin(); it != candidates_.end();) {
    it->second.weight *= f;
    it->second.error *= f;
    it = it->second.weight < 0.5 ? candidates_.erase(it) : std::next(it);
  }
}

void BoundedSeries::take_slot(std::size_t slot, const std::string& key, const std::vector<std::int64_t>& row,
                              std::int64_t weight, std::int64_t now_ns, const std::vector<std::string>& attrs) {
  if (slot == slots_.size()) {
    slots_.emplace_back();
  } else {
    index_.erase(slots_[slot].key);
    ++evictions_;
  }
  Entry& e = slots_[slot];
  e.key = key;
  e.attrs = attrs;
  e.counts = row;
  e.last_ns = now_ns;
  e.recent = static_cast<double>(weight);
  index_[key] = slot;
  candidates_.erase(key);
}

void BoundedSeries::add(const std::string& key, std::size_t column, std::int64_t n, std::int64_t now_ns,
                        const std::vector<std::string>& attrs) {
  if (column >= width_) return;
  std::vector<std::int64_t> row(width_, 0);
  row[column] = n;
  add_row(key, row, n, now_ns, attrs);
}

void BoundedSeries::add_row(const std::string& key, const std::vector<std::int64_t>& row, std::int64_t weight,
                            std::int64_t now_ns, const std::vector<std::string>& attrs) {
  if (row.size() != width_) return;
  decay(now_ns);
  auto add_to = [&](std::vector<std::int64_t>& counts) {
    for (std::size_t i = 0; i < width_; ++i) counts[i] += row[i];
  };
  auto it = index_.find(key);
  if (it != index_.end()) {
    Entry& e = slots_[it->second];
    add_to(e.counts);
    e.last_ns = now_ns;
    e.recent += static_cast<double>(weight);
    return;
  }
  if (slots_.size() < max_keys_) {
    take_slot(slots_.size(), key, row, weight, now_ns, attrs);
    return;
  }
  if (max_keys_ == 0) {
    add_to(other_);
    return;
  }
  // Full. An idle slot (the longest idle) goes to the new key at once.
  std::size_t idle = max_keys_, weakest = 0;
  std::int64_t oldest = now_ns - idle_ns_;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].last_ns <= oldest) {
      oldest = slots_[i].last_ns;
      idle = i;
    }
    if (slots_[i].recent < slots_[weakest].recent) weakest = i;
  }
  if (idle != max_keys_) {
    take_slot(idle, key, row, weight, now_ns, attrs);
    return;
  }
  // Otherwise count in other, and promote the key once it clearly outweighs
  // the weakest slot. Candidates are a Space-Saving sketch: a new key
  // replaces the lightest and inherits its weight, so a heavy hitter cannot
  // be crowded out by many light keys.
  auto c = candidates_.find(key);
  if (c == candidates_.end()) {
    double inherited = 0;
    if (candidates_.size() >= 4 * max_keys_) {
      auto lightest = candidates_.begin();
      for (auto i = candidates_.begin(); i != candidates_.end(); ++i)
        if (i->second.weight < lightest->second.weight) lightest = i;
      inherited = lightest->second.weight;
      candidates_.erase(lightest);
    }
    c = candidates_.emplace(key, Candidate{inherited, inherited}).first;
  }
  c->second.weight += static_cast<double>(weight);
  const double guaranteed = c->second.weight - c->second.error;
  if (guaranteed > 2 * slots_[weakest].recent + 1) {
    // This add's n goes to the new series (a batch of counts read from the
    // kernel, monitor's BPF engine, is one add): only what came before stays in other.
    take_slot(weakest, key, row, weight, now_ns, attrs);  // erases the candidate
    slots_[weakest].recent = guaranteed;
    return;
  }
  add_to(other_);
}

}  // namespace shootdown
