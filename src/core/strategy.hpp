// SPDX-License-Identifier: Apache-2.0
// Release strategies and page modes: one table each, the only place their
// names, enums, descriptions and re-arm rules are spelled. cli validates
// against it, experiment switches on the enum, compare builds its arm lists
// from it and the sinks print its names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace shootdown {

enum class ReleaseStrategy {
  kFree,             // glibc free() of a malloc'd (mmap-backed) block
  kMunmap,           // munmap(A)
  kMadviseDontneed,  // madvise(A, MADV_DONTNEED)
  kMadviseFree,      // madvise(A, MADV_FREE)
  kMprotect,         // mprotect(A, PROT_READ), restored to RW after the marker
  kMadviseRanges,    // madvise(DONTNEED) of every other 64 KiB extent of A, one call per extent
  kProcessMadvise,   // the same extents in process_madvise(DONTNEED) vectors (up to 1024 per call)
  kPaced,            // madvise(DONTNEED) of A in small steps with short gaps (a scavenger: Go, tcmalloc)
  kChunked,          // madvise(DONTNEED) of A in large steps with long gaps (G1's uncommit)
  kGlibcMalloc,      // allocator arm: a churn of mixed-size blocks through glibc malloc, 7/8 freed, malloc_trim
  kJemalloc,         // ... through jemalloc (dlopen'ed libjemalloc.so.2), arena purge
  kTcmalloc,         // ... through tcmalloc (libtcmalloc_minimal.so.4), ReleaseFreeMemory
  kMimalloc,         // ... through mimalloc (libmimalloc.so.2), mi_collect
  kReuse,            // write A again instead of releasing it: the control arm
  kMembarrier,       // membarrier(PRIVATE_EXPEDITED): a controlled non-TLB IPI source (validation)
  kJournalUnmap,     // journal writer: munmap + unlink each full segment, map a new one
  kJournalRecycle,   // journal writer: pre-allocated pool of segments reused
  kProbe,            // not a release: `probe` measures a foreign program (its results carry this name)
};

// Which experiment a strategy belongs to.
enum class Workload {
  kMemory,   // releases chunk A (run --release, compare arms)
  kJournal,  // drives exp::Journal (compare --workload journal)
  kNone,     // not selectable (probe)
};

// What makes chunk A usable again between repeats (outside the timed window).
enum class Rearm {
  kNothing,            // A is untouched (reuse, membarrier) or not a chunk (journal)
  kReallocate,         // map/allocate and pre-fault a new A (free, munmap)
  kRefault,            // write every page again (madvise)
  kRestoreProtection,  // mprotect back to read-write
};

struct StrategyInfo {
  ReleaseStrategy id;
  std::string_view name;
  Workload workload;
  Rearm rearm;
  bool run_option;       // accepted by run --release (memory strategies and membarrier)
  bool compare_arm;      // accepted as a compare arm of its workload
  std::string_view tag;  // short note shown in --help ("control"), may be empty
  std::string_view description;
};

// madvise-ranges / process-madvise: A is cut into extents of this size and
// every other one is released (the ones between stay mapped and written:
// scattered free extents interleaved with live memory, as an allocator's).
inline constexpr std::size_t kExtentBytes = 64 << 10;
// Bytes a release of chunk A (of chunk_bytes) gives back under s.
std::int64_t released_bytes(ReleaseStrategy s, std::int64_t chunk_bytes);

// paced / chunked: A is released by madvise(MADV_DONTNEED) steps of `step`
// bytes; after each step the culprit sleeps `gap_ns` (from the end of that
// step to the start of the next) before the next one. run/compare --pace
// SIZE/DURATION overrides the defaults.
struct Pace {
  std::int64_t step = 0;    // bytes per madvise call
  std::int64_t gap_ns = 0;  // pause after each step but the last
};
bool is_paced(ReleaseStrategy s);
// glibc-malloc, jemalloc, tcmalloc, mimalloc: the culprit frees blocks of an
// allocation churn (core/churn_plan.hpp) through that allocator instead of
// releasing chunk A; chunk_size is the churn's live size.
bool is_allocator_arm(ReleaseStrategy s);
// paced: 64 KiB every 100 us; chunked: 64 MiB every 10 ms; else {0, 0}.
Pace default_pace(ReleaseStrategy s);
// Steps of `step` bytes that release `bytes` (the last one may be shorter).
std::int64_t pace_steps(std::int64_t bytes, std::int64_t step);
// "100 us", "10 ms", "1.5 ms": a gap in the unit that prints it shortest.
std::string format_gap(std::int64_t ns);

// The option's form of a pace: "64KiB/100us".
std::string format_pace(Pace pace);
// A release stopped part way (Release::partial): "stopped after 1.25 GiB of 4 GiB".
std::string partial_release_note(std::int64_t released, std::int64_t whole);

// What one release gives back, in words: "256 MiB", for the extent
// strategies "128 MiB in 2048 extents of 64 KiB", for the paced ones (pace
// given) "4 GiB in 65536 steps of 64 KiB with 100 us gaps".
std::string released_what(ReleaseStrategy s, std::int64_t chunk_bytes, Pace pace = {});

std::span<const StrategyInfo> strategies();
const StrategyInfo& strategy_info(ReleaseStrategy s);
std::string_view strategy_name(ReleaseStrategy s);
std::optional<ReleaseStrategy> find_strategy(std::string_view name);
// "free, munmap, ..." for error messages and help: strategies accepted by
// run --release (run_option) or as compare arms of one workload.
std::string run_strategy_list();
// run --release help: "free, munmap, ..., reuse (control), membarrier (IPI validation)".
std::string run_strategy_help();
std::string compare_arm_list(Workload w);
bool is_compare_arm(ReleaseStrategy s, Workload w);

enum class PageMode { k4k, kThp, kHugetlb };

struct PageModeInfo {
  PageMode id;
  std::string_view name;
  std::string_view tag;  // short note shown in --help, may be empty
  std::string_view description;
};

std::string_view page_mode_name(PageMode m);
std::optional<PageMode> find_page_mode(std::string_view name);
std::string page_mode_list();  // "4k, thp, hugetlb"
std::string page_mode_help();  // "4k, thp (madvise) or hugetlb (MAP_HUGETLB)"

}  // namespace shootdown
