// SPDX-License-Identifier: Apache-2.0
// The tool's side of `shootdown probe`: the shared memory the preloaded
// library (src/probe/probe.c) writes its samples into (protocol in
// probe/probe_shm.h, versioned), the samples drained out of it and bounded
// by --memory-limit, and each measured process image's samples handed to
// the analysis as a VictimSamples, exactly like a run's victim.
//
// Memory bound: each slot's samples live in a SampleStore (the run's store:
// 1 Mi-sample blocks, recycled); past max_samples (all slots together) the
// largest slot folds the block core/compaction's choose_fold picks (its
// oldest: a probe has no release windows) into an interval histogram,
// keeping raw the samples within keep_ns of an IPI on the probe's CPU
// (mark_near), and the
// kernel events farther than event_margin_ns from every raw sample are
// counted, not kept (fold_gaps, the rule a run uses too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/events.hpp"
#include "core/result.hpp"
#include "experiment/sample_store.hpp"
#include "probe/probe_shm.h"
#include "sys/perf_trace.hpp"
#include "sys/tsc.hpp"

namespace shootdown::exp {

// The shared slots and rings: a memfd the command inherits (no MFD_CLOEXEC:
// the library keeps it open so the images it execs and the children it
// starts find it), mapped here for the tool's side. Throws RuntimeError when
// it cannot be made.
class ProbeShm {
 public:
  ProbeShm(std::uint32_t ncpus, std::uint32_t nslots, std::uint64_t capacity);
  ~ProbeShm();
  ProbeShm(const ProbeShm&) = delete;
  ProbeShm& operator=(const ProbeShm&) = delete;
  sd_probe_shm* get() const { return shm_; }
  sd_probe_slot& slot(int k) const { return sd_probe_slots(shm_)[k]; }
  int fd() const { return fd_; }

 private:
  std::size_t len_;
  int fd_ = -1;
  sd_probe_shm* shm_ = nullptr;
};

struct ProbeConfig {
  std::vector<int> cpus;          // probe CPUs, one process image measured on each at a time
  std::uint64_t capacity = 0;     // ring entries per slot (--ring / 8)
  std::uint32_t batch_pages = 0;  // pages per timed batch
  std::uint64_t arena_bytes = 0;
  bool sched_fifo = false;
  std::size_t max_samples = 0;                // raw samples held at most, all slots (--memory-limit / 32)
  std::int64_t keep_ns = 2'000'000;           // raw samples kept around each IPI once a slot folds
  std::int64_t event_margin_ns = 10'000'000;  // kernel events kept around raw samples once a slot folds
};

class ProbeSession {
 public:
  explicit ProbeSession(ProbeConfig cfg);

  int fd() const { return shm_.fd(); }
  int slots() const { return nslots_; }
  const sd_probe_slot& slot(int k) const { return shm_.slot(k); }
  const sd_probe_shm& shm() const { return *shm_.get(); }
  // Set before the command starts: the clock the folds convert with and the
  // tracer whose IPIs keep samples raw and whose events fold (may be null).
  void attach(const sys::TscClock& pre, sys::Tracer* tracer, std::int64_t start_ns);

  // While the command runs (the driver's watch tick): copy what the probes
  // published, then hold the budget; free the CPUs of vanished probes.
  void drain();
  void sweep();
  // The end: every probe still measuring stops at its next batch; waits up
  // to 200 ms for them, then drains the rest.
  void stop_all();
  FoldedEvents take_folded_events() { return std::move(folded_events_); }

  // After the command: the slots of the processes seen, in claim order, and
  // what each was.
  std::vector<int> claim_order() const;
  ProbeProcess process(int k, const sys::TscClock& clock) const;
  ProbeFate fate(int k) const;
  std::size_t samples(int k) const { return series_[k].samples(); }
  // Slot k's samples into r: its VictimSamples (moved out of the session),
  // the measured span, the intervals (core/timeline) and, when it folded,
  // the folded intervals and a warning saying what was kept raw.
  void fill_result(int k, const sys::TscClock& clock, Result& r);
  // "the probe of pid P ran D on cpuC without completing a batch ..." for a
  // probe kept off its CPU, or "".
  std::string starved(const sys::TscClock& clock) const;

 private:
  // One slot's samples, bounded by --memory-limit, in the run's SampleStore:
  // TSC ticks per batch (UINT32_MAX: the length is in `overflow`). Past the
  // budget the oldest block (1 Mi samples) folds into an interval histogram,
  // keeping raw the samples within keep_ns of an IPI on the probe's CPU
  // (attribution reads them).
  struct Series {
    std::optional<SampleStore> store;                             // made at the slot's first sample
    std::vector<std::pair<std::size_t, std::uint64_t>> overflow;  // (sample, ticks) of the UINT32_MAX entries
    std::uint64_t first_tsc = 0;          // where the oldest held sample began (the slot's start_tsc at first)
    std::uint64_t last_tsc = 0;           // where the newest ended
    std::vector<std::size_t> kept_index;  // raw samples kept from folded blocks
    std::vector<std::uint64_t> kept_start, kept_end;  // their TSC span
    std::vector<Interval> folded;
    std::size_t folded_samples = 0, ipis = 0, ipis_dropped = 0;
    std::size_t samples() const { return store ? store->size() : 0; }
    std::size_t held() const { return store ? store->held() : 0; }
    // The batch-end TSC of the held samples, oldest first (the first `most`).
    std::vector<std::uint64_t> held_ends(std::size_t most = SIZE_MAX) const;
  };

  void append(int k, const std::uint64_t* ring, std::uint64_t from, std::uint64_t to);
  void bound();
  bool fold(int k);  // false: nothing to fold
  void fold_unheld_events();
  int running() const;
  VictimSamples victim_samples(int k, const sys::TscClock& clock);

  ProbeConfig cfg_;
  int nslots_ = 0;  // probe CPUs + SD_PROBE_SPARE_SLOTS
  ProbeShm shm_;
  std::vector<Series> series_;  // per slot
  std::vector<bool> exited_;    // per slot
  bool stopping_ = false;
  sys::TscClock pre_;  // calibrated before the command starts: converts while folding
  sys::Tracer* tracer_ = nullptr;
  FoldedEvents folded_events_;
  std::int64_t events_folded_until_ = 0;
};

}  // namespace shootdown::exp
