// SPDX-License-Identifier: Apache-2.0
// Bounded label sets for exported counters (Prometheus series, Influx tags,
// JSON keys): at most `max_keys` named series plus one "other" series.
//
// A count goes to its key's series if the key has one; else to a free slot;
// else to "other". So every series, "other" included, only grows (a valid
// Prometheus counter) and the number of series never exceeds max_keys + 1.
// Which keys hold the slots follows the heavy hitters: every slot and every
// key counted in "other" (a candidate: a Space-Saving sketch of 4 x max_keys
// keys, so any key with more than a 1/(4 max_keys) share of "other" is kept)
// keeps a recent count, halved every decay_ns. A candidate whose guaranteed
// recent count (without what it inherited in the sketch) exceeds twice the
// smallest slot's plus one takes that slot: the evicted series disappears
// from the output (Prometheus marks it stale) and the new one starts from
// the count that promoted it (what the key had before stays in "other"). A
// slot without a count for idle_ns is reused at once. Pure, single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace shootdown {

inline constexpr const char* kOtherSeries = "other";

class BoundedSeries {
 public:
  struct Entry {
    std::string key;
    std::vector<std::string> attrs;    // set when the slot is given to the key (e.g. comm, cgroup)
    std::vector<std::int64_t> counts;  // `width` counters, cumulative since the slot was taken
    std::int64_t last_ns = 0;          // time of the last count
    double recent = 0;                 // decayed count, for eviction
  };

  BoundedSeries(std::size_t max_keys, std::size_t width, std::int64_t idle_ns,
                std::int64_t decay_ns = 10LL * 1000000000LL);

  // True if `key` has a slot (after this call, when it could get one).
  bool has(const std::string& key) const { return index_.count(key) != 0; }
  const Entry* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &slots_[it->second];
  }
  // Adds n to counter `column` of key's series, or of "other". `attrs` is
  // stored only when a slot is (re)assigned to the key.
  void add(const std::string& key, std::size_t column, std::int64_t n, std::int64_t now_ns,
           const std::vector<std::string>& attrs = {});
  // Adds a whole row (`width` values, e.g. a count and the time it took)
  // to one series, key's or "other", never split; `weight` (e.g. the count)
  // is what the heavy-hitter rule weighs.
  void add_row(const std::string& key, const std::vector<std::int64_t>& row, std::int64_t weight, std::int64_t now_ns,
               const std::vector<std::string>& attrs = {});

  const std::vector<Entry>& entries() const { return slots_; }  // slot order, not sorted
  const std::vector<std::int64_t>& other() const { return other_; }
  std::size_t max_keys() const { return max_keys_; }
  std::int64_t evictions() const { return evictions_; }

 private:
  void decay(std::int64_t now_ns);
  void take_slot(std::size_t slot, const std::string& key, const std::vector<std::int64_t>& row, std::int64_t weight,
                 std::int64_t now_ns, const std::vector<std::string>& attrs);

  std::size_t max_keys_, width_;
  std::int64_t idle_ns_, decay_ns_;
  std::int64_t last_decay_ns_ = -1;
  struct Candidate {
    double weight = 0;  // recent count, overestimated by up to `error`
    double error = 0;   // weight inherited from the key it replaced
  };
  std::unordered_map<std::string, Candidate> candidates_;  // keys counted in other (Space-Saving)
  std::vector<Entry> slots_;
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<std::int64_t> other_;
  std::int64_t evictions_ = 0;
};

}  // namespace shootdown
