// The victim thread: pinned, fills its TLB with chunk A, pre-faults its own
// chunk B, waits at a spin barrier, then writes one byte per 4 KiB page of B
// in batches, timing each batch with one fenced TSC read (gapless: sample i =
// t[i+1] - t[i]) stored in a circular ring of raw tick deltas. The hot loop
// does no allocation, syscall, lock, logging or page fault: the ring is
// allocated, pre-faulted and mlocked before the barrier. A drainer thread on
// the culprit's CPU copies the ring into a SampleStore as the victim goes,
// so the run's length is bounded by memory, not by the ring. Histograms (per
// interval, per phase) are built from the store after the run: it holds every
// sample, so recording into a histogram in the loop as well would only cost
// the victim time (bench/bench_victim measures both).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/hdr/histogram.hpp"
#include "experiment/arena.hpp"
#include "experiment/sample_store.hpp"
#include "sys/tsc.hpp"

namespace shootdown::exp {

struct alignas(64) Control {
  std::atomic<bool> go{false};  // barrier: the victims start measuring
  alignas(64) std::atomic<bool> stop{false};
  alignas(64) std::atomic<int> abort{0};  // stop preparation (signal)
  // True while no release has begun: a full sample store may then drop its
  // oldest (baseline) samples after summarizing them (Victim::drain). The
  // run clears it before it reads the first release's "before" time, so
  // everything dropped ended before that marker.
  alignas(64) std::atomic<bool> compactable{false};
};

struct VictimConfig {
  int cpu = -1;
  std::size_t chunk_size = 0;  // bytes of B
  std::size_t batch = 0;       // bytes per timed batch
  PageMode mode = PageMode::k4k;
  int numa_node = 0;
  bool mlock = true;
  const Chunk* chunk_a = nullptr;  // touched once to fill the TLB
  Chunk* chunk_b = nullptr;        // borrowed B (Hooks::victim_chunk); nullptr = own a fresh one
  Chunk* ring_slot = nullptr;      // borrowed ring slot (Hooks::victim_ring); nullptr = own a fresh ring
  std::int64_t planned_ns = 0;     // measurement length, sizes the ring
  std::int64_t tail_ns = 0;        // of it, from the first release on: compaction leaves room for it
  std::size_t max_ring_samples = 256u << 20;  // the store's limit (samples per victim)
  // Under a memory cgroup's limit: the most the sample ring may take (0 = no
  // limit). A ring capped by it ends the measurement early when full rather
  // than the kernel OOM-killing the run; the victim says so in a warning.
  std::size_t ring_budget_bytes = 0;
  std::string ring_budget_why;  // "the memory cgroup /x allows 80 MiB more"
  double ns_per_tick = 0;  // pre-run TSC calibration (sizes the ring, converts dropped samples)
  // A full store summarizes and drops its oldest samples while
  // Control::compactable is set, instead of ending the measurement.
  bool compact = true;
  bool rt = false;         // SCHED_FIFO: the victim keeps its CPU (and so gets its IPIs)
};

struct VictimOutput {
  bool ok = false;
  std::string error;  // preparation failure
  std::vector<std::string> warnings;
  std::uint64_t start_tsc = 0;  // timestamp before the first batch
  std::size_t samples = 0;
  bool ring_full = false;  // the measurement ended early: full_reason() says why
  std::int64_t warmup_batch_ns = 0;  // mean batch time of the warm-up pass
  std::int64_t prefault_ns = 0;
  std::int32_t tid = 0;
};

class Victim {
 public:
  Victim(VictimConfig cfg, Control& ctl);
  Victim(const Victim&) = delete;
  Victim& operator=(const Victim&) = delete;

  // Thread body. Sets ready when prepared (or failed).
  void run();

  std::atomic<bool>& ready() { return ready_; }
  const VictimOutput& output() const { return out_; }
  const VictimConfig& config() const { return cfg_; }
  std::size_t published_samples() const { return published_.load(std::memory_order_relaxed); }
  // Drainer thread (one, never on a victim CPU): copies what the victim
  // published out of the ring into the store. Also called once after the
  // victim joined, for the rest.
  void drain() noexcept;
  // The store or the ring filled up (readable while the victim runs).
  bool full_now() const {
    return ring_full_.load(std::memory_order_acquire) || store_full_.load(std::memory_order_acquire);
  }
  // Why the measurement had to end early ("" when it did not).
  std::string full_reason() const;
  // After the thread joined and a last drain(): raw tick deltas
  // (UINT32_MAX marks an entry in overflow()).
  const SampleStore& samples() const { return store_; }
  struct Overflow {
    std::uint64_t index;
    std::uint64_t ticks;
  };
  const std::vector<Overflow>& overflow() const { return overflow_; }
  std::size_t overflow_count() const { return overflow_n_; }
  // What compaction dropped: the oldest samples, their total ticks (the
  // first sample kept starts at start_tsc + ticks) and their latencies (ns,
  // at the pre-run calibration) in one histogram. Complete only after the
  // thread joined, a last drain() and settle_dropped().
  struct Dropped {
    std::size_t samples = 0;
    std::uint64_t ticks = 0;
    std::size_t overflow_samples = 0;  // of them >= 2^32 ticks (their lengths added by settle_dropped)
  };
  const Dropped& dropped() const { return dropped_; }
  // Ticks of the samples dropped so far (overflowed ones not included: a
  // lower bound), readable from any thread while the drainer compacts.
  std::uint64_t dropped_ticks_so_far() const { return dropped_ticks_pub_.load(std::memory_order_acquire); }
  const hdr::Histogram* dropped_histogram() const { return dropped_.samples ? &*dropped_hist_ : nullptr; }
  // After the join: adds the dropped samples longer than 2^32 ticks, which
  // the drainer skipped (their lengths are in overflow(), written by the
  // victim thread).
  void settle_dropped();

 private:
  bool prepare();
  void measure();
  void fold_front_block() noexcept;  // drainer: summarize the store's oldest block, then drop it

  VictimConfig cfg_;
  Control& ctl_;
  VictimOutput out_;
  Chunk b_;
  Chunk* bp_ = &b_;  // b_ or the borrowed cfg_.chunk_b
  Chunk ring_;
  Chunk* rp_ = &ring_;  // ring_ or the borrowed cfg_.ring_slot (at least ring_cap_ samples)
  std::size_t ring_cap_ = 0;
  std::vector<Overflow> overflow_;  // preallocated
  std::size_t overflow_n_ = 0;
  std::atomic<bool> ready_{false};
  alignas(64) std::atomic<std::size_t> published_{0};
  std::atomic<bool> ring_full_{false};
  SampleStore store_;
  alignas(64) std::atomic<std::size_t> consumed_{0};  // written by the drainer only
  std::atomic<bool> store_full_{false};
  // Drainer-side compaction state (written by the drainer only).
  Dropped dropped_;
  std::size_t reserve_ = 0;  // samples a compaction leaves free for the releases and the after phase
  std::optional<hdr::Histogram> dropped_hist_;  // made in prepare() (allocates before the barrier)
  alignas(64) std::atomic<std::uint64_t> dropped_ticks_pub_{0};  // dropped_.ticks, published by the drainer
  bool dropped_settled_ = false;
};

// Instrumentation of one batch, shared by the victim's loop and bench/ so the
// benchmark measures exactly what the loop does after each batch: one fenced
// TSC read, the ring store (deltas >= 2^32 ticks go to the overflow list),
// the progress counter the culprit polls, and the end test.
struct BatchRecorder {
  std::uint32_t* ring;
  std::size_t cap;  // ring entries (circular when a drainer consumes it)
  Victim::Overflow* overflow;
  std::size_t overflow_cap;
  std::atomic<std::size_t>* published;  // samples so far, released to the drainer
  // Samples the drainer has copied out of the ring; nullptr: nobody drains,
  // the ring ends the loop when it has been filled once.
  const std::atomic<std::size_t>* consumed;
  const std::atomic<bool>* stop;
  std::uint64_t prev = 0;  // TSC at the end of the previous batch
  std::size_t n = 0;       // samples so far (overflow entries index these)
  std::size_t pos = 0;     // n modulo cap
  std::size_t limit = cap;  // n may grow to this before the ring would overwrite unread samples
  std::size_t overflow_n = 0;

  // Call right after a batch's work. Returns true when the loop must end
  // (ring full or stop requested). The drainer's position is read only when
  // n reaches the last known limit: no shared cache line in the common case.
  bool end_batch() noexcept {
    const std::uint64_t now = sys::rdtsc_fenced();
    const std::uint64_t d = now - prev;
    prev = now;
    if (d >= UINT32_MAX) [[unlikely]] {
      ring[pos] = UINT32_MAX;
      if (overflow_n < overflow_cap) overflow[overflow_n] = Victim::Overflow{n, d};
      ++overflow_n;
    } else {
      ring[pos] = static_cast<std::uint32_t>(d);
    }
    ++n;
    if (++pos == cap) pos = 0;
    published->store(n, std::memory_order_release);
    if (n == limit) [[unlikely]] {
      if (consumed == nullptr) return true;
      limit = consumed->load(std::memory_order_acquire) + cap;
      if (n == limit) return true;
    }
    return stop->load(std::memory_order_relaxed);
  }
};

}  // namespace shootdown::exp
