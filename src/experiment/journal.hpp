// SPDX-License-Identifier: Apache-2.0
// The journal workload (the article's motivating case): a writer thread
// appends fixed-size records to memory-mapped segment files, as transaction
// logs and journals do. Two segment policies:
//  - unmap:   when a segment is full, munmap + unlink it and create, size and
//             mmap a new file. The munmap of a mapping the victim threads'
//             CPUs may cache sends them TLB-shootdown IPIs; the new file's
//             pages are faulted in as records land.
//  - recycle: a pool of segments is created, mapped and pre-faulted before
//             the measurement and reused round-robin (a checkpointed segment
//             is overwritten): no munmap, no fault, no shootdown.
// The victims are threads of the same process (same mm), like a latency-
// critical reader next to the journal writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "core/result.hpp"
#include "experiment/culprit.hpp"

namespace shootdown::exp {

struct JournalConfig {
  bool recycle = false;
  std::size_t segment_size = 16u << 20;
  std::string dir;                // "" = /dev/shm when present (no writeback I/O in the window), else /tmp
  int pool_segments = 4;          // recycle: segments in the pool
  std::size_t record_size = 256;  // bytes per appended record
};

JournalConfig journal_config(const Plan& plan, ReleaseStrategy s);

class Journal {
 public:
  // Creates the first segment (unmap) or the whole pool (recycle), mapped
  // and pre-faulted. Throws std::runtime_error with the reason.
  explicit Journal(JournalConfig cfg);
  ~Journal();  // unmaps and unlinks every segment still present
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Appends records totalling at least `bytes` (the timed release step).
  Status append(std::size_t bytes);

  std::size_t rotations() const { return rotations_; }
  const std::string& dir() const { return dir_; }

 private:
  struct Segment {
    std::string path;
    int fd = -1;
    char* data = nullptr;
  };
  Status open_segment(Segment* s);
  void close_segment(Segment* s) noexcept;
  Status rotate();

  JournalConfig cfg_;
  std::string dir_;
  std::vector<Segment> pool_;  // recycle: the pool; unmap: the one current segment
  std::size_t cur_ = 0;
  std::size_t off_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t files_ = 0;
  std::size_t rotations_ = 0;
  std::vector<char> record_;
};

}  // namespace shootdown::exp
