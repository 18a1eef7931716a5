// SPDX-License-Identifier: Apache-2.0
// Memory for the experiment: chunk A (released by the culprit) and the
// victims' chunks B, NUMA-local, pre-faulted, B mlocked. RAII: whatever is
// still mapped is released on destruction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/expected.hpp"
#include "core/strategy.hpp"

namespace shootdown::exp {

enum class Allocator { kMmap, kMalloc };  // kMalloc for the `free` strategy

class Chunk {
 public:
  Chunk() = default;
  // Maps `size` bytes; throws std::runtime_error with the reason on failure.
  Chunk(std::size_t size, PageMode mode, Allocator alloc, int numa_node);
  ~Chunk();
  Chunk(Chunk&& o) noexcept;
  Chunk& operator=(Chunk&& o) noexcept;
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;

  char* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool mapped() const noexcept { return data_ != nullptr; }
  Allocator allocator() const noexcept { return alloc_; }
  PageMode mode() const noexcept { return mode_; }

  // Writes one byte per 4 KiB page; returns false if stop_flag became set.
  bool prefault(const volatile int* stop_flag = nullptr);
  // mlock; the error (strerror) when not permitted.
  Status lock();
  // Forget the mapping without releasing it (the culprit released it itself).
  void disown() noexcept {
    data_ = nullptr;
    size_ = 0;
    locked_ = false;
  }
  void release() noexcept;  // munmap / free now

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t map_size_ = 0;
  char* map_base_ = nullptr;  // for alignment padding (thp)
  PageMode mode_ = PageMode::k4k;
  Allocator alloc_ = Allocator::kMmap;
  bool locked_ = false;
};

inline constexpr std::size_t kTouchStride = 4096;  // one byte per 4 KiB page, as the article

}  // namespace shootdown::exp
