// SPDX-License-Identifier: Apache-2.0
// Victim samples after a run, converted to CLOCK_MONOTONIC nanoseconds.
// Samples are gapless: sample i spans (end_ns[i-1], end_ns[i]] with
// end_ns[-1] == start_ns, so the duration of sample i is exactly its latency.
#pragma once

#include <cstdint>
#include <vector>

namespace shootdown {

struct VictimSamples {
  int cpu = -1;
  std::int64_t start_ns = 0;         // mono ns of the timestamp before the first batch
  std::vector<std::int64_t> end_ns;  // mono ns at the end of each batch
  std::vector<std::int64_t> lat_ns;  // batch latency, ns (== end_ns[i] - span start)
  std::int64_t pages_per_batch = 0;
  std::int32_t tid = 0;  // the victim thread (gettid), 0 = unknown
  // Empty for a series measured whole. Set where samples are missing, and
  // consecutive samples need not be adjacent:
  // - a measured series whose store folded blocks: index[i] is
  //   the number of sample i among all the victim measured;
  // - a result read back from result.json keeps only the raw windows around
  //   each release (windows_only): index[i] is the position of sample i in
  //   the series that was written (raw_windows[].first_sample + k).
  std::vector<std::int64_t> index;
  bool windows_only = false;

  std::size_t size() const noexcept { return end_ns.size(); }
  bool partial() const noexcept { return !index.empty(); }
  // Whether sample k directly follows sample k-1 (k = 0: the first sample
  // measured): false after a gap of a partial series.
  bool follows(std::size_t k) const noexcept {
    return !partial() || (k == 0 ? index[0] == 0 : index[k] == index[k - 1] + 1);
  }
  std::int64_t span_start(std::size_t i) const noexcept {
    if (partial()) return end_ns[i] - lat_ns[i];
    return i == 0 ? start_ns : end_ns[i - 1];
  }
  std::int64_t span_end(std::size_t i) const noexcept { return end_ns[i]; }
};

}  // namespace shootdown
