// SPDX-License-Identifier: Apache-2.0
// Where a victim's samples end up. The victim writes into a small circular
// ring; a drainer thread (on the culprit's CPU, never on a victim's) copies
// what the victim published into this store. The store grows in fixed blocks
// of 1 Mi samples (4 MiB), each mapped and pre-faulted by the drainer when
// it is needed and never moved or freed during the run: freeing memory inside
// the counted span would send TLB flushes of our own to the victims. So the
// length of a run is bounded by the store's limit (memory), not by a ring
// sized in advance from a guessed duration.
//
// Compaction: a store made with `recycle` keeps whole blocks of
// the limit mapped, and when full can drop any held block but the newest
// (drop_block) to reuse its memory for new samples: the caller summarizes
// what it drops first, and chooses which (core/compaction.hpp keeps the
// blocks around releases). Sample indices stay global (the number of the
// sample since the victim started); the blocks still held are listed in
// order by held_blocks(), with gaps where blocks were dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "experiment/arena.hpp"

namespace shootdown::exp {

class SampleStore {
 public:
  static constexpr std::size_t kBlockShift = 20;
  static constexpr std::size_t kBlockSamples = std::size_t{1} << kBlockShift;

  // A held block: global block number (its samples are [block << kBlockShift,
  // +kBlockSamples)) and the slot whose memory holds it.
  struct Held {
    std::size_t block;
    std::size_t slot;
  };

  SampleStore() = default;
  // Reserves the block table for `max_samples` (no reallocation later) and
  // maps the first block. Throws std::runtime_error when it cannot be mapped.
  // recycle: drop_block() may free a block for reuse (only when the limit
  // spans two blocks at least; recycling() says).
  SampleStore(std::size_t max_samples, int numa_node, bool recycle = false);

  // Appends up to n samples and returns how many: fewer when the limit is
  // reached or a new block cannot be mapped (then full() and why() say so).
  std::size_t append(const std::uint32_t* p, std::size_t n) noexcept;

  // Samples appended so far (global count, dropped ones included).
  std::size_t size() const noexcept { return size_; }
  // The oldest sample still held (size() when none is).
  std::size_t first() const noexcept { return held_.empty() ? size_ : held_.front().block << kBlockShift; }
  std::size_t max_samples() const noexcept { return max_; }
  // Block slots (the most blocks held at once).
  std::size_t slots() const noexcept { return slots_; }
  bool full() const noexcept { return full_; }
  const std::string& why() const noexcept { return why_; }
  // Sample i, which must be held.
  std::uint32_t operator[](std::size_t i) const noexcept;
  bool recycling() const noexcept { return recycle_; }
  // Samples held now.
  std::size_t held() const noexcept { return size_ - dropped_; }
  // Held blocks, oldest first; the last one takes the next samples.
  const std::vector<Held>& held_blocks() const noexcept { return held_; }
  // The samples of a held block (kBlockSamples of them, fewer in the last).
  const std::uint32_t* data(const Held& h) const noexcept {
    return reinterpret_cast<const std::uint32_t*>(blocks_[h.slot].data());
  }
  // True when a block may be dropped (a recycling store holding two blocks).
  bool can_drop() const noexcept { return recycle_ && held_.size() >= 2 && held() >= 2 * kBlockSamples; }
  // Forgets held block k (never the last one); its memory takes the next
  // samples. Clears full() when it was set by the limit.
  void drop_block(std::size_t k) noexcept;
  // The oldest block and its removal (drop_block(0)).
  const std::uint32_t* front_block() const noexcept { return data(held_.front()); }
  void drop_front_block() noexcept { drop_block(0); }

 private:
  bool next_block() noexcept;  // a slot for block size_ >> kBlockShift: a free one, or a new mapping

  std::vector<Chunk> blocks_;      // by slot; capacity reserved up front
  std::vector<Held> held_;         // capacity slots_
  std::vector<std::size_t> free_;  // dropped slots, capacity slots_
  std::size_t size_ = 0;
  std::size_t dropped_ = 0;  // samples of the dropped blocks
  std::size_t max_ = 0;      // samples held at most (held())
  std::size_t slots_ = 1;    // block slots (blocks_.capacity())
  bool recycle_ = false;
  int node_ = 0;
  bool full_ = false;
  std::string why_;
};

}  // namespace shootdown::exp
