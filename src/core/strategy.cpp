// SPDX-License-Identifier: Apache-2.0
#include "core/strategy.hpp"

#include "core/churn_plan.hpp"
#include "core/units.hpp"

#include <algorithm>
#include <array>

namespace shootdown {

namespace {

using enum ReleaseStrategy;

constexpr std::array<StrategyInfo, 18> kStrategies{{
    {kFree, "free", Workload::kMemory, Rearm::kReallocate, true, true, "",
     "glibc free() of a malloc'd block (mmap-backed at this size)"},
    {kMunmap, "munmap", Workload::kMemory, Rearm::kReallocate, true, true, "", "munmap(2) of chunk A"},
    {kMadviseDontneed, "madvise-dontneed", Workload::kMemory, Rearm::kRefault, true, true, "",
     "madvise(MADV_DONTNEED): pages dropped, mapping kept"},
    {kMadviseFree, "madvise-free", Workload::kMemory, Rearm::kRefault, true, true, "",
     "madvise(MADV_FREE): pages reclaimable lazily"},
    {kMprotect, "mprotect", Workload::kMemory, Rearm::kRestoreProtection, true, true, "",
     "mprotect(PROT_READ), restored to read-write after the marker"},
    {kMadviseRanges, "madvise-ranges", Workload::kMemory, Rearm::kRefault, true, true, "",
     "madvise(MADV_DONTNEED) of every other 64 KiB extent of A, one call per extent"},
    {kProcessMadvise, "process-madvise", Workload::kMemory, Rearm::kRefault, true, true, "",
     "the same extents as madvise-ranges in process_madvise(MADV_DONTNEED) vectors of up to 1024"},
    {kPaced, "paced", Workload::kMemory, Rearm::kRefault, true, true, "",
     "madvise(MADV_DONTNEED) of A in small steps with short gaps, like a scavenger (default 64KiB/100us, --pace)"},
    {kChunked, "chunked", Workload::kMemory, Rearm::kRefault, true, true, "",
     "madvise(MADV_DONTNEED) of A in large steps with long gaps, like G1's uncommit (default 64MiB/10ms, --pace)"},
    {kGlibcMalloc, "glibc-malloc", Workload::kMemory, Rearm::kNothing, true, true, "allocator",
     "a churn of 16 B..1 MiB blocks through glibc malloc, 7/8 freed in a shuffled order, then malloc_trim(0)"},
    {kJemalloc, "jemalloc", Workload::kMemory, Rearm::kNothing, true, true, "allocator",
     "the same churn through jemalloc (libjemalloc.so.2), then arena.<all>.purge"},
    {kTcmalloc, "tcmalloc", Workload::kMemory, Rearm::kNothing, true, true, "allocator",
     "the same churn through tcmalloc (libtcmalloc_minimal.so.4), then MallocExtension_ReleaseFreeMemory()"},
    {kMimalloc, "mimalloc", Workload::kMemory, Rearm::kNothing, true, true, "allocator",
     "the same churn through mimalloc (libmimalloc.so.2), then mi_collect(true)"},
    {kReuse, "reuse", Workload::kMemory, Rearm::kNothing, true, true, "control",
     "write chunk A again instead of releasing it: the control arm"},
    {kMembarrier, "membarrier", Workload::kMemory, Rearm::kNothing, true, false, "IPI validation",
     "membarrier(PRIVATE_EXPEDITED): a controlled IPI source without TLB flushes (validation)"},
    {kJournalUnmap, "journal-unmap", Workload::kJournal, Rearm::kNothing, false, true, "",
     "journal writer: munmap and unlink each full segment, map a new one"},
    {kJournalRecycle, "journal-recycle", Workload::kJournal, Rearm::kNothing, false, true, "",
     "journal writer: a pre-allocated pool of segments, reused"},
    {kProbe, "probe", Workload::kNone, Rearm::kNothing, false, false, "", "no release: probe measures another program"},
}};

constexpr std::array<PageModeInfo, 3> kPageModes{{
    {PageMode::k4k, "4k", "", "4 KiB pages"},
    {PageMode::kThp, "thp", "madvise", "transparent huge pages (madvise)"},
    {PageMode::kHugetlb, "hugetlb", "MAP_HUGETLB", "MAP_HUGETLB from the reserved pool"},
}};

template <typename Pred>
std::string join_names(Pred pred) {
  std::string s;
  for (const auto& i : kStrategies)
    if (pred(i)) {
      if (!s.empty()) s += ", ";
      s += i.name;
    }
  return s;
}

}  // namespace

bool is_allocator_arm(ReleaseStrategy s) {
  return s == kGlibcMalloc || s == kJemalloc || s == kTcmalloc || s == kMimalloc;
}

std::int64_t released_bytes(ReleaseStrategy s, std::int64_t chunk_bytes) {
  if (is_allocator_arm(s)) return make_churn(chunk_bytes).freed_bytes;
  if (s != kMadviseRanges && s != kProcessMadvise) return chunk_bytes;
  // Extents 0, 2, 4, ... (the last one may be partial): ReleaseContext::prepare.
  const auto extent = static_cast<std::int64_t>(kExtentBytes);
  std::int64_t bytes = 0;
  for (std::int64_t off = 0; off < chunk_bytes; off += 2 * extent) bytes += std::min(extent, chunk_bytes - off);
  return bytes;
}

bool is_paced(ReleaseStrategy s) {
  return s == kPaced || s == kChunked;
}

Pace default_pace(ReleaseStrategy s) {
  if (s == kPaced) return {64LL << 10, 100LL * 1000};
  if (s == kChunked) return {64LL << 20, 10LL * 1000 * 1000};
  return {};
}

std::int64_t pace_steps(std::int64_t bytes, std::int64_t step) {
  if (bytes <= 0 || step <= 0) return 0;
  return (bytes + step - 1) / step;
}

std::string format_gap(std::int64_t ns) {
  if (ns == 0) return "0 ns";
  if (ns % 1000000000LL == 0) return std::to_string(ns / 1000000000LL) + " s";
  if (ns % 1000000LL == 0) return std::to_string(ns / 1000000LL) + " ms";
  if (ns % 1000LL == 0) return std::to_string(ns / 1000LL) + " us";
  return format_duration_ns(ns);
}

std::string format_pace(Pace pace) {
  std::string size = format_size(pace.step), gap = format_gap(pace.gap_ns);
  std::erase(size, ' ');
  std::erase(gap, ' ');
  return size + "/" + gap;
}

std::string partial_release_note(std::int64_t released, std::int64_t whole) {
  return "stopped after " + format_size(released) + " of " + format_size(whole);
}

std::string released_what(ReleaseStrategy s, std::int64_t chunk_bytes, Pace pace) {
  const std::int64_t bytes = released_bytes(s, chunk_bytes);
  if (is_paced(s) && pace.step > 0)
    return format_size(bytes) + " in " + std::to_string(pace_steps(bytes, pace.step)) + " steps of " +
           format_size(std::min(pace.step, bytes)) + " with " + format_gap(pace.gap_ns) + " gaps";
  if (is_allocator_arm(s)) {
    const ChurnPlan churn = make_churn(chunk_bytes);
    return format_size(bytes) + " in " + std::to_string(churn.free_order.size()) + " freed blocks of " +
           std::to_string(churn.sizes.size());
  }
  if (s != kMadviseRanges && s != kProcessMadvise) return format_size(bytes);
  const auto extent = static_cast<std::int64_t>(kExtentBytes);
  return format_size(bytes) + " in " + std::to_string((chunk_bytes + 2 * extent - 1) / (2 * extent)) + " extents of " +
         format_size(extent);
}

std::span<const StrategyInfo> strategies() {
  return kStrategies;
}

const StrategyInfo& strategy_info(ReleaseStrategy s) {
  for (const auto& i : kStrategies)
    if (i.id == s) return i;
  return kStrategies.back();
}

std::string_view strategy_name(ReleaseStrategy s) {
  return strategy_info(s).name;
}

std::optional<ReleaseStrategy> find_strategy(std::string_view name) {
  for (const auto& i : kStrategies)
    if (i.name == name) return i.id;
  return std::nullopt;
}

std::string run_strategy_list() {
  return join_names([](const StrategyInfo& i) { return i.run_option; });
}

std::string run_strategy_help() {
  std::string s;
  for (const auto& i : kStrategies)
    if (i.run_option) {
      if (!s.empty()) s += ", ";
      s += i.name;
      if (!i.tag.empty()) s += " (" + std::string(i.tag) + ")";
    }
  return s;
}

std::string compare_arm_list(Workload w) {
  return join_names([w](const StrategyInfo& i) { return i.compare_arm && i.workload == w; });
}

bool is_compare_arm(ReleaseStrategy s, Workload w) {
  const auto& i = strategy_info(s);
  return i.compare_arm && i.workload == w;
}

std::string_view page_mode_name(PageMode m) {
  for (const auto& i : kPageModes)
    if (i.id == m) return i.name;
  return "?";
}

std::optional<PageMode> find_page_mode(std::string_view name) {
  for (const auto& i : kPageModes)
    if (i.name == name) return i.id;
  return std::nullopt;
}

std::string page_mode_list() {
  std::string s;
  for (const auto& i : kPageModes) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

std::string page_mode_help() {
  std::string s;
  for (std::size_t k = 0; k < kPageModes.size(); ++k) {
    const auto& i = kPageModes[k];
    if (k > 0) s += k + 1 == kPageModes.size() ? " or " : ", ";
    s += i.name;
    if (!i.tag.empty()) s += " (" + std::string(i.tag) + ")";
  }
  return s;
}

}  // namespace shootdown
