// CLOCK_MONOTONIC -> CLOCK_REALTIME. Everything is measured in mono ns (it
// never jumps); exported timestamps (InfluxDB, .hlog StartTime, CSV unix
// times) need wall-clock time, so each run records the offset once.
#pragma once

#include <cstdint>

namespace shootdown::sys {

// CLOCK_REALTIME - CLOCK_MONOTONIC in ns: the narrowest of several
// mono/real/mono brackets, real paired with the bracket's midpoint
// (uncertainty: half the bracket, ~20 ns with the vDSO).
std::int64_t realtime_offset_ns() noexcept;

}  // namespace shootdown::sys
