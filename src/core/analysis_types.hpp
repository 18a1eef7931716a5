// SPDX-License-Identifier: Apache-2.0
// What analysis computes over a Result, as data: the phase tables, the
// attribution, the kernel event counts and marks. Sinks format these; they
// include this header, not core/analysis.hpp (which computes them).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/attribution_types.hpp"
#include "core/result.hpp"
#include "core/stats.hpp"

namespace shootdown {

// The columns of a phase table, as bits of PhaseStats::beyond_spread.
enum class Column : std::uint8_t { kMin, kMean, kP50, kP90, kP99, kP999, kP9999, kP99999, kMax };
inline constexpr int kColumnCount = 9;
const char* column_name(Column c);  // "min", "mean", "p50", ..., "p99.999", "max"
double column_value(const Summary& s, Column c);
// Fewest samples for which a column means something: a quantile q needs
// 1 / (1 - q) samples (one beyond it), p99.99 10 000, p99.999 100 000.
std::int64_t column_min_samples(Column c);

struct PhaseStats {
  Phase phase;
  Summary per_batch;             // ns per batch
  Summary per_page;              // ns per page (per_batch / pages per batch)
  std::int64_t duration_ns = 0;  // time covered by the samples of this phase
  // Stall time lost: sum over the phase's samples of max(0, latency -
  // baseline median), the same measure attribution sums per label.
  std::int64_t stall_lost_ns = 0;
  // Bit (1 << Column) set where this phase's per-batch value lies outside the
  // range the same column takes over the baseline's own windows
  // (VictimAnalysis::spread_*): release and after only.
  std::uint16_t beyond_spread = 0;
};

struct VictimAnalysis {
  int cpu = -1;
  std::int64_t pages_per_batch = 0;
  std::vector<PhaseStats> phases;  // baseline, release, after (always 3)
  std::int64_t samples = 0;
  // Per-phase latency histograms (baseline, release, after) of every sample;
  // empty when the raw samples are not all there (a result read back).
  std::vector<hdr::Histogram> phase_histograms;
  // The baseline cut into spread_windows consecutive windows of
  // spread_window_ns (the release phase's length, or baseline / 10 when that
  // gives fewer than 10): 0 windows = no marks (too little baseline, or a
  // result read back without its samples).
  int spread_windows = 0;
  std::int64_t spread_window_ns = 0;
};

// The answer in one line per victim (sink::verdict_line formats it): what
// the release cost this victim, from the kernel-verified attribution.
struct VictimVerdict {
  int cpu = -1;
  bool evidence = false;        // kernel attribution for this victim
  std::int64_t shootdowns = 0;  // reason-1 flush IPIs of our mm received during the release calls
  // ... received in the counted span outside every release call: the tool's
  // own flushes (Attribution::own_flushes), never counted as the strategy's.
  std::int64_t own_outside = 0;
  std::int64_t own_outside_stall_ns = 0;  // their stall, not in stall_ns
  std::int64_t seen = 0;                  // of them inside a victim sample
  std::int64_t stall_ns = 0;              // stall lost in tlb-shootdown samples (less own_outside_stall_ns)
  std::int64_t per_ipi_p50_ns = 0;        // victim stall per shootdown IPI, median
  std::int64_t foreign = 0;               // flushes for other processes' mm (not ours)
  std::int64_t tlb_delta = -1;            // /proc/interrupts TLB delta on the CPU (-1 unknown)
  bool off_cpu_in_release = false;        // the victim was switched out during a release
  // The culprit's remote flush requests while the victim ran, and how many
  // arrived here as flush IPIs (VictimAttribution::flush_requests).
  std::int64_t flush_requests = 0;
  std::int64_t flush_requests_delivered = 0;
  // Fewer than half of them arrived: remote flushes bypass IPIs here (a
  // hypervisor's paravirtual flush), so "no shootdown IPI" is not "no flush".
  bool flushes_unseen = false;
  // Releases ran, no remote flush was requested through an IPI, no
  // shootdown arrived, and this CPU and kernel flush remote TLBs by AMD
  // INVLPGB broadcast (doctor's tlb_broadcast): the flushes happened without
  // IPIs or tlb_flush events, so "no shootdown IPI" is not "no cost" (the
  // releasing thread waits in TLBSYNC instead).
  bool broadcast_flush = false;
};
struct Verdict {
  std::string unknown;  // why the shootdowns are unknown ("" = known)
  // Remote flushes the tool's own threads made outside the release calls
  // (Attribution::own_flushes): named in the verdict, never the strategy's.
  std::vector<OwnFlush> own_flushes;
  std::int64_t releases = 0;           // releases performed
  std::int64_t release_window_ns = 0;  // sum of the release calls' durations
  std::int64_t release_p50_ns = 0;     // per release
  std::vector<VictimVerdict> victims;
  std::string broadcast_by;  // "AMD INVLPGB", "Intel RAR": doctor's tlb_broadcast WARN ("" none)
};

// The price list of a memory-workload release, per GiB released (over all
// releases; reuse: rewritten): shootdown IPIs and stall lost per victim (mean
// over the victims with kernel evidence), the culprit's release time, and
// the memory kept (MemoryKept of the last release, per GiB it released).
// NaN when unknown.
struct ReleaseCost {
  double gib_released = 0;
  double shootdowns_per_gib = 0;
  double stall_ms_per_gib = 0;
  double release_ms_per_gib = 0;
  double kept_mib_per_gib = 0;
};
// nullopt without a release or a MemoryKept (journal, probe, older results).
std::optional<ReleaseCost> release_cost(const Result& r, const Verdict& v);

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
  Verdict verdict;
};

// Restoring, not analysing: r.saved_attribution (read back from result.json)
// with its labels mapped onto the kept raw-window samples through
// VictimSamples::index. Nothing is recomputed; json_read calls it.
Attribution restore_saved_attribution(const Result& r);

// The one-line answer per victim from the attribution, the releases and the
// /proc/interrupts deltas (Analysis::verdict); json_read calls it on what it
// restored, so a re-rendered report states the same verdict.
Verdict make_verdict(const Result& r, const Analysis& a);

}  // namespace shootdown
