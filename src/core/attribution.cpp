// SPDX-License-Identifier: Apache-2.0
#include "core/attribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "core/blame.hpp"
#include "core/stats.hpp"

namespace shootdown {

const char* label_name(StallLabel l) {
  switch (l) {
    case StallLabel::kClean:
      return "clean";
    case StallLabel::kTlbShootdown:
      return "tlb-shootdown";
    case StallLabel::kOtherIpi:
      return "other-ipi";
    case StallLabel::kResched:
      return "resched";
    case StallLabel::kIrq:
      return "irq";
    case StallLabel::kTimer:
      return "timer";
    case StallLabel::kUnexplained:
      return "unexplained";
    case StallLabel::kPreempted:
      return "preempted";
  }
  return "?";
}

int label_priority(StallLabel l) {
  switch (l) {
    case StallLabel::kPreempted:
      return 6;
    case StallLabel::kTlbShootdown:
      return 5;
    case StallLabel::kOtherIpi:
      return 4;
    case StallLabel::kResched:
      return 3;
    case StallLabel::kIrq:
      return 2;
    case StallLabel::kTimer:
      return 1;
    case StallLabel::kClean:
    case StallLabel::kUnexplained:
      return 0;
  }
  return 0;
}

Quantiles quantiles(std::vector<std::int64_t> v) {
  Quantiles q;
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  q.count = static_cast<std::int64_t>(v.size());
  q.p50 = nearest_rank_sorted(v, 50);
  q.p90 = nearest_rank_sorted(v, 90);
  q.max = v.back();
  q.total = std::accumulate(v.begin(), v.end(), std::int64_t{0});
  return q;
}

namespace {

enum class Kind : std::uint8_t { kCallFunction, kTlbPoint, kTimer, kResched, kIrq, kPreempt };

struct Incident {
  Kind kind;
  std::int64_t start_ns;
  std::int64_t end_ns = -1;          // -1: no exit seen
  bool tlb = false;                  // a TLB flush for the victim's mm ran in it (reason 1)
  bool foreign = false;              // a flush for another mm ran in it (reason 5, or reason 1 in another task)
  bool flush_func = false;           // csd ran flush_tlb_func (the flush itself may be foreign)
  std::vector<std::uint64_t> funcs;  // csd functions run in it
};

std::string function_of(const KernelTrace& t, std::uint64_t addr) {
  const std::string& s = t.symbol(addr);
  if (!s.empty()) return s.substr(0, s.find('+'));
  std::ostringstream os;
  os << "0x" << std::hex << addr;
  return os.str();
}

// Index of the sample whose span (start, end] contains t, or -1.
std::int64_t sample_at(const VictimSamples& v, std::int64_t t) {
  auto it = std::lower_bound(v.end_ns.begin(), v.end_ns.end(), t);
  if (it == v.end_ns.end()) return -1;
  const auto i = static_cast<std::size_t>(it - v.end_ns.begin());
  if (t <= v.span_start(i)) return -1;
  return static_cast<std::int64_t>(i);
}

// Whether [from, to] lies in a stretch of the victim's samples that was
// folded: a partial series holds only the stretches it kept raw,
// index[] numbering every sample measured. Outside the measured span the
// victim did not sample: the events decide there.
bool folded_over(const VictimSamples& v, std::int64_t from, std::int64_t to) {
  if (!v.partial() || v.size() == 0) return false;
  if (from < v.start_ns) return !v.follows(0);  // before the first kept sample: folded, if any was
  if (from > v.end_ns.back()) return false;
  const auto first = [&](std::int64_t t) {  // the first kept sample ending at or after t
    return static_cast<std::size_t>(std::lower_bound(v.end_ns.begin(), v.end_ns.end(), t) - v.end_ns.begin());
  };
  const std::size_t s = first(from), e = std::min(first(to), v.size() - 1);
  if (v.span_start(s) > from) return true;  // `from` falls in a gap before sample s
  return v.index[e] - v.index[s] != static_cast<std::int64_t>(e - s);
}

bool traced_sched_switch(const KernelTrace& t) {
  for (const std::string& tp : t.tracepoints)
    if (tp.rfind("sched:sched_switch", 0) == 0) return true;
  for (const KernelEvent& e : t.events)
    if (e.type == EventType::kSchedSwitch) return true;
  return false;
}

struct OffCpu {
  std::int64_t off_ns;  // switched out (INT64_MIN: before the trace saw it run)
  std::int64_t on_ns;   // switched back in (INT64_MAX: never)
};

// The victim's off-CPU intervals on its CPU: from a sched_switch with
// prev_pid == tid to the first evidence that it runs again. That is the
// switch with next_pid == tid, but this kernel (KVM guest, haltpoll idle) does
// not deliver events in the idle task's context on an idle CPU, so a switch
// from idle back to the victim can be missing. Other evidence bounds the
// interval too: any event in the victim's context (its sample tid; not the
// task-switch flush of the switch-out itself), and the
// victim's own samples: the sample containing the switch-out ends after the
// victim ran again (it cannot take a timestamp off its CPU) and at most one
// batch later. Before its first evidence the victim counts as off.
std::vector<OffCpu> offcpu_intervals(const KernelTrace& t, const VictimSamples& v, std::int32_t tid) {
  std::vector<OffCpu> out;
  if (tid <= 0) return out;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  // Upper bound of the switch-in for a switch-out at `off`.
  auto sample_bound = [&](std::int64_t off) {
    const auto it = std::upper_bound(v.end_ns.begin(), v.end_ns.end(), off);
    if (it == v.end_ns.end()) return kMax;
    const auto i = static_cast<std::size_t>(it - v.end_ns.begin());
    return v.span_start(i) < off ? v.end_ns[i] : kMax;
  };
  bool off = true;
  std::int64_t off_ns = kMin;
  std::int64_t cap = v.size() ? v.start_ns : kMax;
  auto close = [&](std::int64_t on_ns) {
    out.push_back({off_ns, on_ns});
    off = false;
  };
  for (const KernelEvent& e : t.events) {
    if (e.cpu != v.cpu) continue;
    if (off && e.mono_ns >= cap) close(cap);
    const bool sw = e.type == EventType::kSchedSwitch && e.a != e.b;
    // The switch itself still runs in the victim's context after the
    // tracepoint (switch_mm: a reason-0 flush with the victim's tid): no evidence.
    const bool in_switch = e.type == EventType::kTlbFlush && e.a == kTlbFlushOnTaskSwitch;
    if (off && ((e.tid == tid && !in_switch) || (sw && e.b == tid))) close(e.mono_ns);
    if (!off && sw && e.a == tid) {
      off = true;
      off_ns = e.mono_ns;
      cap = sample_bound(off_ns);
    }
  }
  if (off) close(cap);
  return out;
}

std::vector<Incident> build_incidents(const KernelTrace& t, int cpu, std::int32_t victim_tid, bool tid_heuristic,
                                      std::vector<std::int64_t>* remote_flushes, std::vector<std::int64_t>* wrong_cpu,
                                      std::vector<std::int64_t>* cf_entries) {
  std::vector<Incident> out;
  // Open handler span per kind (interrupt handlers do not nest per kind).
  std::int64_t open_cf = -1, open_timer = -1, open_resched = -1, open_irq = -1;
  auto open = [&](std::int64_t& slot, Kind k, std::int64_t ts) {
    slot = static_cast<std::int64_t>(out.size());
    out.push_back({k, ts, -1, false, false, false, {}});
  };
  auto close = [&](std::int64_t& slot, std::int64_t ts) {
    if (slot >= 0) out[static_cast<std::size_t>(slot)].end_ns = ts;
    slot = -1;
  };
  std::int64_t last_foreign = -1;
  for (const KernelEvent& e : t.events) {
    if (e.cpu != cpu) continue;
    // Another task (not idle) running here: the victim was off its CPU.
    // Fallback when sched_switch is not traced (its intervals are exact).
    if (tid_heuristic && victim_tid > 0 && e.tid > 0 && e.tid != victim_tid && e.mono_ns != last_foreign) {
      out.push_back({Kind::kPreempt, e.mono_ns, e.mono_ns, false, false, false, {}});
      last_foreign = e.mono_ns;
    }
    switch (e.type) {
      case EventType::kCallFunctionEntry:
      case EventType::kCallFunctionSingleEntry:
        open(open_cf, Kind::kCallFunction, e.mono_ns);
        cf_entries->push_back(e.mono_ns);
        break;
      case EventType::kCallFunctionExit:
      case EventType::kCallFunctionSingleExit:
        close(open_cf, e.mono_ns);
        break;
      case EventType::kLocalTimerEntry:
        open(open_timer, Kind::kTimer, e.mono_ns);
        break;
      case EventType::kLocalTimerExit:
        close(open_timer, e.mono_ns);
        break;
      case EventType::kReschedEntry:
        open(open_resched, Kind::kResched, e.mono_ns);
        break;
      case EventType::kReschedExit:
        close(open_resched, e.mono_ns);
        break;
      case EventType::kIrqHandlerEntry:
        open(open_irq, Kind::kIrq, e.mono_ns);
        break;
      case EventType::kIrqHandlerExit:
        close(open_irq, e.mono_ns);
        break;
      case EventType::kTlbFlush:
        if (e.a == kTlbFlushOnTaskSwitch)
          out.push_back({Kind::kPreempt, e.mono_ns, e.mono_ns, false, false, false, {}});
        if (e.a == kTlbRemoteWrongCpu) wrong_cpu->push_back(e.mono_ns);
        // Reason 5: the IPI flushed for an mm this CPU no longer runs (another
        // process): it interrupts the victim but our culprit did not send it.
        if (e.a == kTlbRemoteWrongCpu && open_cf >= 0) out[static_cast<std::size_t>(open_cf)].foreign = true;
        if (e.a != kTlbRemoteShootdown) break;
        if (victim_tid > 0 && e.tid > 0 && e.tid != victim_tid) {
          // Reason 1 while another task ran here: a shootdown of that task's
          // mm, counted with the foreign flushes.
          wrong_cpu->push_back(e.mono_ns);
          if (open_cf >= 0) out[static_cast<std::size_t>(open_cf)].foreign = true;
          break;
        }
        remote_flushes->push_back(e.mono_ns);
        if (open_cf >= 0)
          out[static_cast<std::size_t>(open_cf)].tlb = true;
        else
          out.push_back({Kind::kTlbPoint, e.mono_ns, e.mono_ns, true, false, false, {}});
        break;
      case EventType::kCsdFunctionEntry: {
        const auto fn = static_cast<std::uint64_t>(e.b);
        const bool tlb = is_flush_tlb_func(t.symbol(fn));
        if (open_cf >= 0) {
          auto& inc = out[static_cast<std::size_t>(open_cf)];
          inc.funcs.push_back(fn);
          inc.flush_func = inc.flush_func || tlb;
        }
        // Outside a call-function span: the initiator running the function
        // locally (its own flush), not an IPI. A remote flush delivered
        // without the vector (idle polling) still shows as reason 1 above.
        break;
      }
      default:
        break;
    }
  }
  return out;
}

bool in_release_call(const AttributionOptions& opts, std::int64_t t) {
  return std::any_of(opts.releases.begin(), opts.releases.end(),
                     [t](const auto& w) { return t >= w.first && t <= w.second; });
}

// "flush_tlb_mm_range+0x1f [kernel]" -> "flush_tlb_mm_range"
std::string function_name(const std::string& sym) {
  return sym.substr(0, std::min(sym.find('+'), sym.find(' ')));
}

// Reason-4 flushes of the measuring process in the counted span outside
// every release call: what the tool itself did (a first write to a page, an
// allocation's mmap) while it measured. Named by thread and kernel path.
std::vector<OwnFlush> own_flushes(const KernelTrace& trace, const AttributionOptions& opts) {
  std::vector<OwnFlush> out;
  if (opts.own_pid <= 0) return out;
  for (const KernelEvent& e : trace.events) {
    if (e.type != EventType::kTlbFlush || e.a != kTlbRemoteSendIpi || e.pid != opts.own_pid) continue;
    if ((opts.span_start_ns > 0 && e.mono_ns < opts.span_start_ns) ||
        (opts.span_end_ns > 0 && e.mono_ns > opts.span_end_ns) || in_release_call(opts, e.mono_ns))
      continue;
    OwnFlush f;
    f.mono_ns = e.mono_ns;
    f.cpu = e.cpu;
    f.tid = e.tid;
    f.thread = "thread " + std::to_string(e.tid);
    for (const auto& [tid, role] : opts.own_threads)
      if (tid == e.tid) f.thread = role;
    f.pages = e.b;
    if (e.callchain >= 0 && static_cast<std::size_t>(e.callchain) < trace.callchains.size())
      for (const std::string& sym : trace.callchains[static_cast<std::size_t>(e.callchain)].symbols)
        f.kernel_path.push_back(function_name(sym));
    f.cause = f.kernel_path.empty() ? "unknown (no kernel callchain kept)" : syscall_from_kernel(f.kernel_path);
    out.push_back(std::move(f));
  }
  return out;
}

StallLabel label_of(const Incident& inc) {
  switch (inc.kind) {
    // flush_tlb_func without a traced flush (e.g. tlb_flush missing) still
    // counts as ours unless the span shows it flushed another mm.
    case Kind::kCallFunction:
      return inc.tlb || (inc.flush_func && !inc.foreign) ? StallLabel::kTlbShootdown : StallLabel::kOtherIpi;
    case Kind::kPreempt:
      return StallLabel::kPreempted;
    case Kind::kTlbPoint:
      return StallLabel::kTlbShootdown;
    case Kind::kTimer:
      return StallLabel::kTimer;
    case Kind::kResched:
      return StallLabel::kResched;
    case Kind::kIrq:
      return StallLabel::kIrq;
  }
  return StallLabel::kClean;
}

// Why the evidence is partial, if it is: lost events, no sched_switch, a
// measured CPU where tracepoints could not be opened (the tracer's
// "<event> on cpuN: ..." lines: its zeros would be no evidence, not none).
std::string evidence_note(const std::vector<VictimSamples>& victims, const KernelTrace& trace, bool sched_switch) {
  std::string note;
  if (trace.lost_events > 0) note = std::to_string(trace.lost_events) + " kernel events lost: counts are lower bounds";
  if (!sched_switch)
    note += std::string(note.empty() ? "" : "; ") +
            "sched:sched_switch not traced: preempted samples from the tid heuristic, on-CPU releases unknown";
  for (const VictimSamples& v : victims) {
    const std::string tag = " on cpu" + std::to_string(v.cpu) + ":";
    std::size_t n = 0;
    const std::string* first = nullptr;
    for (const std::string& m : trace.missing)
      if (m.find(tag) != std::string::npos && !n++) first = &m;
    if (n > 0)
      note += std::string(note.empty() ? "" : "; ") +
              fmt::format("cpu{}: {} tracepoint(s) not opened there ({}): its kernel evidence is incomplete", v.cpu, n,
                          *first);
  }
  return note;
}

// The baseline median (of the samples before baseline_end_ns, all of them
// when none are) and the stall threshold derived from it unless given.
void set_baseline_and_threshold(VictimAttribution& a, const VictimSamples& v, const AttributionOptions& opts) {
  std::vector<std::int64_t> base;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (opts.baseline_end_ns <= 0 || v.span_end(i) <= opts.baseline_end_ns) base.push_back(v.lat_ns[i]);
  if (base.empty()) base = v.lat_ns;
  a.baseline_median_ns = opts.baseline_median_ns > 0 ? opts.baseline_median_ns : median_of(base);
  a.stall_threshold_ns =
      opts.stall_threshold_ns > 0
          ? opts.stall_threshold_ns
          : static_cast<std::int64_t>(std::llround(opts.stall_factor * static_cast<double>(a.baseline_median_ns)));
}

// The victim's tid: the one the experiment recorded (gettid), or for older
// results the most frequent tid of events on its CPU inside short samples
// (< kShortSampleNs). A sample in which another task ran lasts at least a
// scheduler slice, so short samples contain only interrupts of the victim
// itself, even when other tasks share its CPU. 0 = unknown.
std::int32_t victim_tid_of(const VictimSamples& v, const KernelTrace& trace) {
  if (v.tid > 0) return v.tid;
  std::int32_t victim_tid = 0;
  if (v.size() == 0) return victim_tid;
  constexpr std::int64_t kShortSampleNs = 100'000;
  std::map<std::int32_t, std::int64_t> tids;
  for (const KernelEvent& e : trace.events) {
    if (e.cpu != v.cpu || e.tid <= 0) continue;
    const std::int64_t s = sample_at(v, e.mono_ns);
    if (s >= 0 && v.lat_ns[static_cast<std::size_t>(s)] < kShortSampleNs) ++tids[e.tid];
  }
  std::int64_t best = 0;
  for (const auto& [tid, c] : tids)
    if (c > best) best = c, victim_tid = tid;
  return victim_tid;
}

// The counted span [lo, hi] of a victim's interrupt counts.
struct Span {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  bool contains(std::int64_t t) const { return t >= lo && t <= hi; }
};

// What labelling the incidents learns besides the labels.
struct IncidentTally {
  std::map<std::int64_t, int> tlb_per_sample;  // shootdown incidents per sample
  std::vector<std::int64_t> handler, other_handler;
  std::map<std::string, std::int64_t> funcs;
  std::vector<std::int64_t> tlb_samples;           // sample index per shootdown incident
  std::map<std::int64_t, int> outside_per_sample;  // ... of them outside the release calls
};

// Labels each sample by its highest-priority incident and counts the
// call-function interrupts of the counted span.
IncidentTally label_incidents(VictimAttribution& a, const VictimSamples& v, const KernelTrace& trace,
                              const std::vector<Incident>& incidents, const AttributionOptions& opts,
                              const Span& span) {
  IncidentTally t;
  for (const Incident& inc : incidents) {
    const StallLabel l = label_of(inc);
    // Interrupts are counted over the counted span only, as /proc/interrupts
    // is: the tracer's own set-up (enabling events sends IPIs) and the
    // teardown fall outside it.
    const bool call_function = inc.kind == Kind::kCallFunction && span.contains(inc.start_ns);
    if (call_function) {
      for (auto f : inc.funcs) ++t.funcs[function_of(trace, f)];
      if (l == StallLabel::kTlbShootdown)
        ++a.shootdown_ipis;
      else
        ++a.other_ipis;
      if (inc.kind == Kind::kCallFunction && inc.end_ns >= inc.start_ns)
        (l == StallLabel::kTlbShootdown ? t.handler : t.other_handler).push_back(inc.end_ns - inc.start_ns);
    }
    const std::int64_t s = sample_at(v, inc.start_ns);
    if (s < 0) continue;
    auto& cur = a.labels[static_cast<std::size_t>(s)];
    if (label_priority(l) > label_priority(static_cast<StallLabel>(cur))) cur = static_cast<std::uint8_t>(l);
    if (l == StallLabel::kTlbShootdown) {
      ++t.tlb_per_sample[s];
      t.tlb_samples.push_back(s);
      if (opts.own_pid > 0 && !in_release_call(opts, inc.start_ns)) ++t.outside_per_sample[s];
      if (inc.kind == Kind::kCallFunction && span.contains(inc.start_ns)) ++a.flush_ipis;
    }
  }
  return t;
}

// Off-CPU intervals (sched_switch): samples overlapping one are preempted.
void label_preempted(VictimAttribution& a, const VictimSamples& v, const std::vector<OffCpu>& offs, const Span& span) {
  for (const OffCpu& iv : offs) {
    // Counted from a seen switch-out (not the time before the victim started).
    if (iv.off_ns != std::numeric_limits<std::int64_t>::min() && iv.off_ns < span.hi && iv.on_ns > span.lo) {
      ++a.offcpu_intervals;
      a.offcpu_ns += std::min(iv.on_ns, span.hi) - std::max(iv.off_ns, span.lo);
    }
    // Samples with span (start, end] overlapping [off, on].
    auto it = std::upper_bound(v.end_ns.begin(), v.end_ns.end(), iv.off_ns);
    for (auto i = static_cast<std::size_t>(it - v.end_ns.begin()); i < v.size() && v.span_start(i) < iv.on_ns; ++i)
      a.labels[i] = static_cast<std::uint8_t>(StallLabel::kPreempted);
  }
}

// Releases overlapping no off-CPU interval ran with the victim on its CPU;
// during those, the culprit's remote flush requests and their delivery here.
void releases_on_cpu(VictimAttribution& a, const VictimSamples& v, const KernelTrace& trace,
                     const AttributionOptions& opts, const std::vector<OffCpu>& offs) {
  a.releases_on_cpu = 0;
  for (const auto& [before, after] : opts.releases) {
    if (folded_over(v, before, after)) {
      a.release_on_cpu.emplace_back();  // its raw window was folded: unknown
      continue;
    }
    bool on = true;
    for (const OffCpu& iv : offs)
      if (iv.off_ns <= after && iv.on_ns >= before) on = false;
    a.release_on_cpu.emplace_back(on);
    a.releases_on_cpu += on;
    if (opts.culprit_cpu < 0 || opts.culprit_cpu == v.cpu) continue;
    // Remote flush delivery, counted only while the victim ran (then its
    // CPU is in our mm's cpumask): a long release rarely has it on its
    // CPU throughout. trace.events is sorted by mono_ns.
    auto ran = [&](std::int64_t t) {
      return std::none_of(offs.begin(), offs.end(), [t](const OffCpu& iv) { return iv.off_ns <= t && t <= iv.on_ns; });
    };
    auto e = std::lower_bound(trace.events.begin(), trace.events.end(), before,
                              [](const KernelEvent& x, std::int64_t t) { return x.mono_ns < t; });
    for (; e != trace.events.end() && e->mono_ns <= after; ++e) {
      if (e->type != EventType::kTlbFlush) continue;
      const bool request = e->cpu == opts.culprit_cpu && e->a == kTlbRemoteSendIpi;
      const bool delivered = e->cpu == v.cpu && e->a == kTlbRemoteShootdown;
      if ((request || delivered) && ran(e->mono_ns)) ++(request ? a.flush_requests : a.flush_requests_delivered);
    }
  }
}

// A sample's latency above the baseline median, 0 below it.
std::int64_t excess_of(const VictimAttribution& a, const VictimSamples& v, std::size_t i) {
  return std::max<std::int64_t>(0, v.lat_ns[i] - a.baseline_median_ns);
}

// Unexplained stalls, per-label counts and stall time.
void count_labels(VictimAttribution& a, const VictimSamples& v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto& l = a.labels[i];
    if (l == static_cast<std::uint8_t>(StallLabel::kClean) && a.stall_threshold_ns > 0 &&
        v.lat_ns[i] > a.stall_threshold_ns)
      l = static_cast<std::uint8_t>(StallLabel::kUnexplained);
    ++a.samples[l];
    a.stall_ns[l] += excess_of(a, v, i);
  }
}

// Kernel count of shootdowns received in the span and how many the samples saw.
void count_shootdowns_received(VictimAttribution& a, const VictimSamples& v, const std::vector<std::int64_t>& flushes,
                               const std::vector<std::int64_t>& wrong_cpu, const AttributionOptions& opts,
                               const Span& span) {
  for (std::int64_t t : wrong_cpu)
    if (span.contains(t)) ++a.wrong_cpu_flushes;
  for (std::int64_t t : flushes) {
    if (!span.contains(t)) continue;
    ++a.shootdowns_received;
    const bool outside = opts.own_pid > 0 && !in_release_call(opts, t);
    a.shootdowns_outside_releases += outside;
    const std::int64_t s = sample_at(v, t);
    if (s < 0) continue;
    ++a.shootdowns_matched;
    a.shootdowns_outside_matched += outside;
    if (a.stall_threshold_ns > 0 && v.lat_ns[static_cast<std::size_t>(s)] > a.stall_threshold_ns)
      ++a.shootdowns_stalled;
  }
  a.recall = a.shootdowns_received
                 ? static_cast<double>(a.shootdowns_matched) / static_cast<double>(a.shootdowns_received)
                 : 1.0;
}

// Victim-side stall per shootdown IPI: a sample's excess shared by the
// shootdowns in it; and the stall of shootdown samples outside the release
// calls, each sample's excess shared likewise.
void share_shootdown_stalls(VictimAttribution& a, const VictimSamples& v, const IncidentTally& t) {
  auto shootdowns_in = [&](std::int64_t s) { return std::max(1, t.tlb_per_sample.at(s)); };
  auto is_shootdown = [&](std::int64_t s) {
    return a.labels[static_cast<std::size_t>(s)] == static_cast<std::uint8_t>(StallLabel::kTlbShootdown);
  };
  std::vector<std::int64_t> per_ipi;
  for (std::int64_t s : t.tlb_samples)
    if (is_shootdown(s)) per_ipi.push_back(excess_of(a, v, static_cast<std::size_t>(s)) / shootdowns_in(s));
  a.stall_per_shootdown = quantiles(std::move(per_ipi));
  for (const auto& [s, k] : t.outside_per_sample)
    if (is_shootdown(s))
      a.shootdowns_outside_stall_ns += excess_of(a, v, static_cast<std::size_t>(s)) * k / shootdowns_in(s);
}

// Delivery: function-call IPI sends to this CPU (callback set; reschedule
// IPIs have none) paired in order with the next call-function entry here.
std::vector<std::int64_t> delivery_latencies(const KernelTrace& trace, int cpu,
                                             const std::vector<std::int64_t>& cf_entries,
                                             const AttributionOptions& opts, const Span& span) {
  std::vector<std::int64_t> sends;
  for (const KernelEvent& e : trace.events) {
    if (e.type != EventType::kIpiSendCpu && e.type != EventType::kIpiSendCpumask) continue;
    if (e.c == 0 || !trace.targets(e, cpu)) continue;
    if (opts.culprit_cpu >= 0 ? e.cpu != opts.culprit_cpu : e.cpu == cpu) continue;
    if (!span.contains(e.mono_ns)) continue;  // the counted span only, as the interrupts
    sends.push_back(e.mono_ns);
  }
  std::vector<std::int64_t> delivery;
  std::size_t j = 0;
  for (std::int64_t s : sends) {
    while (j < cf_entries.size() && cf_entries[j] < s) ++j;
    if (j == cf_entries.size()) break;
    if (cf_entries[j] - s <= opts.delivery_window_ns) {
      delivery.push_back(cf_entries[j] - s);
      ++j;
    }
  }
  return delivery;
}

VictimAttribution attribute_victim(const VictimSamples& v, const KernelTrace& trace, const AttributionOptions& opts,
                                   bool sched_switch) {
  VictimAttribution a;
  a.cpu = v.cpu;
  const std::size_t n = v.size();
  a.labels.assign(n, static_cast<std::uint8_t>(StallLabel::kClean));
  set_baseline_and_threshold(a, v, opts);
  a.victim_tid = victim_tid_of(v, trace);
  std::vector<std::int64_t> flushes, wrong_cpu, cf_entries;
  a.sched_switch = sched_switch;
  const std::vector<Incident> incidents =
      build_incidents(trace, v.cpu, a.victim_tid, !sched_switch, &flushes, &wrong_cpu, &cf_entries);

  const Span span{opts.span_start_ns > 0 ? opts.span_start_ns : v.start_ns,
                  opts.span_end_ns > 0 ? opts.span_end_ns : (n ? v.end_ns.back() : v.start_ns)};
  IncidentTally tally = label_incidents(a, v, trace, incidents, opts, span);
  if (sched_switch) {
    const std::vector<OffCpu> offs = offcpu_intervals(trace, v, a.victim_tid);
    label_preempted(a, v, offs, span);
    releases_on_cpu(a, v, trace, opts, offs);
  }
  count_labels(a, v);
  count_shootdowns_received(a, v, flushes, wrong_cpu, opts, span);
  share_shootdown_stalls(a, v, tally);
  a.handler_ns = quantiles(std::move(tally.handler));
  a.other_handler_ns = quantiles(std::move(tally.other_handler));
  a.delivery_ns = quantiles(delivery_latencies(trace, v.cpu, cf_entries, opts, span));
  a.ipi_functions.assign(tally.funcs.begin(), tally.funcs.end());
  // Stable: ties stay in name order, as result.json (an object) restores them.
  std::stable_sort(a.ipi_functions.begin(), a.ipi_functions.end(),
                   [](auto& x, auto& y) { return x.second > y.second; });
  return a;
}

}  // namespace

Attribution attribute(const std::vector<VictimSamples>& victims, const KernelTrace& trace,
                      const AttributionOptions& opts) {
  Attribution out;
  if (!trace.enabled) {
    out.note = trace.status.empty() ? "kernel trace off" : trace.status;
    return out;
  }
  out.available = true;
  const bool sched_switch = traced_sched_switch(trace);
  out.note = evidence_note(victims, trace, sched_switch);
  for (const VictimSamples& v : victims) out.victims.push_back(attribute_victim(v, trace, opts, sched_switch));
  out.own_flushes = own_flushes(trace, opts);
  return out;
}

AttributionOptions attribution_options(const Result& r) {
  AttributionOptions o;
  if (r.plan.stall_factor > 0) o.stall_factor = r.plan.stall_factor;
  o.stall_threshold_ns = r.plan.stall_threshold_ns;
  o.baseline_end_ns = r.releases.empty() ? 0 : r.releases.front().before_ns;
  // Counted span: the /proc/interrupts window (it excludes the victims' exit
  // and the teardown), else the measurement.
  if (r.interrupts_start_ns > 0 && r.interrupts_span_ns > 0) {
    o.span_start_ns = r.interrupts_start_ns;
    o.span_end_ns = r.interrupts_start_ns + r.interrupts_span_ns;
  } else {
    o.span_start_ns = r.measure_start_ns;
    o.span_end_ns = r.measure_end_ns;
  }
  o.culprit_cpu = r.plan.culprit_cpu;
  for (const Release& rel : r.releases) o.releases.emplace_back(rel.before_ns, rel.after_ns);
  o.own_pid = r.own_pid;
  o.own_threads = r.own_threads;
  return o;
}

Attribution attribute_result(const Result& r) {
  Attribution a = attribute(r.victims, r.trace, attribution_options(r));
  account_tlb(r, a);
  return a;
}

std::int64_t median_of(std::vector<std::int64_t> v) {
  return nearest_rank_select(v, 50);
}

int kernel_version_code(const std::string& kernel_release) {
  int major = 0, minor = 0;
  if (std::sscanf(kernel_release.c_str(), "%d.%d", &major, &minor) != 2 || major <= 0 || minor < 0 || minor > 999)
    return 0;
  return major * 1000 + minor;
}

std::string untraced_tlb_rule(const std::string& kernel_release) {
  const int v = kernel_version_code(kernel_release);
  const int major = v / 1000, minor = v % 1000;
  const std::string k = major > 0 ? "Linux " + std::to_string(major) + "." + std::to_string(minor) : "this kernel";
  // arch/x86/mm/tlb.c flush_tlb_func(): on a remote CPU it does
  // inc_irq_stat(irq_tlb_count) first, then returns early.
  std::string s = k +
                  ": flush_tlb_func() (arch/x86/mm/tlb.c) adds every flush IPI to the TLB row of /proc/interrupts "
                  "(inc_irq_stat(irq_tlb_count)) before it returns without tlb:tlb_flush when ";
  if (v > 0 && v < 6014)
    s += "the CPU has another mm loaded (f->mm != loaded_mm: traced as reason 5 only since 6.14), ";
  s += "init_mm is loaded (idle or a kernel thread), ";
  if (v >= 6015) s += "the mm uses a global ASID flushed by INVLPGB, ";
  s += "or its TLB is already at the requested generation (f->new_tlb_gen <= local tlb_gen: a later flush "
       "caught it up)";
  s += "; a CPU in lazy-TLB mode switches to init_mm instead (tlb_flush reason 0 inside the interrupt: counted as "
       "lazy TLB)";
  if (v >= 6014)
    s += "; another mm loaded is traced as reason 5, also by the initiating CPU's own flush_tlb_func() (no IPI, "
         "not in the TLB row: x86/mm/tlb \"Also remove local CPU from mm_cpumask if stale\", 6.14): those are "
         "reported apart";
  return s;
}

void account_tlb(const Result& r, Attribution& a) {
  if (!r.trace.enabled || r.interrupts_start_ns <= 0 || r.interrupts_span_ns <= 0) return;
  const std::int64_t lo = r.interrupts_start_ns;
  const std::int64_t hi = r.interrupts_start_ns + r.interrupts_span_ns;
  const std::string rule = untraced_tlb_rule(r.env.kernel);
  const bool csd_traced = std::any_of(r.trace.events.begin(), r.trace.events.end(),
                                      [](const KernelEvent& e) { return e.type == EventType::kCsdFunctionEntry; });
  for (VictimAttribution& v : a.victims) {
    const CpuCounters* c = nullptr;
    for (const CpuCounters& x : r.counters)
      if (x.cpu == v.cpu) c = &x;
    if (!c) continue;
    v.tlb_counted = c->tlb;
    // Folded events (a run past its memory limit) lie inside [lo, hi].
    auto folded = [&](const std::map<std::pair<int, int>, std::int64_t>& m, int reason) {
      auto it = m.find({v.cpu, reason});
      return it == m.end() ? std::int64_t{0} : it->second;
    };
    const auto& fr = r.trace.folded.remote_split ? r.trace.folded.tlb_flush_remote : r.trace.folded.tlb_flush;
    v.tlb_traced_remote = folded(r.trace.folded.tlb_flush, kTlbRemoteShootdown);
    v.tlb_traced_wrong_cpu = folded(fr, kTlbRemoteWrongCpu);
    v.tlb_local_wrong_cpu = folded(r.trace.folded.tlb_flush, kTlbRemoteWrongCpu) - folded(fr, kTlbRemoteWrongCpu);
    v.tlb_lazy = folded(fr, kTlbFlushOnTaskSwitch);
    v.tlb_local_flush_runs = csd_traced ? 0 : -1;
    RemoteRunContext ctx;
    for (const KernelEvent& e : r.trace.events) {
      if (e.cpu != v.cpu) continue;
      const bool in_window = e.mono_ns >= lo && e.mono_ns <= hi;
      if (in_window && e.type == EventType::kTlbFlush) {
        const bool remote = ctx.remote(e.cpu);
        // Reason 1 is traced only by a remote run (flush_tlb_func: local ?
        // TLB_LOCAL_MM_SHOOTDOWN : TLB_REMOTE_SHOOTDOWN).
        if (e.a == kTlbRemoteShootdown) ++v.tlb_traced_remote;
        if (e.a == kTlbRemoteWrongCpu) ++(remote ? v.tlb_traced_wrong_cpu : v.tlb_local_wrong_cpu);
        if (e.a == kTlbFlushOnTaskSwitch && remote) ++v.tlb_lazy;
      }
      if (in_window && e.type == EventType::kCsdFunctionEntry && e.c == 0 &&
          is_flush_tlb_func(r.trace.symbol(static_cast<std::uint64_t>(e.b))))
        ++v.tlb_local_flush_runs;
      ctx.add(e);
    }
    const std::int64_t traced = v.tlb_traced_remote + v.tlb_traced_wrong_cpu + v.tlb_lazy;
    v.tlb_untraced = std::max<std::int64_t>(0, v.tlb_counted - traced);
    v.tlb_traced_beyond = std::max<std::int64_t>(0, traced - v.tlb_counted);
    v.tlb_untraced_rule = rule;
  }
}

std::vector<std::pair<std::uint8_t, std::int64_t>> label_runs(const std::vector<std::uint8_t>& labels) {
  std::vector<std::pair<std::uint8_t, std::int64_t>> out;
  for (auto l : labels) {
    if (!out.empty() && out.back().first == l)
      ++out.back().second;
    else
      out.emplace_back(l, 1);
  }
  return out;
}

std::vector<std::int64_t> latencies_with_label(const VictimSamples& v, const VictimAttribution& a, StallLabel label) {
  std::vector<std::int64_t> out;
  const auto want = static_cast<std::uint8_t>(label);
  for (std::size_t i = 0; i < v.size() && i < a.labels.size(); ++i)
    if (a.labels[i] == want) out.push_back(v.lat_ns[i]);
  return out;
}

bool is_flush_tlb_func(const std::string& sym) {
  return sym.rfind("flush_tlb_func", 0) == 0;  // "flush_tlb_func+0x0", also older flush_tlb_func_remote
}

std::map<int, std::vector<EventMark>> event_marks(const KernelTrace& tr, const std::set<int>& cpus) {
  std::map<int, std::vector<EventMark>> out;
  std::map<int, std::int64_t> open_cf;  // cpu -> entry time of an open call-function span
  std::map<int, bool> open_tlb;
  for (const KernelEvent& e : tr.events) {
    if (!cpus.count(e.cpu)) continue;
    auto& v = out[e.cpu];
    switch (e.type) {
      case EventType::kCallFunctionEntry:
      case EventType::kCallFunctionSingleEntry:
        open_cf[e.cpu] = e.mono_ns;
        open_tlb[e.cpu] = false;
        break;
      case EventType::kCallFunctionExit:
      case EventType::kCallFunctionSingleExit:
        if (auto it = open_cf.find(e.cpu); it != open_cf.end()) {
          v.push_back({it->second, open_tlb[e.cpu] ? MarkCause::kTlbShootdown : MarkCause::kOtherIpi});
          open_cf.erase(it);
        }
        break;
      case EventType::kTlbFlush:
        if (e.a == kTlbRemoteShootdown) {
          if (open_cf.count(e.cpu))
            open_tlb[e.cpu] = true;
          else
            v.push_back({e.mono_ns, MarkCause::kTlbShootdown});
        }
        break;
      case EventType::kCsdFunctionEntry:
        if (open_cf.count(e.cpu) && is_flush_tlb_func(tr.symbol(static_cast<std::uint64_t>(e.b))))
          open_tlb[e.cpu] = true;
        break;
      case EventType::kLocalTimerEntry:
        v.push_back({e.mono_ns, MarkCause::kTimer});
        break;
      case EventType::kIrqHandlerEntry:
        v.push_back({e.mono_ns, MarkCause::kIrq});
        break;
      case EventType::kReschedEntry:
        v.push_back({e.mono_ns, MarkCause::kResched});
        break;
      default:
        break;
    }
  }
  // A span cut by the end of tracing.
  for (auto& [cpu, t] : open_cf)
    out[cpu].push_back({t, open_tlb[cpu] ? MarkCause::kTlbShootdown : MarkCause::kOtherIpi});
  for (auto& [cpu, v] : out)
    std::sort(v.begin(), v.end(), [](const EventMark& a, const EventMark& b) { return a.t < b.t; });
  return out;
}

std::int64_t shootdown_marks(const Result& r, const std::map<int, std::vector<EventMark>>& marks, int cpu,
                             bool in_windows) {
  auto it = marks.find(cpu);
  if (it == marks.end()) return 0;
  std::int64_t n = 0;
  if (!in_windows) {
    for (const EventMark& m : it->second) n += m.cause == MarkCause::kTlbShootdown;
    return n;
  }
  for (const auto& rel : r.releases) {
    auto lo = std::lower_bound(it->second.begin(), it->second.end(), rel.before_ns,
                               [](const EventMark& m, std::int64_t x) { return m.t < x; });
    for (; lo != it->second.end() && lo->t <= rel.after_ns + r.plan.settle_ns; ++lo)
      n += lo->cause == MarkCause::kTlbShootdown;
  }
  return n;
}

}  // namespace shootdown
