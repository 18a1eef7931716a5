// SPDX-License-Identifier: Apache-2.0
// Stall attribution results as data (core/attribution.hpp computes them):
// standard library only, so Result can keep a saved attribution
// (Result::saved_attribution, read back from result.json).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shootdown {

// Values are stored per sample (std::uint8_t) and serialized as numbers:
// keep them stable.
enum class StallLabel : std::uint8_t {
  kClean = 0,
  kTlbShootdown = 1,
  kOtherIpi = 2,
  kResched = 3,
  kIrq = 4,
  kTimer = 5,
  kUnexplained = 6,
  kPreempted = 7,  // another task ran on the victim CPU inside the sample
};
inline constexpr int kStallLabelCount = 8;
const char* label_name(StallLabel l);  // "clean", "tlb-shootdown", ...
// Run-length encoding of per-sample labels (result.json label_runs).
std::vector<std::pair<std::uint8_t, std::int64_t>> label_runs(const std::vector<std::uint8_t>& labels);

// Kernel incidents on a CPU as marks for timelines (report.html): a
// call-function IPI is a shootdown when a reason-1 tlb_flush or a
// flush_tlb_func csd function lies inside its handler span (the attribution
// rule, core/attribution.hpp); its mark is at the handler entry. A reason-1
// flush outside any span (call_function tracepoints missing) is a mark of its own.
enum class MarkCause { kTlbShootdown = 0, kOtherIpi = 1, kTimer = 2, kIrq = 3, kResched = 4 };
struct EventMark {
  std::int64_t t = 0;
  MarkCause cause = MarkCause::kOtherIpi;
};

struct Quantiles {
  std::int64_t count = 0;
  std::int64_t p50 = 0;
  std::int64_t p90 = 0;
  std::int64_t max = 0;
  std::int64_t total = 0;  // sum of the values (for durations: the time they add up to); -1 = not known
};
struct VictimAttribution {
  int cpu = -1;
  std::vector<std::uint8_t> labels;  // one StallLabel per sample
  std::int64_t baseline_median_ns = 0;
  std::int64_t stall_threshold_ns = 0;
  std::int64_t shootdowns_received = 0;  // reason-1 flushes on this CPU in the span (kernel count)
  std::int64_t shootdowns_matched = 0;   // ... that fall inside a sample span
  std::int64_t shootdowns_stalled = 0;   // ... whose sample exceeds the stall threshold
  // ... that arrived outside every release call [before, after]: flushes of
  // our process the strategy did not make (Attribution::own_flushes names
  // their initiators). Only a run knows its releases (own_pid > 0); else 0.
  std::int64_t shootdowns_outside_releases = 0;
  std::int64_t shootdowns_outside_matched = 0;   // ... of them inside a victim sample
  std::int64_t shootdowns_outside_stall_ns = 0;  // ... their share of the tlb-shootdown stall
  std::int64_t wrong_cpu_flushes =
      0;  // flushes for another mm in the span: reason 5, or reason 1 while another task ran (count in TLB, not ours)
  std::int64_t flush_ipis = 0;                            // call-function spans that ran flush_tlb_func, in the span
  std::int32_t victim_tid = 0;                            // the tid taken as the victim's (0 = unknown)
  double recall = 0;                                      // matched / received (1 when none received)
  std::int64_t shootdown_ipis = 0;                        // call-function incidents that flushed the TLB
  std::int64_t other_ipis = 0;                            // call-function incidents of other functions
  std::array<std::int64_t, kStallLabelCount> samples{};   // per label
  std::array<std::int64_t, kStallLabelCount> stall_ns{};  // sum of max(0, latency - median) per label
  Quantiles stall_per_shootdown;  // victim excess per shootdown IPI (tlb-shootdown samples only)
  Quantiles handler_ns;           // shootdown IPI handler, entry -> exit
  Quantiles other_handler_ns;     // other call-function IPIs
  Quantiles delivery_ns;          // ipi_send on culprit -> call_function entry here
  // Function-call IPIs by csd function name (symbol without offset): "ipi_mb" -> 5.
  std::vector<std::pair<std::string, std::int64_t>> ipi_functions;
  // Off-CPU evidence. sched_switch: intervals from sched:sched_switch (else
  // the tid heuristic labels preempted samples and the release fields are
  // unknown: releases_on_cpu = -1, release_on_cpu empty).
  bool sched_switch = false;
  std::int64_t offcpu_ns = 0;         // victim switched out, within the span
  std::int64_t offcpu_intervals = 0;  // switched-out intervals overlapping the span
  std::int64_t releases_on_cpu = -1;  // releases during whose whole call the victim ran
  // Per AttributionOptions::releases entry; nullopt (unknown) for a release
  // the victim's raw samples do not cover: its window was folded to make
  // room, and with it the sched_switch events that would say.
  std::vector<std::optional<bool>> release_on_cpu;
  // Delivery of the culprit's remote flushes (needs sched_switch and the
  // culprit CPU): reason-4 flushes traced on the culprit CPU during releases
  // at moments the victim ran on its CPU (each names this CPU: it runs our
  // mm), and the reason-1 flushes this CPU received at such moments. A kernel
  // that flushes by IPI delivers one per request; a hypervisor's paravirtual
  // flush (pv_ops.mmu.flush_tlb_multi) delivers none the guest can trace.
  std::int64_t flush_requests = 0;
  std::int64_t flush_requests_delivered = 0;
  // The /proc/interrupts TLB delta of this CPU over the counted window,
  // accounted for by evidence (account_tlb, core/attribution.hpp): each
  // remote flush_tlb_func run (in a call-function interrupt, or queued by
  // another CPU and run from idle: RemoteRunContext) adds one to the row and
  // traces at most one tlb_flush. counted + traced_beyond = reason 1 + reason
  // 5 in a remote run + lazy TLB + counted-not-traced, every term >= 0.
  // tlb_counted < 0: no delta or no trace to account with.
  std::int64_t tlb_counted = -1;
  std::int64_t tlb_traced_remote = 0;     // tlb_flush reason 1 on this CPU in the window, any task
  std::int64_t tlb_traced_wrong_cpu = 0;  // reason 5 in a remote run (another mm loaded; traced since 6.14)
  std::int64_t tlb_lazy = 0;              // reason 0 in a remote run: a lazy-TLB CPU switched to init_mm
  std::int64_t tlb_untraced = 0;          // counted, not traced (>= 0; negative only in a legacy result)
  std::int64_t tlb_traced_beyond = 0;     // traced in remote runs beyond the count (a window-edge race), >= 0
  // Apart, not in the row: reason 5 traced outside any remote run (this CPU's
  // own flush_tlb_func for an mm it no longer runs, 6.14+), and this CPU's own
  // flush_tlb_func runs (csd_function_entry with a NULL csd, 6.5+; -1: the
  // kernel has no csd tracepoints).
  std::int64_t tlb_local_wrong_cpu = 0;
  std::int64_t tlb_local_flush_runs = -1;
  bool tlb_legacy = false;  // read from a result written before this split (reason 5 not split, untraced may be < 0)
  std::string tlb_untraced_rule;  // the kernel rule that explains counted-not-traced flushes
};

// A remote TLB flush (tlb_flush reason 4, traced in the initiating task)
// that a thread of the measuring process made inside the counted span but
// outside every release call: the tool's own doing, not the strategy's.
struct OwnFlush {
  std::int64_t mono_ns = 0;
  int cpu = -1;
  std::int32_t tid = 0;
  std::string thread;      // "culprit", "drainer", "victim cpu3", or "thread <tid>"
  std::int64_t pages = 0;  // -1: a full flush (TLB_FLUSH_ALL)
  std::string cause;  // from the kernel path (core/blame syscall_from_kernel): "page fault: write to a read-only page"
  std::vector<std::string> kernel_path;  // function names, innermost first ("" when no callchain was kept)
};

struct Attribution {
  bool available = false;  // false when the trace was off/unavailable
  std::string note;        // why not, or caveats
  std::vector<VictimAttribution> victims;
  std::vector<OwnFlush> own_flushes;  // in time order
};

}  // namespace shootdown
