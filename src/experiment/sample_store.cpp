#include "experiment/sample_store.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>

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
  if (!grow()) throw std::runtime_error("sample store: " + why_);
}

void SampleStore::drop_front_block() noexcept {
  if (!can_drop()) return;
  first_ += kBlockSamples;
  if (full_ && blocks_.size() == slots_ && size_ - first_ < max_) {
    full_ = false;
    why_.clear();
  }
}

bool SampleStore::grow() noexcept {
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
  return true;
}

std::size_t SampleStore::append(const std::uint32_t* p, std::size_t n) noexcept {
  std::size_t done = 0;
  while (done < n && !full_) {
    if (size_ - first_ == max_) {
      full_ = true;
      why_ = "the limit of " + std::to_string(max_) + " samples (" +
             format_size(static_cast<std::int64_t>(max_ * sizeof(std::uint32_t))) + ") per victim is reached";
      break;
    }
    const std::size_t off = size_ & (kBlockSamples - 1);
    if (off == 0 && (size_ >> kBlockShift) % slots_ == blocks_.size() && !grow()) break;
    const std::size_t k = std::min({n - done, kBlockSamples - off, max_ - (size_ - first_)});
    std::memcpy(reinterpret_cast<std::uint32_t*>(blocks_[(size_ >> kBlockShift) % slots_].data()) + off, p + done,
                k * sizeof(std::uint32_t));
    size_ += k;
    done += k;
  }
  return done;
}

}  // namespace shootdown::exp
