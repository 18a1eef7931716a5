// Release strategies performed by the culprit on chunk A.
#pragma once

#include <string>
#include <vector>

#include "core/strategy.hpp"
#include "experiment/arena.hpp"

namespace shootdown::exp {

Allocator allocator_for(ReleaseStrategy s);

// Performs the release (the timed part). Returns false and sets why on failure.
bool release_chunk(ReleaseStrategy s, Chunk& a, std::string* why);
// Makes A usable again for the next repeat (outside the timed window):
// the strategy's Rearm rule (core/strategy.hpp).
bool rearm_chunk(ReleaseStrategy s, Chunk& a, std::size_t size, PageMode mode, int node, std::string* why);
// Registers what a strategy needs once per process (membarrier registration).
bool prepare_strategy(ReleaseStrategy s, std::string* why);
// The journal strategies release no chunk: the experiment drives a Journal.
inline bool is_journal(ReleaseStrategy s) {
  return strategy_info(s).workload == Workload::kJournal;
}

}  // namespace shootdown::exp
