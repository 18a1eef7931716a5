// Pure analysis over a Result: phases, intervals, per-phase statistics.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/attribution.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"

namespace shootdown {

enum class Phase : std::uint8_t { kBaseline = 0, kRelease = 1, kAfter = 2 };
const char* to_string(Phase p);

// Phase of the instant t (a sample's span end): baseline before the first
// release's "before" marker; release inside [before, after + settle] of any
// release; after otherwise.
Phase phase_at(const Result& r, std::int64_t t_ns);

// Phase of every sample of a victim.
std::vector<Phase> sample_phases(const Result& r, const VictimSamples& v);

// Rebuilds r.intervals from r.victims: one interval per --report-every bytes
// of writes per victim; an interval overlapping a release window is
// "release", else the phase of its end.
void build_intervals(Result& r);

struct PhaseStats {
  Phase phase;
  Summary per_batch;             // ns per batch
  Summary per_page;              // ns per page (per_batch / pages per batch)
  std::int64_t duration_ns = 0;  // time covered by the samples of this phase
};

struct VictimAnalysis {
  int cpu = -1;
  std::int64_t pages_per_batch = 0;
  std::vector<PhaseStats> phases;  // baseline, release, after (always 3)
  std::int64_t samples = 0;
};

struct Analysis {
  std::vector<VictimAnalysis> victims;
  Summary release_duration;  // ns, over the releases
  // Kernel-evidence labels per sample and per-victim summaries
  // (core/attribution.hpp); available == false without a kernel trace.
  Attribution attribution;
  // The phase tables again over `clean` samples only (same order as victims;
  // empty without attribution).
  std::vector<VictimAnalysis> clean_victims;
  // Kernel events: counts per (cpu, type) and their total (core/event_counts),
  // and the incidents on each victim CPU as timeline marks (core/attribution).
  std::vector<EventCount> event_counts;
  std::int64_t event_total = 0;
  std::map<int, std::vector<EventMark>> marks;
  struct MarkCounts {
    std::int64_t all = 0;         // shootdown marks on the CPU
    std::int64_t in_windows = 0;  // of them inside release windows
  };
  std::map<int, MarkCounts> shootdown_marks;  // by victim CPU
};

// The attribution of r: r.saved_attribution when r has no full sample series
// (read back from result.json), its labels mapped onto the kept raw-window
// samples through VictimSamples::index; else attribute_result(r).
Attribution result_attribution(const Result& r);
// r.saved_attribution with its labels mapped onto the kept raw-window samples
// (a result read back from result.json); nothing is recomputed.
Attribution restore_saved_attribution(const Result& r);
// What a result read back from result.json needs beyond what it saved: the
// timeline marks of its kept kernel events. `report` calls it after loading.
void complete_loaded_analysis(const Result& r, Analysis& a);

// mask (optional): only samples whose mask entry is true are counted.
VictimAnalysis analyze_victim(const Result& r, const VictimSamples& v, const std::vector<bool>* mask = nullptr);
Analysis analyze(const Result& r);

}  // namespace shootdown
