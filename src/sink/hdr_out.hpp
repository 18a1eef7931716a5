// SPDX-License-Identifier: Apache-2.0
// victim.hlog and victim.hgrm (docs/formats-hdr.md, docs/formats.md).
// Serializers only: they build the text; OutputDir writes it.
//
// victim.hlog, one group of lines per report interval k:
//   START,LENGTH,MAX,HIST              untagged: interval k of every victim
//                                      summed (the combined stream)
//   Tag=cpuN,START,LENGTH,MAX,HIST     interval k of victim CPU N alone
//   Tag=cpuN.PHASE,...                 the same histogram, tagged with the
//                                      interval's phase (baseline|release|after)
// START is seconds from the run start (measure.start_ns; BaseTime is its
// wall-clock time when known), written with 3 decimals as Java's writer does
// (HdrHistogram_c's reader parses exactly "%d.%d" milliseconds; Java's keeps
// whole milliseconds). With --report-every DURATION (default 10ms) interval
// k is the same wall-clock slot on every victim and START grows by the
// duration, so the readers can place every interval; with a size,
// intervals shorter than 1 ms share a START. So `-tag cpu1` is victim 1's timeline and
// `-tag cpu1.release` the distribution of its release-window intervals.
#pragma once

#include <string>

#include "core/result.hpp"

namespace shootdown::sink {

// Tags used in victim.hlog for victim CPU cpu (and a phase).
std::string hlog_cpu_tag(int cpu);
std::string hlog_phase_tag(int cpu, const std::string& phase);

std::string victim_hlog(const Result& r);
// Percentile distribution (Java outputPercentileDistribution, ratio 1000)
// of the sum of the untagged intervals of victim_hlog(r).
std::string victim_hgrm(const Result& r);

}  // namespace shootdown::sink
