// SPDX-License-Identifier: Apache-2.0
// The result of one `shootdown run`: everything measured and the context to
// judge it. Pure data; serialized by src/sink/json.cpp (schema: docs/formats.md),
// analysed by src/core/analysis.hpp. Units: ns unless a name says otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/attribution_types.hpp"
#include "core/blame.hpp"
#include "core/doctor.hpp"
#include "core/events.hpp"
#include "core/hdr/histogram.hpp"
#include "core/samples.hpp"
#include "core/stats.hpp"
#include "core/strategy.hpp"

namespace shootdown {

inline constexpr int kResultSchemaVersion = 1;
// result.json keeps at most this many kernel events (trace.events_table).
inline constexpr std::size_t kResultMaxEvents = 500000;

struct Environment {
  std::string hostname;
  std::string kernel;          // uname -r
  std::string kernel_version;  // uname -v
  std::string machine;         // uname -m
  std::string cpu_model;
  std::string cmdline;      // /proc/cmdline
  std::string thp_enabled;  // always|madvise|never
  std::string thp_defrag;
  bool virtualized = false;  // cpuid hypervisor flag
  std::string hypervisor;    // "KVM", ... from /sys/hypervisor or dmi, "" when unknown
  bool constant_tsc = false;
  bool nonstop_tsc = false;
  bool pcid = false;
  bool invpcid = false;
  std::string clocksource;
  int online_cpus = 0;
  int numa_nodes = 1;
  std::string build_type;             // Release, Debug, +address...
  std::string version;                // shootdown version
  double tsc_hz = 0;                  // fitted over the whole run
  double tsc_hz_pre = 0;              // from the short calibration before the run (used in the hot loop)
  double tsc_drift_ppm = 0;           // (pre - fitted) / fitted * 1e6
  std::vector<std::string> warnings;  // facts that undermine the numbers
};

// --memory-limit's least per victim: a 32 MiB sample store (8 blocks of
// 4 MiB, enough to keep a release window raw while it folds the rest),
// times 8 for the analysis after the run (32 bytes per 4-byte sample).
inline constexpr std::int64_t kMemoryLimitPerVictim = 256LL << 20;
// --memory-limit's default: 512 MiB (a 64 MiB store, ~2.5 s of raw samples
// at this guest's 6.6 M batches/s) or the least for the victims if more.
// Measured: peak RSS beyond the chunks ~160 MiB; 1 GiB took 540 MiB and
// 6.5 s of post-processing for its 32 M raw samples (docs/methodology).
inline constexpr std::int64_t kMemoryLimitDefault = 512LL << 20;

// A CPU's part in a run (/proc/interrupts deltas); a probe's CPU is its victim.
enum class CpuRole : std::uint8_t { kCulprit, kVictim, kOther };
const char* to_string(CpuRole r);  // "culprit", "victim", "other"
std::optional<CpuRole> parse_cpu_role(std::string_view s);

// The phases of a run: before the first release, the release windows, after.
enum class Phase : std::uint8_t { kBaseline = 0, kRelease = 1, kAfter = 2 };
const char* to_string(Phase p);  // "baseline", "release", "after"
std::optional<Phase> parse_phase(std::string_view s);

// When the release starts: a delay after the baseline (--trigger after=D),
// Enter on the terminal, or (probe) whenever the command does it. Parsed
// once at the CLI edge; result.json spells them as trigger_name() does.
enum class Trigger { kAfter, kEnter, kCommand };
std::string_view trigger_name(Trigger t);  // "after", "enter", "command"
std::optional<Trigger> parse_trigger(std::string_view s);
// The kernel evidence asked for: run auto|on|off, monitor also count|bpf|ring.
enum class TraceMode { kAuto, kOn, kOff, kCount, kBpf, kRing };
std::string_view trace_mode_name(TraceMode m);  // "auto", "on", "off", "count", "bpf", "ring"
std::optional<TraceMode> parse_trace_mode(std::string_view s);

struct Plan {
  int culprit_cpu = -1;
  std::vector<int> victim_cpus;
  std::string cpu_choice;       // "given" or "default: ..." explanation
  std::int64_t chunk_size = 0;  // bytes, per chunk (A and B)
  std::int64_t chunk_size_requested = 0;
  bool chunk_capped = false;
  std::int64_t batch = 0;            // bytes per timed batch
  std::int64_t report_every = 0;     // bytes of victim writes per interval (0: by time, report_every_ns)
  std::int64_t report_every_ns = 0;  // wall time per interval (0: by size, report_every)
  PageMode pages = PageMode::k4k;
  std::int64_t page_size = 4096;  // bytes
  ReleaseStrategy release = ReleaseStrategy::kFree;
  // paced / chunked (--pace SIZE/DURATION): bytes per madvise step and the
  // pause after each step; 0 for every other strategy.
  std::int64_t pace_step = 0;
  std::int64_t pace_gap_ns = 0;
  Pace pace() const { return {pace_step, pace_gap_ns}; }
  // Allocator arms (glibc-malloc, jemalloc, tcmalloc, mimalloc): the
  // allocator's own settings (--allocator-conf, core/churn_plan.hpp) and whether
  // the release ends with its "give free memory back now" call
  // (--allocator-purge on|off).
  std::string allocator_conf;
  bool allocator_purge = true;
  Trigger trigger = Trigger::kAfter;
  std::int64_t trigger_after_ns = 0;
  int repeat = 1;
  std::int64_t every_ns = 0;     // between repeated releases
  std::int64_t baseline_ns = 0;  // minimum baseline before the first release
  std::int64_t settle_ns = 0;    // release window extends this far past "after"
  std::int64_t after_ns = 0;     // measured after the last release window
  TraceMode trace = TraceMode::kAuto;
  std::int64_t stall_threshold_ns = 0;  // 0 = auto (8 x baseline median)
  double stall_factor = 8.0;
  bool mlock = true;
  bool rt = false;  // victims SCHED_FIFO (--rt)
  // --memory-limit: bytes for the victims' stored samples and their analysis
  // after the run (8 bytes per stored byte); the run lowers it further to
  // fit MemAvailable and the memory cgroup (0, in results of older
  // versions: from those only). A full store folds samples into interval
  // histograms, keeping raw windows around the releases (core/compaction),
  // instead of ending the run.
  std::int64_t memory_limit = 0;
  int numa_node = 0;
  // --workload journal (compare): segment file size and directory ("" = /dev/shm, else /tmp).
  std::int64_t segment_size = 0;
  std::string journal_dir;
};

// One culprit release: markers bracket the release call.
struct Release {
  int index = 0;
  std::int64_t before_ns = 0;  // mono ns just before the call
  std::int64_t after_ns = 0;   // mono ns just after it returned
  std::int64_t duration_ns() const { return after_ns - before_ns; }
  ReleaseStrategy strategy = ReleaseStrategy::kFree;
  std::int64_t bytes = 0;  // what was released (a partial release: the part done)
  // Stopped before all of it was released (a paced release interrupted by a
  // signal between steps, or a step that failed): bytes is what was done.
  bool partial = false;
};

// Allocator arms: which allocator the churn went through, with what, and the
// memory it kept. Byte counts are -1 when unknown.
struct AllocatorReport {
  std::string name;         // "jemalloc"
  std::string library;      // the loaded file ("" for glibc: the process's own malloc)
  std::string version;      // the allocator's own report ("5.3.0-0-g54eaed1d...", "2.36")
  std::string conf;         // --allocator-conf as given ("" = the allocator's defaults)
  std::string settings;     // release-relevant settings read back from the allocator
  std::string purge_call;   // the call that ended each release ("" with --allocator-purge off)
  std::int64_t blocks = 0;  // blocks in the live set
  std::int64_t live_bytes = 0;
  std::int64_t freed_bytes = 0;            // per release
  std::int64_t allocator_free_bytes = -1;  // the allocator's own count of free bytes it holds when the release settled
  std::string allocator_free_source;       // which statistic ("stats.resident - stats.allocated", ...)
};

// What a release left resident (memory workload): the process's RSS just
// before the last release and when it had settled (end of the after phase).
// kept_bytes = max(0, released - (rss_before - rss_settled)): released (or,
// for reuse, rewritten) but still resident — the price of not stalling.
// -1 = unknown.
struct MemoryKept {
  std::int64_t released_bytes = 0;  // by the last release
  std::int64_t rss_before = -1;
  std::int64_t rss_settled = -1;
  std::int64_t kept_bytes = -1;
};
std::int64_t memory_kept_bytes(std::int64_t released, std::int64_t rss_before, std::int64_t rss_settled);

// One report interval of one victim (--report-every: a duration of wall
// time, or a size of writes).
struct Interval {
  int victim_cpu = -1;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  Phase phase = Phase::kBaseline;  // the phase of the interval's majority
  // The interval's HDR histogram (layout of make_latency_histogram(): 1 ns ..
  // 1 h, 3 digits) kept sparse: an interval holds --report-every / --batch
  // samples (512 by default), so its non-zero buckets are few, while a full
  // histogram of this layout is 216 KiB — times ~20k intervals in a 4 GiB run.
  std::vector<std::pair<std::int32_t, std::int64_t>> counts;  // (counts index, count), ascending
  Summary summary;                                            // of the histogram, computed once
  // Summarized by a full sample store while the run went on (its raw
  // samples were not kept); false: built from raw samples after the run.
  bool folded = false;

  hdr::Histogram histogram() const;             // the full histogram, built on demand
  void add_to(hdr::Histogram& h) const;         // adds the counts (h: latency layout)
  void set_histogram(const hdr::Histogram& h);  // fills counts and summary
  std::int64_t total_count() const { return summary.count; }
};

struct CpuCounters {
  int cpu = -1;
  CpuRole role = CpuRole::kOther;
  std::int64_t tlb = 0;  // /proc/interrupts TLB delta
  std::int64_t cal = 0;  // CAL delta
  std::int64_t loc = 0;  // LOC delta
  std::int64_t res = 0;  // RES delta
};

struct EventCount {
  int cpu = -1;
  std::string event;  // event_type_name()
  std::int64_t count = 0;
};

// `shootdown probe`: which process of the target a result measured and how
// its probe ended (a wrapper's image exec'd, a shell handed its CPU over to
// the child it started, the process exited, ...).
enum class ProbeFate { kUntilEnd, kExited, kExeced, kHandedOver, kOverrun, kFailed, kNoCpu, kGone };
std::string_view probe_fate_name(ProbeFate f);
std::optional<ProbeFate> parse_probe_fate(std::string_view s);

struct ProbeProcess {
  int pid = 0;
  int ppid = 0;
  std::string comm;  // the program's name in that image (after exec: the new program)
  int image = 0;     // claim order among the target's images (0 = the command as started)
  int cpu = -1;      // probe CPU, -1 none
  ProbeFate fate = ProbeFate::kUntilEnd;
  int successor_pid = 0;  // kExeced / kHandedOver: who took the probe CPU
  std::string successor_comm;
  std::string error;  // kFailed
  std::int64_t samples = 0;
  std::int64_t probed_ns = 0;
};

struct Result {
  int schema_version = kResultSchemaVersion;
  std::string run_id;
  std::string started_at;  // ISO 8601 UTC
  std::string command_line;
  bool complete = true;
  std::string incomplete_reason;  // "interrupted by SIGINT during baseline"
  int exit_signal = 0;
  Environment env;
  Plan plan;
  std::vector<std::string> warnings;  // run-time warnings (mlock failed, ...)
  std::int64_t measure_start_ns = 0;  // mono ns: victims released from the barrier
  std::int64_t measure_end_ns = 0;
  // CLOCK_REALTIME - CLOCK_MONOTONIC in ns, read at run start (0 = unknown):
  // wall-clock time of a mono instant t is t + realtime_offset_ns (.hlog
  // StartTime, InfluxDB timestamps, timeline.csv unix times).
  std::int64_t realtime_offset_ns = 0;
  std::vector<Release> releases;
  // The measuring process and its threads (a run; 0 / empty otherwise):
  // tid -> role ("culprit", "drainer", "victim cpu1"). A flush one of them
  // makes outside the release calls is the tool's own, named as such.
  std::int32_t own_pid = 0;
  std::vector<std::pair<std::int32_t, std::string>> own_threads;
  std::optional<AllocatorReport> allocator;  // allocator arms only
  std::optional<MemoryKept> memory;          // memory workload with a release
  std::vector<VictimSamples> victims;        // every sample, in memory; not all serialized
  std::vector<Interval> intervals;           // built from the samples after the run
  std::vector<CpuCounters> counters;
  std::int64_t interrupts_span_ns = 0;  // between the two /proc/interrupts snapshots
  // mono ns of the first snapshot (0 = unknown). The window [start, start +
  // span] is the counted span: it ends before the victims are told to stop,
  // so their exit and the teardown (our own flushes) fall outside it.
  std::int64_t interrupts_start_ns = 0;
  KernelTrace trace;
  std::vector<DoctorFinding> doctor;  // `shootdown doctor` checks for the CPUs used
  // Kernel events per CPU and type. Empty after a run (computed from
  // trace.events by event_counts()); filled when a result is read back from
  // result.json, which keeps the counts but not the events.
  std::vector<EventCount> trace_counts;
  // The stall attribution as result.json saved it (labels per original
  // sample, expanded from label_runs). Empty after a run; filled when a
  // result is read back: analyze() uses it instead of recomputing from
  // partial samples (core/analysis.hpp result_attribution()).
  std::optional<Attribution> saved_attribution;
  bool events_truncated = false;         // trace.events holds only the first kResultMaxEvents (read back)
  std::optional<ProbeProcess> probe;     // `shootdown probe`: the process this result measured
  std::vector<ProbeProcess> probe_seen;  // ... and every process image of the target it saw, in order
  // ... and who sent the shootdowns: the target's call sites (blame's report,
  // top sites only); result.json `callsites` (read back for report DIR).
  std::optional<BlameReport> probe_callsites;
};

}  // namespace shootdown
