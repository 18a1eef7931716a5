// The run's kernel evidence: exp::TraceSession over sys::Tracer. Opening
// enables every tracepoint (the experiment calls it before the baseline);
// start() starts the reader on the culprit CPU; stop() returns the trace.
#pragma once

#include <memory>
#include <string>

#include "core/result.hpp"
#include "experiment/experiment.hpp"

namespace shootdown::cmd {

// nullptr + why when tracing is not permitted or nothing could be opened.
std::unique_ptr<exp::TraceSession> open_kernel_trace(const Plan& plan, std::string* why);

}  // namespace shootdown::cmd
