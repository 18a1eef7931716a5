// Release strategies performed by the culprit on chunk A.
#pragma once

#include <string>
#include <vector>

#include "experiment/arena.hpp"

namespace shootdown::exp {

enum class Strategy {
  kFree,             // glibc free() of a malloc'd (mmap-backed) block
  kMunmap,           // munmap(A)
  kMadviseDontneed,  // madvise(A, MADV_DONTNEED)
  kMadviseFree,      // madvise(A, MADV_FREE)
  kMprotect,         // mprotect(A, PROT_READ), restored to RW after the marker
  kReuse,            // write A again instead of releasing it: the control arm
  kMembarrier,       // membarrier(PRIVATE_EXPEDITED): a controlled non-TLB IPI source (validation)
  kJournalUnmap,     // journal writer: munmap + unlink each full segment, map a new one (experiment/journal.hpp)
  kJournalRecycle,   // journal writer: pre-allocated pool of segments reused
};

// Throws std::invalid_argument for an unknown name.
Strategy parse_strategy(const std::string& s);
const char* to_string(Strategy s);
const std::vector<std::string>& strategy_names();
Allocator allocator_for(Strategy s);

// Performs the release (the timed part). Returns false and sets why on failure.
bool release_chunk(Strategy s, Chunk& a, std::string* why);
// Makes A usable again for the next repeat (outside the timed window):
// re-allocate and pre-fault after free/munmap, re-fault after madvise,
// restore protection after mprotect.
bool rearm_chunk(Strategy s, Chunk& a, std::size_t size, PageMode mode, int node, std::string* why);
// Registers what a strategy needs once per process (membarrier registration).
bool prepare_strategy(Strategy s, std::string* why);
// The journal strategies release no chunk: the experiment drives a Journal.
inline bool is_journal(Strategy s) {
  return s == Strategy::kJournalUnmap || s == Strategy::kJournalRecycle;
}

}  // namespace shootdown::exp
