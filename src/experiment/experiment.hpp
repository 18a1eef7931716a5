// SPDX-License-Identifier: Apache-2.0
// Orchestration of one experiment: arena → victims (pinned, prepared) →
// kernel tracing on → barrier → baseline → release(s) with markers → after
// window → stop → build the Result (samples converted to CLOCK_MONOTONIC).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "core/expected.hpp"
#include "core/result.hpp"
#include "experiment/arena.hpp"

namespace shootdown::exp {

// Kernel evidence is collected by the caller's tracer (src/sys), kept out of
// the experiment so it can run without privileges.
class TraceSession {
 public:
  virtual ~TraceSession() = default;
  virtual void start() = 0;        // called before the baseline begins
  virtual KernelTrace stop() = 0;  // called after the measurement ends
  // The tid of a thread of this process that reads the trace (0: none).
  virtual std::int32_t reader_tid() const { return 0; }
  // Count, and stop keeping, the events drained so far in `ranges` ([from,
  // until) mono ns, sorted, disjoint): no victim holds raw samples there (a
  // run past its memory limit). stop() returns them in KernelTrace::folded.
  virtual void fold(std::span<const std::pair<std::int64_t, std::int64_t>> ranges) { (void)ranges; }
  // Calls each(cpu, mono_ns) for the IPIs drained so far (a tlb_flush
  // reason 1, a function-call IPI entry) on `cpus` in [from_ns, until_ns).
  virtual void ipis(std::span<const int> cpus, std::int64_t from_ns, std::int64_t until_ns,
                    const std::function<void(int, std::int64_t)>& each) {
    (void)cpus;
    (void)from_ns;
    (void)until_ns;
    (void)each;
  }
};

struct Hooks {
  // Status lines ("preparing", "baseline", "release 1/3"...); may be empty.
  std::function<void(const std::string& phase)> on_phase;
  // Called ~10 times a second while measuring with the samples so far.
  std::function<void(std::int64_t elapsed_ns, std::size_t samples)> on_tick;
  // Opens kernel tracing for the plan's CPUs; an error = no tracing (the
  // reason is recorded in the result).
  std::function<Expected<std::unique_ptr<TraceSession>>(const Plan&)> open_trace;
  // For --trigger enter: prompt text printed before waiting.
  std::function<void(const std::string&)> prompt;
  // Optional: the victim on `cpu` measures on this chunk B instead of a
  // fresh one (compare keeps B across trials; chunk A is always fresh). The
  // chunk must outlive the experiment; nullptr = allocate as usual.
  std::function<Chunk*(int cpu, std::size_t size, PageMode mode, int node)> victim_chunk;
  // Optional: a slot, kept across experiments, that the victim on `cpu`
  // uses for its sample ring: it maps a larger ring there when the slot is
  // too small and otherwise reuses the pages an earlier trial faulted in and
  // locked (compare: a ring of ~200 MB took ~1 s per trial to map and
  // pre-fault). nullptr = a fresh ring per experiment.
  std::function<Chunk*(int cpu, int node)> victim_ring;
};

// Runs the experiment. Never throws for signals: a SIGINT/SIGTERM (see
// sys::StopSignals) ends it early with Result::complete = false. Throws
// std::runtime_error for failures that leave no result (e.g. cannot pin).
Result run_experiment(const Plan& plan, const Hooks& hooks);

}  // namespace shootdown::exp
