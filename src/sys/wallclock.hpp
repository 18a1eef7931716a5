// SPDX-License-Identifier: Apache-2.0
// CLOCK_MONOTONIC -> CLOCK_REALTIME. Everything is measured in mono ns (it
// never jumps); exported timestamps (InfluxDB, .hlog StartTime, CSV unix
// times) need wall-clock time, so each run records the offset once.
#pragma once

#include <cstdint>
#include <string>

namespace shootdown::sys {

// CLOCK_REALTIME - CLOCK_MONOTONIC in ns: the narrowest of several
// mono/real/mono brackets, real paired with the bracket's midpoint
// (uncertainty: half the bracket, ~20 ns with the vDSO).
std::int64_t realtime_offset_ns() noexcept;
// Wall-clock time now as "2026-12-02T14:08:53Z" (UTC).
std::string iso_now();
// 8 random hex digits (std::random_device) naming a run.
std::string make_run_id();
// This process's command line, arguments joined by spaces (/proc/self/cmdline).
std::string read_cmdline_self();

}  // namespace shootdown::sys
