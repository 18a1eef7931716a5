// SPDX-License-Identifier: Apache-2.0
// Per-CPU kernel tracepoint readers over perf_event_open(PERF_TYPE_TRACEPOINT).
//
// One ring buffer per CPU: the first event opened on a CPU owns an mmap-ed
// ring, every other event on that CPU is redirected into it with
// PERF_EVENT_IOC_SET_OUTPUT, so a CPU's records arrive in time order. Every
// sample carries PERF_SAMPLE_IDENTIFIER first, which tells the reader which
// event (and so which sample layout and field offsets) a record belongs to.
// Timestamps use use_clockid/CLOCK_MONOTONIC so they compare directly with
// clock_gettime and the victim's TSC-converted samples.
//
// Field offsets come from the tracefs format files, parsed by libtraceevent.
// tracefs is needed only while opening (for ids and formats): the Tracefs
// mount is released at the end of open(). No ftrace setting is ever written.
//
// The reader never asks for wakeups (wakeup_watermark = ring size): a perf
// wakeup is an irq_work self-IPI on the CPU that produced the record, i.e. on
// a victim. Instead the reader thread, pinned away from the victims, polls the
// rings every few milliseconds. Its storage grows in fixed chunks that are not
// freed until stop(): freeing (munmap) would itself shoot down the victims.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/events.hpp"
#include "core/expected.hpp"

namespace shootdown::sys {

struct TracerOptions {
  std::vector<int> cpus;  // CPUs to trace (culprit and victims)
  int culprit_cpu = -1;   // callchains for reason-4 flushes and IPI sends here
  bool callchains = true;
  int reader_cpu = -1;  // where start_reader() pins its thread; -1 = unpinned
  // Data pages per CPU ring (power of two). One ring carries all 16 events
  // of a CPU, so it is sized like 8 per-event rings of 256 pages: a 1 GiB
  // munmap sends ~10k IPIs (~50k records on the victim) while the reader's
  // CPU is busy in the culprit's munmap. Halved until mmap succeeds.
  int ring_pages = 2048;
  int poll_interval_us = 5000;  // reader poll period
};

class Tracer {
 public:
  // Opens and ENABLES every tracepoint on every CPU (enabling sends IPIs, so
  // call this before the baseline). An error when tracing is impossible
  // (unprivileged, no tracefs, nothing could be opened). Individual missing
  // tracepoints are tolerated and listed in missing().
  static Expected<std::unique_ptr<Tracer>> open(const TracerOptions& opts);
  ~Tracer();  // disables and closes everything if stop() was not called
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Drain thread pinned to reader_cpu (never a victim CPU).
  void start_reader();
  std::int32_t reader_tid() const;  // the reader thread's tid once it runs (0 before)
  // Disable, final drain, close fds; events sorted by mono_ns, callchains and
  // addresses symbolized. Idempotent: a second call returns an empty trace.
  KernelTrace stop();

  // Live use without the reader thread (shootdown trace): drain now on the
  // calling thread, then take the events drained so far (per-CPU order;
  // callchain indices refer to callchain()).
  void drain();
  std::vector<KernelEvent> take_events();
  // Removes the events drained so far that lie in one of `ranges` ([from,
  // until) mono ns, sorted and disjoint), passing each to `each` (under the
  // tracer's lock: keep it short). The storage they held is reused (a run
  // past its memory limit keeps events bounded this way).
  void take_events_between(std::span<const std::pair<std::int64_t, std::int64_t>> ranges,
                           const std::function<void(const KernelEvent&)>& each);
  // Calls `each` for the events drained so far in [from_ns, until_ns), in
  // the order they are held (under the tracer's lock: keep it short).
  void each_event_between(std::int64_t from_ns, std::int64_t until_ns,
                          const std::function<void(const KernelEvent&)>& each) const;
  // Appends to `out`, in time order, the mono ns of the events drained so
  // far on `cpu` in [from_ns, until_ns) that `want` accepts.
  void event_times(int cpu, std::int64_t from_ns, std::int64_t until_ns,
                   const std::function<bool(const KernelEvent&)>& want, std::vector<std::int64_t>& out) const;
  // The interned target sets of ipi_send_cpumask events beyond CPU 63
  // (KernelEvent::cpumask indexes them; indices stay valid across takes).
  std::vector<CpuMask> cpumasks() const;
  CpuMask cpumask(int index) const;                     // empty when out of range
  std::string cpumask_note() const;                     // "" unless some sets were not kept (KernelTrace::missing)
  Callchain callchain(int index) const;                 // symbolized
  std::string symbolize(std::uint64_t addr) const;      // "func+0xoff" or "0x..."
  std::string function_name(std::uint64_t addr) const;  // "func" or ""

  const std::vector<std::string>& tracepoints() const { return tracepoints_; }
  const std::vector<std::string>& missing() const { return missing_; }
  std::int64_t start_ns() const { return start_ns_; }
  std::int64_t lost_events() const;  // so far (PERF_RECORD_LOST/LOST_SAMPLES seen)

  struct Impl;

 private:
  Tracer();
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> tracepoints_;
  std::vector<std::string> missing_;
  std::int64_t start_ns_ = 0;
};

// Root, CAP_PERFMON/CAP_SYS_ADMIN, or perf_event_paranoid == -1 plus a
// readable tracefs. An error saying what is missing otherwise.
Status tracing_permitted();

}  // namespace shootdown::sys
