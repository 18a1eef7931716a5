// Where a victim's samples end up. The victim writes into a small circular
// ring; a drainer thread (on the culprit's CPU, never on a victim's) copies
// what the victim published into this store. The store grows in fixed blocks
// of 1 Mi samples (4 MiB), each mapped and pre-faulted by the drainer when
// it is needed and never moved or freed during the run: freeing memory inside
// the counted span would send TLB flushes of our own to the victims. So the
// length of a run is bounded by the store's limit (memory), not by a ring
// sized in advance from a guessed duration.
//
// Compaction (issue 19): a store made with `recycle` keeps whole blocks of
// the limit mapped, and when full can drop its oldest block
// (drop_front_block) to reuse that block's memory for new samples: the
// caller summarizes what it drops first. Sample indices stay global (the
// number of the sample since the victim started); first() is the oldest
// still held.
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

  SampleStore() = default;
  // Reserves the block table for `max_samples` (no reallocation later) and
  // maps the first block. Throws std::runtime_error when it cannot be mapped.
  // recycle: drop_front_block() may free the oldest block for reuse (only
  // when the limit spans two blocks at least; recycling() says).
  SampleStore(std::size_t max_samples, int numa_node, bool recycle = false);

  // Appends up to n samples and returns how many: fewer when the limit is
  // reached or a new block cannot be mapped (then full() and why() say so).
  std::size_t append(const std::uint32_t* p, std::size_t n) noexcept;

  // Samples appended so far (global count, dropped ones included).
  std::size_t size() const noexcept { return size_; }
  // The oldest sample still held: [first(), size()) are readable.
  std::size_t first() const noexcept { return first_; }
  std::size_t max_samples() const noexcept { return max_; }
  bool full() const noexcept { return full_; }
  const std::string& why() const noexcept { return why_; }
  std::uint32_t operator[](std::size_t i) const noexcept {
    return reinterpret_cast<const std::uint32_t*>(blocks_[(i >> kBlockShift) % slots_].data())[i & (kBlockSamples - 1)];
  }
  bool recycling() const noexcept { return recycle_; }
  // Samples held now.
  std::size_t held() const noexcept { return size_ - first_; }
  // True when drop_front_block() may run (a recycling store holding two blocks).
  bool can_drop() const noexcept { return recycle_ && size_ - first_ >= kBlockSamples * 2; }
  // The oldest block's samples (kBlockSamples of them, from first()).
  const std::uint32_t* front_block() const noexcept {
    return reinterpret_cast<const std::uint32_t*>(blocks_[(first_ >> kBlockShift) % slots_].data());
  }
  // Forgets the oldest block; its memory takes the next samples. Clears
  // full() when it was set by the limit.
  void drop_front_block() noexcept;

 private:
  bool grow() noexcept;

  std::vector<Chunk> blocks_;  // capacity reserved up front
  std::size_t size_ = 0;
  std::size_t first_ = 0;
  std::size_t max_ = 0;     // samples held at most (size_ - first_)
  std::size_t slots_ = 1;   // block slots (blocks_.capacity()); block g lives in slot g % slots_
  bool recycle_ = false;
  int node_ = 0;
  bool full_ = false;
  std::string why_;
};

}  // namespace shootdown::exp
