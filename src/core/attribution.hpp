// SPDX-License-Identifier: Apache-2.0
// Stall attribution: which kernel event explains each victim sample.
// Pure (standard library only): VictimSamples + KernelTrace in, labels and
// per-victim summaries out. Rules (docs/kernel-evidence.md):
//  - Kernel events on a victim CPU are grouped into incidents: an IPI handler
//    span (call_function[_single]_entry .. exit), a timer, reschedule or
//    device-IRQ handler span. A call-function span is a TLB shootdown when a
//    tlb_flush with reason 1 (remote shootdown) in the victim's task, or a
//    csd_function_entry of flush_tlb_func, lies inside it — unless the flush
//    was for another mm (reason 5 "wrong CPU", or reason 1 while another
//    task ran): that IPI was not sent for this process and is another IPI. A reason-1
//    flush outside any span (call_function tracepoints missing) is a
//    shootdown incident of its own.
//  - An incident belongs to the sample whose span (start, end] contains its
//    first event (the handler's entry).
//  - A sample's label is the highest-priority incident in it:
//    preempted > tlb-shootdown > other-ipi > resched > irq > timer. A sample
//    with none is clean, or unexplained when its latency exceeds the stall
//    threshold (default 8 x the victim's baseline median). "preempted": an
//    event on the victim CPU inside the sample ran in another task (tid other
//    than the victim's: the dominant tid of events in short samples) or was a
//    task-switch flush (reason 0): the scheduler, not the IPI, owns that
//    stall (a busy shared machine).
//  - Off-CPU intervals: with sched:sched_switch traced, the victim is off its
//    CPU from a switch with prev_pid == its tid to the next switch with
//    next_pid == its tid (on its CPU). A sample overlapping such an interval
//    is preempted, whatever else happened in it; a release call overlapping
//    one is not "on CPU" (membarrier skips, and TLB flushes are deferred for,
//    a CPU not running the mm). Without sched_switch the tid heuristic above
//    labels preempted samples and on-CPU releases are unknown.
//  - A csd function run outside a call-function span is the initiator
//    running its own flush locally (smp_call_function_many_cond), not an
//    IPI: it is not an incident.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/attribution_types.hpp"
#include "core/events.hpp"
#include "core/result.hpp"
#include "core/samples.hpp"

namespace shootdown {

// Higher wins when several incidents share a sample (unexplained/clean: 0).
int label_priority(StallLabel l);

struct AttributionOptions {
  double stall_factor = 8.0;            // threshold = factor x baseline median
  std::int64_t stall_threshold_ns = 0;  // > 0 overrides the factor
  // Baseline: samples ending at or before this mono ns (0 = all samples).
  std::int64_t baseline_end_ns = 0;
  std::int64_t baseline_median_ns = 0;  // > 0 overrides the computed median
  // Span over which kernel shootdown IPIs are counted ("received"); 0 = the
  // victim's own sample span.
  std::int64_t span_start_ns = 0;
  std::int64_t span_end_ns = 0;
  int culprit_cpu = -1;  // IPI senders for delivery latency; -1 = any other CPU
  // A send is paired with the next IPI entry on the target within this window.
  std::int64_t delivery_window_ns = 10'000'000;
  // Release calls [before_ns, after_ns] (Result::releases), for release_on_cpu.
  std::vector<std::pair<std::int64_t, std::int64_t>> releases;
  // The measuring process (a run: Result::own_pid) and the roles of its
  // threads: its flushes outside the release calls are reported as its own
  // (Attribution::own_flushes), never as the strategy's. 0: not a run.
  std::int32_t own_pid = 0;
  std::vector<std::pair<std::int32_t, std::string>> own_threads;  // tid -> "culprit", ...
};

// Nearest-rank percentiles (value at rank ceil(p/100 * N)); empty -> zeros.
Quantiles quantiles(std::vector<std::int64_t> v);

Attribution attribute(const std::vector<VictimSamples>& victims, const KernelTrace& trace,
                      const AttributionOptions& opts);

// Options for a run's Result: baseline = samples before the first release,
// threshold from the plan (--stall-threshold / stall factor), shootdowns
// counted over the measurement span, delivery measured from the culprit.
AttributionOptions attribution_options(const Result& r);
Attribution attribute_result(const Result& r);

// Per-sample labels as runs: [(label, count), ...] in sample order (compact
// for result.json: clean runs are long).

// Latencies of the samples carrying `label` (e.g. clean-only phase tables).
// The kernel rule that makes /proc/interrupts count TLB flush IPIs that
// tlb:tlb_flush never traces, for a `uname -r` release ("6.1.0-57-amd64").
std::string untraced_tlb_rule(const std::string& kernel_release);
// major * 1000 + minor of a `uname -r` release ("6.12.118+deb12-amd64" ->
// 6012, "7.3.0-1-amd64" -> 7003); 0 when it does not start so.
int kernel_version_code(const std::string& kernel_release);
// The baseline median attribution measures stalls from: the upper median
// (element n/2 after nth_element); analysis uses it for stall lost too.
std::int64_t median_of(std::vector<std::int64_t> v);

// Fills the tlb_* fields of each victim: its CPU's /proc/interrupts TLB delta
// (r.counters) over the counted window against the reason-1 and reason-5
// tlb_flush events of that CPU in the same window. No-op without the delta,
// the window or a trace.
void account_tlb(const Result& r, Attribution& a);

std::vector<std::int64_t> latencies_with_label(const VictimSamples& v, const VictimAttribution& a, StallLabel label);

// csd function symbol "flush_tlb_func+0x0" (and older flush_tlb_func_remote):
// the one rule for "this call-function IPI was a TLB shootdown".
bool is_flush_tlb_func(const std::string& sym);

// The one rule for "remote flushes bypass IPIs here" (a hypervisor's
// paravirtual flush): fewer than half of `requests` remote flushes that had to
// reach a CPU arrived there as flush IPIs. A kernel that flushes by IPI
// delivers all of them (KVM's PV flush skips only preempted vCPUs).
inline bool flushes_bypass_ipis(std::int64_t requests, std::int64_t delivered) {
  return requests > 0 && 2 * delivered < requests;
}

// Per CPU of `cpus`, in time order.
std::map<int, std::vector<EventMark>> event_marks(const KernelTrace& tr, const std::set<int>& cpus);
// Shootdown marks on a CPU: all of them, or only inside release windows.
std::int64_t shootdown_marks(const Result& r, const std::map<int, std::vector<EventMark>>& marks, int cpu,
                             bool in_windows);

}  // namespace shootdown
