#include "experiment/sample_store.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "core/units.hpp"

namespace shootdown::exp {

SampleStore::SampleStore(std::size_t max_samples, int numa_node) : max_(max_samples), node_(numa_node) {
  blocks_.reserve((max_samples + kBlockSamples - 1) / kBlockSamples + 1);
  if (!grow()) throw std::runtime_error("sample store: " + why_);
}

bool SampleStore::grow() noexcept {
  if (blocks_.size() == blocks_.capacity()) {  // never reallocate the table during a run
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
    if (size_ == max_) {
      full_ = true;
      why_ = "the limit of " + std::to_string(max_) + " samples (" +
             format_size(static_cast<std::int64_t>(max_ * sizeof(std::uint32_t))) + ") per victim is reached";
      break;
    }
    const std::size_t off = size_ & (kBlockSamples - 1);
    if (off == 0 && (size_ >> kBlockShift) == blocks_.size() && !grow()) break;
    const std::size_t k = std::min({n - done, kBlockSamples - off, max_ - size_});
    std::memcpy(reinterpret_cast<std::uint32_t*>(blocks_[size_ >> kBlockShift].data()) + off, p + done,
                k * sizeof(std::uint32_t));
    size_ += k;
    done += k;
  }
  return done;
}

}  // namespace shootdown::exp
