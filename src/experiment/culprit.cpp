#include "experiment/culprit.hpp"

#include <cerrno>
#include <cstring>
#include <linux/membarrier.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace shootdown::exp {

namespace {
int membarrier(int cmd) {
  return static_cast<int>(syscall(__NR_membarrier, cmd, 0, 0));
}
}  // namespace

Allocator allocator_for(ReleaseStrategy s) {
  return s == ReleaseStrategy::kFree ? Allocator::kMalloc : Allocator::kMmap;
}

bool prepare_strategy(ReleaseStrategy s, std::string* why) {
  if (s != ReleaseStrategy::kMembarrier) return true;
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    if (why) *why = std::string("membarrier register failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool release_chunk(ReleaseStrategy s, Chunk& a, std::string* why) {
  auto fail = [&](const char* what) {
    if (why) *why = std::string(what) + ": " + std::strerror(errno);
    return false;
  };
  switch (s) {
    case ReleaseStrategy::kFree:
    case ReleaseStrategy::kMunmap:
      // Chunk::release() does free() for malloc'd chunks and munmap otherwise.
      a.release();
      return true;
    case ReleaseStrategy::kMadviseDontneed:
      if (madvise(a.data(), a.size(), MADV_DONTNEED) != 0) return fail("madvise(MADV_DONTNEED)");
      return true;
    case ReleaseStrategy::kMadviseFree:
      if (madvise(a.data(), a.size(), MADV_FREE) != 0) return fail("madvise(MADV_FREE)");
      return true;
    case ReleaseStrategy::kMprotect:
      if (mprotect(a.data(), a.size(), PROT_READ) != 0) return fail("mprotect(PROT_READ)");
      return true;
    case ReleaseStrategy::kReuse: {
      volatile char* p = a.data();
      for (std::size_t off = 0; off < a.size(); off += kTouchStride) p[off] = static_cast<char>(p[off] + 1);
      return true;
    }
    case ReleaseStrategy::kMembarrier:
      if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) return fail("membarrier(PRIVATE_EXPEDITED)");
      return true;
    case ReleaseStrategy::kJournalUnmap:
    case ReleaseStrategy::kJournalRecycle:
    case ReleaseStrategy::kProbe:
      if (why) *why = std::string(strategy_name(s)) + " releases no chunk A";
      return false;
  }
  return true;
}

bool rearm_chunk(ReleaseStrategy s, Chunk& a, std::size_t size, PageMode mode, int node, std::string* why) {
  try {
    switch (strategy_info(s).rearm) {
      case Rearm::kReallocate:
        a = Chunk(size, mode, allocator_for(s), node);
        a.prefault();
        return true;
      case Rearm::kRefault:
        a.prefault();
        return true;
      case Rearm::kRestoreProtection:
        if (mprotect(a.data(), a.size(), PROT_READ | PROT_WRITE) != 0) {
          if (why) *why = std::string("mprotect(PROT_READ|PROT_WRITE): ") + std::strerror(errno);
          return false;
        }
        return true;
      case Rearm::kNothing:
        return true;
    }
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
  return true;
}

}  // namespace shootdown::exp
