// SPDX-License-Identifier: Apache-2.0
// The victim thread: pinned, fills its TLB with chunk A, pre-faults its own
// chunk B, waits at a spin barrier, then writes one byte per 4 KiB page of B
// in batches, timing each batch with one fenced TSC read (gapless: sample i =
// t[i+1] - t[i]) stored in a circular ring of raw tick deltas. The hot loop
// does no allocation, syscall, lock, logging or page fault: the ring is
// allocated, pre-faulted and mlocked before the barrier. A drainer thread on
// the culprit's CPU copies the ring into a SampleStore as the victim goes,
// so the run's length is bounded by memory, not by the ring. Histograms (per
// interval, per phase) are built from the store after the run, and by the
// drainer for the blocks a full store folds (core/compaction): recording
// into a histogram in the loop as well would only cost the victim time
// (bench/bench_victim measures both).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/compaction.hpp"
#include "core/hdr/histogram.hpp"
#include "experiment/arena.hpp"
#include "experiment/sample_store.hpp"
#include "sys/tsc.hpp"

namespace shootdown::exp {

struct alignas(64) Control {
  std::atomic<bool> go{false};  // barrier: the victims start measuring
  alignas(64) std::atomic<bool> stop{false};
  alignas(64) std::atomic<int> abort{0};  // stop preparation (signal)
  // Release windows, whose raw samples a full store keeps (core/compaction):
  // the run opens one (its TSC) before a release's "before" marker and
  // closes it after the settle; closed ones go into a ring the drainers
  // read. A drainer that reads no open window after it drained a sample
  // knows no release began before that sample ended.
  static constexpr std::size_t kWindows = 1024;
  alignas(64) std::atomic<std::uint64_t> open_from{0};  // TSC, 0: none open
  std::atomic<std::uint64_t> first_from{0};             // TSC of the first window, 0: none yet
  std::atomic<std::size_t> windows_n{0};
  std::array<std::atomic<std::uint64_t>, 2 * kWindows> windows{};  // [2i] from, [2i+1] to (TSC), ring by i % kWindows
  // IPIs on victim CPUs outside the releases, marked by the run as the
  // tracer delivers them: a full store keeps the samples around them raw.
  static constexpr std::size_t kMarks = 4096;
  alignas(64) std::atomic<std::size_t> marks_n{0};
  std::array<std::atomic<std::uint64_t>, kMarks> marks{};  // TSC, ring by i % kMarks
  std::array<std::atomic<int>, kMarks> mark_cpu{};
  void mark(int cpu, std::uint64_t tsc) noexcept {
    const std::size_t n = marks_n.load(std::memory_order_relaxed);
    marks[n % kMarks].store(tsc, std::memory_order_relaxed);
    mark_cpu[n % kMarks].store(cpu, std::memory_order_relaxed);
    marks_n.store(n + 1, std::memory_order_release);
  }
  void open_window(std::uint64_t tsc) noexcept {
    if (first_from.load(std::memory_order_relaxed) == 0) first_from.store(tsc, std::memory_order_relaxed);
    open_from.store(tsc, std::memory_order_seq_cst);
  }
  void close_window(std::uint64_t tsc) noexcept {
    const std::size_t n = windows_n.load(std::memory_order_relaxed);
    windows[2 * (n % kWindows)].store(open_from.load(std::memory_order_relaxed), std::memory_order_relaxed);
    windows[2 * (n % kWindows) + 1].store(tsc, std::memory_order_relaxed);
    windows_n.store(n + 1, std::memory_order_release);
    open_from.store(0, std::memory_order_seq_cst);
  }
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
  // A full store keeps raw samples this long before and after each release
  // window, and behind the newest (capped to a quarter of the store).
  std::int64_t keep_ns = 1'000'000'000;
  std::size_t max_ring_samples = 256u << 20;  // the store's limit (samples per victim)
  // Under a memory cgroup's limit: the most the sample ring may take (0 = no
  // limit). A ring capped by it ends the measurement early when full rather
  // than the kernel OOM-killing the run; the victim says so in a warning.
  std::size_t ring_budget_bytes = 0;
  std::string ring_budget_why;  // "the memory cgroup /x allows 80 MiB more"
  double ns_per_tick = 0;       // pre-run TSC calibration (sizes the ring, converts dropped samples)
  // A full store summarizes blocks of samples into interval histograms
  // (core/compaction chooses which) instead of ending the measurement.
  bool compact = true;
  bool rt = false;  // SCHED_FIFO: the victim keeps its CPU (and so gets its IPIs)
};

struct VictimOutput {
  bool ok = false;
  std::string error;  // preparation failure
  std::vector<std::string> warnings;
  std::uint64_t start_tsc = 0;  // timestamp before the first batch
  std::size_t samples = 0;
  bool ring_full = false;  // the measurement ended early: full_reason() says why
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
  // Where a held block's samples lie: TSC ticks after start_tsc, [from, to).
  TickRange block_ticks(const SampleStore::Held& h) const noexcept { return {slot_from_[h.slot], slot_to_[h.slot]}; }
  // The length of sample i, a UINT32_MAX entry of the store (from the
  // overflow list; UINT32_MAX when the list was full).
  std::uint64_t overflow_ticks(std::size_t i) const noexcept;
  // What compaction summarized: stretches of consecutive folded blocks, each
  // one histogram (counts by index of make_latency_histogram()), oldest
  // first. Complete after the thread joined, a last drain() and finish_folds().
  struct FoldSlice {
    std::size_t first_sample = 0, samples = 0;
    std::uint64_t from_tick = 0, to_tick = 0;  // after start_tsc
    std::size_t counts_at = 0, counts_n = 0;   // in fold_counts()
  };
  const std::vector<FoldSlice>& folds() const noexcept { return slices_; }
  std::span<const std::pair<std::int32_t, std::int64_t>> fold_counts(const FoldSlice& f) const noexcept {
    return {counts_.data() + f.counts_at, f.counts_n};
  }
  std::size_t folded_samples() const noexcept { return folded_samples_; }
  // True when slices had to merge across gaps (the slice table was full).
  bool folds_coarsened() const noexcept { return coarse_; }
  void finish_folds() noexcept;
  // The spans (TSC) of the samples held now, appended to `out`, and the
  // end of the newest drained (0: none yet): from any thread, for the run's
  // folding of kernel events.
  std::uint64_t held_spans(std::vector<TickRange>& out) const;

 private:
  // prepare()'s steps, in order; each false sets out_.error (or the run aborted).
  bool prepare();
  bool pin();
  bool prepare_chunk_b();
  void fill_tlb_from_a();
  double warm_up();
  std::size_t store_limit(double fastest_ns);
  bool prepare_store(std::size_t store_max);
  bool prepare_ring(double fastest_ns, std::size_t store_max);
  void measure();
  bool make_room() noexcept;                               // drainer: fold the block core/compaction chooses
  std::optional<std::size_t> choose(bool final) noexcept;  // core/compaction's choice among the held blocks
  void read_windows(KeepRules& rules) noexcept;            // the release windows of Control, in ticks after start_tsc
  void fold_block(std::size_t k) noexcept;
  bool close_slice(bool last) noexcept;  // the open slice's histogram into counts_
  void publish_spans();

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
  // Drainer-side state (written by the drainer only; every container is
  // reserved in prepare(): the drainer never allocates or frees).
  std::uint64_t ticks_ = 0;    // ticks of every sample drained (overflowed ones from overflow_)
  std::size_t of_cursor_ = 0;  // overflow_ entries the drainer has passed
  std::size_t cur_slot_ = SIZE_MAX;
  std::vector<std::uint64_t> slot_from_, slot_to_;  // by store slot: the held block's ticks
  std::uint64_t keep_ticks_ = 0;                    // cfg_.keep_ns in ticks (choose() caps it)
  std::vector<TickRange> blocks_scratch_, windows_scratch_;
  std::vector<std::uint64_t> marks_scratch_;
  std::uint64_t mark_margin_ticks_ = 0;
  std::optional<hdr::Histogram> fold_hist_;  // the open slice
  bool slice_open_ = false;
  FoldSlice slice_;
  std::size_t slice_last_block_ = 0;
  std::uint64_t slice_ticks_ = 0;  // a slice closes past this span (doubles as counts_ fills)
  int slice_doublings_ = 0;
  bool coarse_ = false;
  std::vector<FoldSlice> slices_;
  std::vector<std::pair<std::int32_t, std::int64_t>> counts_;
  std::size_t folded_samples_ = 0;
  mutable std::mutex spans_mu_;
  std::vector<TickRange> spans_;  // held spans (TSC), published under spans_mu_
  std::uint64_t spans_now_ = 0;
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
  std::uint64_t prev = 0;   // TSC at the end of the previous batch
  std::size_t n = 0;        // samples so far (overflow entries index these)
  std::size_t pos = 0;      // n modulo cap
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
