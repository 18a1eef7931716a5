// What analysis computes over a Result, as data: the phase tables, the
// attribution, the kernel event counts and marks. Sinks format these; they
// include this header, not core/analysis.hpp (which computes them).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/attribution_types.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"

namespace shootdown {

enum class Phase : std::uint8_t { kBaseline = 0, kRelease = 1, kAfter = 2 };
const char* to_string(Phase p);

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
  // Per-phase latency histograms (baseline, release, after) of every sample;
  // empty when the raw samples are not all there (a result read back).
  std::vector<hdr::Histogram> phase_histograms;
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

// Restoring, not analysing: r.saved_attribution (read back from result.json)
// with its labels mapped onto the kept raw-window samples through
// VictimSamples::index. Nothing is recomputed; json_read calls it.
Attribution restore_saved_attribution(const Result& r);

}  // namespace shootdown
