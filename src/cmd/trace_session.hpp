// SPDX-License-Identifier: Apache-2.0
// The one home of tracer options and of the run's kernel evidence:
// exp::TraceSession over sys::Tracer, per run (open_kernel_trace) or one
// tracer shared by many trials (SharedTracer, compare).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "experiment/experiment.hpp"
#include "sys/perf_trace.hpp"

namespace shootdown::cmd {

// Every tracer of every subcommand is configured here.
//   cpus         CPUs to trace
//   culprit_cpu  callchains for reason-4 flushes and IPI sends on this CPU;
//                the reader thread is pinned to it (never a victim CPU)
//   avoid_cpu    without a culprit: the reader is pinned to the first traced
//                CPU other than this one (probe: never drain on the probe's CPU)
sys::TracerOptions tracer_options(const std::vector<int>& cpus, int culprit_cpu, bool callchains, int avoid_cpu = -1);

// The tracer settings of a run: the culprit and victim CPUs, callchains on
// the culprit, the reader pinned to the culprit CPU.
// bench/trace_overhead opens its tracers with exactly these.
sys::TracerOptions kernel_trace_options(const Plan& plan, bool callchains = true);

// The error says why when tracing is not permitted or nothing could be opened.
Expected<std::unique_ptr<exp::TraceSession>> open_kernel_trace(const Plan& plan);

// One kernel tracer for a whole compare, opened and enabled once before the
// first trial; each trial's TraceSession is a time window on it. Opening a
// Tracer per trial (tracefs formats, kallsyms, ~57 IPIs to enable) cost ~1 s
// per trial here, as much as the experiment itself. No callchains: compare
// needs counts and spans, not call sites. The rings are drained on the
// culprit thread at the window's start and end (a trial's events fit a 1 MiB
// ring many times over; losses are counted and recorded).
class SharedTracer {
 public:
  Expected<std::unique_ptr<exp::TraceSession>> open(const Plan& plan);

 private:
  bool tried_ = false;
  std::string why_;
  std::unique_ptr<sys::Tracer> tracer_;
};

}  // namespace shootdown::cmd
