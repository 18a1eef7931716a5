// SPDX-License-Identifier: Apache-2.0
#include "experiment/arena.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numa.h>
#include <stdexcept>
#include <sys/mman.h>

#include "core/errors.hpp"

namespace shootdown::exp {

namespace {
constexpr std::size_t kHuge = 2u << 20;
#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // include/uapi/asm-generic/mman-common.h, Linux 5.14
#endif
}  // namespace

Chunk::Chunk(std::size_t size, PageMode mode, Allocator alloc, int numa_node) : mode_(mode), alloc_(alloc) {
  if (alloc == Allocator::kMalloc) {
    // glibc serves blocks above M_MMAP_THRESHOLD (max 32 MiB) with mmap, so
    // free() of this block is a munmap: the article's case.
    void* p = std::malloc(size);
    if (!p) throw RuntimeError("malloc of " + std::to_string(size) + " bytes failed");
    data_ = static_cast<char*>(p);
    size_ = size;
  } else {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
    std::size_t len = size;
    if (mode == PageMode::kHugetlb) {
      flags |= MAP_HUGETLB;
      len = (size + kHuge - 1) / kHuge * kHuge;
    } else if (mode == PageMode::kThp) {
      len = size + kHuge;  // room to align to 2 MiB
    }
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) {
      throw RuntimeError(
          std::string("mmap of ") + std::to_string(len) + " bytes failed: " + std::strerror(errno) +
          (mode == PageMode::kHugetlb ? " (are enough huge pages reserved? see /proc/meminfo HugePages_Free)" : ""));
    }
    map_base_ = static_cast<char*>(p);
    map_size_ = len;
    data_ = map_base_;
    size_ = size;
    if (mode == PageMode::kThp) {
      auto addr = reinterpret_cast<std::uintptr_t>(map_base_);
      auto aligned = (addr + kHuge - 1) & ~(kHuge - 1);
      data_ = reinterpret_cast<char*>(aligned);
      // Trim the padding so the release strategy sees exactly one region.
      if (aligned > addr) munmap(map_base_, aligned - addr);
      const std::size_t tail = (addr + len) - (aligned + size);
      if (tail > 0) munmap(data_ + size, tail);
      map_base_ = data_;
      map_size_ = size;
      madvise(data_, size, MADV_HUGEPAGE);
    }
  }
  // 4k means 4 KiB pages: with THP "always" the kernel would fault huge
  // pages and khugepaged would later collapse the chunk (collapse_huge_page
  // -> flush_tlb_mm_range), sending shootdowns of our own mm to the victims
  // in the middle of the measurement (found by the lab in the reuse control).
  if (mode == PageMode::k4k) {
    const auto page = static_cast<std::uintptr_t>(4096);
    const auto start = (reinterpret_cast<std::uintptr_t>(data_) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data_) + size_) & ~(page - 1);
    if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_NOHUGEPAGE);
  }
  // NUMA-local placement before the first touch. mbind needs page-aligned
  // ranges; malloc'd blocks start 16 bytes into their mapping.
  if (numa_available() >= 0 && numa_node >= 0 && numa_max_node() > 0) {
    const auto page = static_cast<std::uintptr_t>(4096);
    const auto start = (reinterpret_cast<std::uintptr_t>(data_) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(data_) + size_) & ~(page - 1);
    if (end > start) numa_tonode_memory(reinterpret_cast<void*>(start), end - start, numa_node);
  }
}

Chunk::~Chunk() {
  release();
}

Chunk::Chunk(Chunk&& o) noexcept {
  *this = std::move(o);
}

Chunk& Chunk::operator=(Chunk&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    map_size_ = o.map_size_;
    map_base_ = o.map_base_;
    mode_ = o.mode_;
    alloc_ = o.alloc_;
    locked_ = o.locked_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.map_base_ = nullptr;
    o.map_size_ = 0;
    o.locked_ = false;
  }
  return *this;
}

bool Chunk::prefault(const volatile int* stop_flag) {
  // MADV_POPULATE_WRITE (Linux 5.14) faults the range in with one call per
  // step instead of one exception per page: 13 ms instead of 190 ms for
  // 64 MiB on a PVM guest, where every page fault is a
  // round trip to the hypervisor. Best effort (older kernels: EINVAL; a
  // malloc'ed chunk starts mid-page): the loop below writes every page
  // either way, cheaply once they are present.
  const auto page = static_cast<std::uintptr_t>(kTouchStride);
  const auto begin = (reinterpret_cast<std::uintptr_t>(data_) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(data_) + size_) / page * page;
  constexpr std::uintptr_t kStep = 64u << 20;
  for (std::uintptr_t at = begin; at < end; at += kStep) {
    if (stop_flag && *stop_flag) return false;
    if (madvise(reinterpret_cast<void*>(at), std::min(kStep, end - at), kMadvPopulateWrite) != 0) break;
  }
  for (std::size_t off = 0; off < size_; off += kTouchStride) {
    data_[off] = 1;
    if (stop_flag && (off & ((64u << 20) - 1)) == 0 && *stop_flag) return false;
  }
  return true;
}

Status Chunk::lock() {
  if (mlock(data_, size_) != 0) return Error{std::strerror(errno)};
  locked_ = true;
  return Ok{};
}

void Chunk::release() noexcept {
  if (!data_) return;
  if (alloc_ == Allocator::kMalloc) {
    std::free(data_);
  } else {
    munmap(map_base_, map_size_);
  }
  data_ = nullptr;
  map_base_ = nullptr;
  size_ = map_size_ = 0;
  locked_ = false;
}

}  // namespace shootdown::exp
