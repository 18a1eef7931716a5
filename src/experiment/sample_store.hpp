// Where a victim's samples end up. The victim writes into a small circular
// ring; a drainer thread (on the culprit's CPU, never on a victim's) copies
// what the victim published into this store. The store grows in fixed blocks
// of 4 Mi samples (16 MiB), each mapped and pre-faulted by the drainer when
// it is needed and never moved or freed during the run: freeing memory inside
// the counted span would send TLB flushes of our own to the victims. So the
// length of a run is bounded by the store's limit (memory), not by a ring
// sized in advance from a guessed duration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "experiment/arena.hpp"

namespace shootdown::exp {

class SampleStore {
 public:
  static constexpr std::size_t kBlockShift = 22;
  static constexpr std::size_t kBlockSamples = std::size_t{1} << kBlockShift;

  SampleStore() = default;
  // Reserves the block table for `max_samples` (no reallocation later) and
  // maps the first block. Throws std::runtime_error when it cannot be mapped.
  SampleStore(std::size_t max_samples, int numa_node);

  // Appends up to n samples and returns how many: fewer when the limit is
  // reached or a new block cannot be mapped (then full() and why() say so).
  std::size_t append(const std::uint32_t* p, std::size_t n) noexcept;

  std::size_t size() const noexcept { return size_; }
  std::size_t max_samples() const noexcept { return max_; }
  bool full() const noexcept { return full_; }
  const std::string& why() const noexcept { return why_; }
  std::uint32_t operator[](std::size_t i) const noexcept {
    return reinterpret_cast<const std::uint32_t*>(blocks_[i >> kBlockShift].data())[i & (kBlockSamples - 1)];
  }

 private:
  bool grow() noexcept;

  std::vector<Chunk> blocks_;  // capacity reserved up front
  std::size_t size_ = 0;
  std::size_t max_ = 0;
  int node_ = 0;
  bool full_ = false;
  std::string why_;
};

}  // namespace shootdown::exp
