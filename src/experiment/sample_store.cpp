// SPDX-License-Identifier: Apache-2.0
#include "experiment/sample_store.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace shootdown::exp {

SampleStore::SampleStore(std::size_t max_samples, int numa_node, bool recycle)
    : max_(max_samples), recycle_(recycle), node_(numa_node) {
  // A recycling store needs two blocks at least (one to drop, one to keep);
  // below that it behaves as a plain one. The limit stays as given: the
  // slots hold ceil(limit / block) blocks, as the plain store maps.
  slots_ = (max_samples + kBlockSamples - 1) / kBlockSamples;
  recycle_ = recycle && max_samples >= 2 * kBlockSamples;
  if (!recycle_) ++slots_;
  blocks_.reserve(slots_);
  held_.reserve(slots_);
  free_.reserve(slots_);
  if (!next_block()) throw RuntimeError("sample store: " + why_);
}

std::uint32_t SampleStore::operator[](std::size_t i) const noexcept {
  const std::size_t g = i >> kBlockShift;
  const auto it =
      std::lower_bound(held_.begin(), held_.end(), g, [](const Held& h, std::size_t b) { return h.block < b; });
  return data(*it)[i & (kBlockSamples - 1)];
}

void SampleStore::drop_block(std::size_t k) noexcept {
  if (!can_drop() || k + 1 >= held_.size()) return;
  free_.push_back(held_[k].slot);  // within the reserved capacity: one entry per slot at most
  held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(k));
  dropped_ += kBlockSamples;
  if (full_ && held() < max_) {  // the limit, or a block that could not be mapped: a slot is free now
    full_ = false;
    why_.clear();
  }
}

bool SampleStore::next_block() noexcept {
  const std::size_t g = size_ >> kBlockShift;
  if (!free_.empty()) {
    held_.push_back(Held{g, free_.back()});
    free_.pop_back();
    return true;
  }
  if (blocks_.size() >= slots_) {  // never reallocate the table during a run
    full_ = true;
    why_ = "block table exhausted";
    return false;
  }
  try {
    Chunk c(kBlockSamples * sizeof(std::uint32_t), PageMode::k4k, Allocator::kMmap, node_);
    c.prefault();
    blocks_.push_back(std::move(c));
  } catch (const std::exception& e) {
    full_ = true;
    why_ = std::string("cannot map another ") + format_size(static_cast<std::int64_t>(kBlockSamples * 4)) +
           " block: " + e.what();
    return false;
  }
  held_.push_back(Held{g, blocks_.size() - 1});
  return true;
}

std::size_t SampleStore::append(const std::uint32_t* p, std::size_t n) noexcept {
  std::size_t done = 0;
  while (done < n && !full_) {
    if (held() == max_) {
      full_ = true;
      why_ = "the limit of " + std::to_string(max_) + " samples (" +
             format_size(static_cast<std::int64_t>(max_ * sizeof(std::uint32_t))) + ") per victim is reached";
      break;
    }
    const std::size_t off = size_ & (kBlockSamples - 1);
    if (off == 0 && (held_.empty() || held_.back().block != size_ >> kBlockShift) && !next_block()) break;
    const std::size_t k = std::min({n - done, kBlockSamples - off, max_ - held()});
    std::memcpy(const_cast<std::uint32_t*>(data(held_.back())) + off, p + done, k * sizeof(std::uint32_t));
    size_ += k;
    done += k;
  }
  return done;
}

}  // namespace shootdown::exp
