// SPDX-License-Identifier: Apache-2.0
// Pure analysis over a Result: phases, intervals, per-phase statistics.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/analysis_types.hpp"
#include "core/attribution.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"

namespace shootdown {

// Phase of the instant t (a sample's span end): baseline before the first
// release's "before" marker; release inside [before, after + settle] of any
// release; after otherwise.
Phase phase_at(const Result& r, std::int64_t t_ns);

// Phase of an interval [start, end]: release when it overlaps a release
// window (before .. after + settle), else the phase of its end.
Phase interval_phase(const Result& r, std::int64_t start_ns, std::int64_t end_ns);

// Phase of every sample of a victim.
std::vector<Phase> sample_phases(const Result& r, const VictimSamples& v);

// Rebuilds r.intervals from r.victims: one interval per --report-every bytes
// of writes per victim; an interval overlapping a release window is
// "release", else the phase of its end.
void build_intervals(Result& r);

// The attribution of r: r.saved_attribution when r has no full sample series
// (read back from result.json), its labels mapped onto the kept raw-window
// samples through VictimSamples::index; else attribute_result(r).
Attribution result_attribution(const Result& r);
// What analyze() derives from kernel evidence alone, and what a result read
// back from result.json needs beyond what it saved: the timeline marks of its
// kept kernel events. `report` calls it after loading.
void complete_loaded_analysis(const Result& r, Analysis& a);

// mask (optional): only samples whose mask entry is true are counted.
// baseline_median_ns: the median stall time lost is measured from (0: the
// exact median of the victim's baseline samples, as attribution takes it).
// Without a mask the release and after phases are also compared with the
// baseline's own spread (PhaseStats::beyond_spread).
VictimAnalysis analyze_victim(const Result& r, const VictimSamples& v, const std::vector<bool>* mask = nullptr,
                              std::int64_t baseline_median_ns = 0);

Analysis analyze(const Result& r);

}  // namespace shootdown
