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
struct Name {
  Strategy s;
  const char* name;
};
constexpr Name kNames[] = {
    {Strategy::kFree, "free"},
    {Strategy::kMunmap, "munmap"},
    {Strategy::kMadviseDontneed, "madvise-dontneed"},
    {Strategy::kMadviseFree, "madvise-free"},
    {Strategy::kMprotect, "mprotect"},
    {Strategy::kReuse, "reuse"},
    {Strategy::kMembarrier, "membarrier"},
    {Strategy::kJournalUnmap, "journal-unmap"},
    {Strategy::kJournalRecycle, "journal-recycle"},
};

int membarrier(int cmd) {
  return static_cast<int>(syscall(__NR_membarrier, cmd, 0, 0));
}
}  // namespace

Strategy parse_strategy(const std::string& s) {
  for (const auto& n : kNames)
    if (s == n.name) return n.s;
  throw std::invalid_argument("unknown release strategy");
}

const char* to_string(Strategy s) {
  for (const auto& n : kNames)
    if (s == n.s) return n.name;
  return "?";
}

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& n : kNames) v.emplace_back(n.name);
    return v;
  }();
  return names;
}

Allocator allocator_for(Strategy s) {
  return s == Strategy::kFree ? Allocator::kMalloc : Allocator::kMmap;
}

bool prepare_strategy(Strategy s, std::string* why) {
  if (s != Strategy::kMembarrier) return true;
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    if (why) *why = std::string("membarrier register failed: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool release_chunk(Strategy s, Chunk& a, std::string* why) {
  auto fail = [&](const char* what) {
    if (why) *why = std::string(what) + ": " + std::strerror(errno);
    return false;
  };
  switch (s) {
    case Strategy::kFree:
    case Strategy::kMunmap:
      // Chunk::release() does free() for malloc'd chunks and munmap otherwise.
      a.release();
      return true;
    case Strategy::kMadviseDontneed:
      if (madvise(a.data(), a.size(), MADV_DONTNEED) != 0) return fail("madvise(MADV_DONTNEED)");
      return true;
    case Strategy::kMadviseFree:
      if (madvise(a.data(), a.size(), MADV_FREE) != 0) return fail("madvise(MADV_FREE)");
      return true;
    case Strategy::kMprotect:
      if (mprotect(a.data(), a.size(), PROT_READ) != 0) return fail("mprotect(PROT_READ)");
      return true;
    case Strategy::kReuse: {
      volatile char* p = a.data();
      for (std::size_t off = 0; off < a.size(); off += kTouchStride) p[off] = static_cast<char>(p[off] + 1);
      return true;
    }
    case Strategy::kMembarrier:
      if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) return fail("membarrier(PRIVATE_EXPEDITED)");
      return true;
    case Strategy::kJournalUnmap:
    case Strategy::kJournalRecycle:
      if (why) *why = "journal strategies are performed by exp::Journal, not on chunk A";
      return false;
  }
  return true;
}

bool rearm_chunk(Strategy s, Chunk& a, std::size_t size, PageMode mode, int node, std::string* why) {
  try {
    switch (s) {
      case Strategy::kFree:
      case Strategy::kMunmap:
        a = Chunk(size, mode, allocator_for(s), node);
        a.prefault();
        return true;
      case Strategy::kMadviseDontneed:
      case Strategy::kMadviseFree:
        a.prefault();
        return true;
      case Strategy::kMprotect:
        if (mprotect(a.data(), a.size(), PROT_READ | PROT_WRITE) != 0) {
          if (why) *why = std::string("mprotect(PROT_READ|PROT_WRITE): ") + std::strerror(errno);
          return false;
        }
        return true;
      case Strategy::kReuse:
      case Strategy::kMembarrier:
      case Strategy::kJournalUnmap:
      case Strategy::kJournalRecycle:
        return true;
    }
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
  return true;
}

}  // namespace shootdown::exp
