// SPDX-License-Identifier: Apache-2.0
// A run's result as InfluxDB points (schema: docs/formats.md, "InfluxDB").
// Pure: the transport is src/sys/net.hpp, the policy src/cmd/influx_out.cpp.
//
//   shootdown_interval  one point per report interval per victim, at the
//                       interval's end: count/min/p50/p90/p99/p999/max
//                       (integer ns), mean (float ns), interval index
//   shootdown_marker    one point per release marker (marker=before|after)
//   shootdown_interrupts  /proc/interrupts deltas per CPU, at measure end
//   shootdown_trace     kernel trace event counts per CPU and event, at
//                       measure end (only when the trace recorded events)
//   shootdown_phase     per victim and phase: the console table (per batch),
//                       at measure end
// Common tags: run_id, release (strategy), pages. Timestamps: mono ns +
// Result::realtime_offset_ns (CLOCK_REALTIME ns).
#pragma once

#include <vector>

#include "core/analysis_types.hpp"
#include "core/result.hpp"
#include "sink/influx.hpp"

namespace shootdown::sink {

std::vector<influx::Point> result_points(const Result& r, const Analysis& a);

}  // namespace shootdown::sink
