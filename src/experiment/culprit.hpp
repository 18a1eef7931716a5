// SPDX-License-Identifier: Apache-2.0
// Release strategies performed by the culprit on chunk A.
#pragma once

#include <string>
#include <sys/uio.h>
#include <vector>

#include "core/expected.hpp"
#include "core/strategy.hpp"
#include "experiment/arena.hpp"

namespace shootdown::exp {

Allocator allocator_for(ReleaseStrategy s);

// What a release needs that must not be made inside the timed window (an
// allocation there would fault, and its later free would flush): the extent
// vector of madvise-ranges / process-madvise, the pidfd of this process, the
// pace of paced / chunked. After a paced release it tells what was done.
class ReleaseContext {
 public:
  ReleaseContext() = default;
  ~ReleaseContext();
  ReleaseContext(const ReleaseContext&) = delete;
  ReleaseContext& operator=(const ReleaseContext&) = delete;
  // For chunk A (same address across repeats: kRefault). An error when
  // the kernel lacks the path (process_madvise(MADV_DONTNEED) on itself).
  // pace: paced / chunked only (Plan::pace(); step > 0).
  Status prepare(ReleaseStrategy s, const Chunk& a, Pace pace);
  // "PIDFD_SELF" or "pidfd_open(getpid())" for process-madvise, else "".
  const std::string& pidfd_kind() const { return pidfd_kind_; }
  // paced / chunked, after release_chunk: the bytes the steps released (all
  // of A unless a step failed or a stop signal came between two steps) and
  // the signal that stopped it (0: none).
  std::int64_t paced_bytes() const { return paced_bytes_; }
  int stopped_by() const { return stopped_by_; }

 private:
  friend Status release_chunk(ReleaseStrategy, Chunk&, ReleaseContext&);
  std::vector<struct iovec> extents_;
  int pidfd_ = -1;
  bool own_fd_ = false;
  std::string pidfd_kind_;
  Pace pace_;
  std::int64_t paced_bytes_ = 0;
  int stopped_by_ = 0;
  long old_slack_ns_ = 0;  // the culprit thread's timer slack before prepare() set 1 ns (restored)
};

// Performs the release (the timed part; allocates nothing when it succeeds).
// A paced / chunked release stopped by a signal between two steps is an
// error too: ctx.stopped_by() names the signal.
Status release_chunk(ReleaseStrategy s, Chunk& a, ReleaseContext& ctx);
// Makes A usable again for the next repeat (outside the timed window):
// the strategy's Rearm rule (core/strategy.hpp).
Status rearm_chunk(ReleaseStrategy s, Chunk& a, std::size_t size, PageMode mode, int node);
// Registers what a strategy needs once per process (membarrier registration).
Status prepare_strategy(ReleaseStrategy s);
// The journal strategies release no chunk: the experiment drives a Journal.
inline bool is_journal(ReleaseStrategy s) {
  return strategy_info(s).workload == Workload::kJournal;
}

}  // namespace shootdown::exp
