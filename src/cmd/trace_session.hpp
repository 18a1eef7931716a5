// The run's kernel evidence: exp::TraceSession over sys::Tracer. Opening
// enables every tracepoint (the experiment calls it before the baseline);
// start() starts the reader on the culprit CPU; stop() returns the trace.
#pragma once

#include <memory>
#include <string>

#include "core/result.hpp"
#include "experiment/experiment.hpp"
#include "sys/perf_trace.hpp"

namespace shootdown::cmd {

// The tracer settings of a run: the culprit and victim CPUs, callchains on
// the culprit, the reader pinned to the culprit CPU (never a victim CPU).
// bench/trace_overhead opens its tracers with exactly these.
sys::TracerOptions kernel_trace_options(const Plan& plan);

// nullptr + why when tracing is not permitted or nothing could be opened.
std::unique_ptr<exp::TraceSession> open_kernel_trace(const Plan& plan, std::string* why);

}  // namespace shootdown::cmd
