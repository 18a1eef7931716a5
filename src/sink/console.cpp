// SPDX-License-Identifier: Apache-2.0
#include "sink/console.hpp"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/cpulist.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"

namespace shootdown::sink {

namespace {
std::string num(double v) {
  if (v >= 100000) return fmt::format("{:.0f}", v);
  if (v >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}
}  // namespace

namespace {
// "reason 1 6 + reason 5 in an IPI 0 + lazy TLB 0 + counted, not traced 0"
std::string tlb_accounting_terms(const VictimAttribution& v) {
  if (v.tlb_legacy)  // saved before the split: reason 5 was not split by IPI
    return fmt::format(
        "reason 1 {} + reason 5 {} + counted, not traced {} (saved by an older shootdown: reason 5 "
        "not split by IPI, so it may include this CPU's own flushes)",
        v.tlb_traced_remote, v.tlb_traced_wrong_cpu, v.tlb_untraced);
  std::string s = fmt::format("reason 1 {} + reason 5 in an IPI {} + lazy TLB {} + counted, not traced {}",
                              v.tlb_traced_remote, v.tlb_traced_wrong_cpu, v.tlb_lazy, v.tlb_untraced);
  if (v.tlb_traced_beyond > 0)
    s += fmt::format(" (traced {} more than counted: flushes at the window's edges)", v.tlb_traced_beyond);
  return s;
}

// The accounting line, the rule when some went untraced, and what is apart.
std::string tlb_accounting_lines(const VictimAttribution& v, const std::string& indent) {
  std::string out = fmt::format("{}/proc/interrupts TLB {} = {}\n", indent, v.tlb_counted, tlb_accounting_terms(v));
  if (v.tlb_untraced != 0) out += indent + "  (" + v.tlb_untraced_rule + ")\n";
  if (!v.tlb_legacy && (v.tlb_local_wrong_cpu > 0 || v.tlb_local_flush_runs > 0)) {
    out += fmt::format(
        "{}  apart, no IPI and not in the row: this CPU's own flush_tlb_func runs {}", indent,
        v.tlb_local_flush_runs < 0 ? std::string("(no csd tracepoints)") : std::to_string(v.tlb_local_flush_runs));
    out += fmt::format(", reason 5 traced by them {}\n", v.tlb_local_wrong_cpu);
  }
  return out;
}

bool wants_p99999(const VictimAnalysis& va) {
  for (const auto& ps : va.phases)
    if (ps.per_batch.count >= column_min_samples(Column::kP99999)) return true;
  return false;
}
}  // namespace

std::string summary_table(const std::string& title, const VictimAnalysis& va, bool per_page) {
  const bool five = wants_p99999(va);
  std::vector<Column> cols = {Column::kMin, Column::kMean, Column::kP50,  Column::kP90,
                              Column::kP99, Column::kP999, Column::kP9999};
  if (five) cols.push_back(Column::kP99999);
  cols.push_back(Column::kMax);
  auto width = [](Column c) { return c == Column::kMin ? 7 : c == Column::kMax || c == Column::kP99999 ? 9 : 8; };
  // Right-aligned in w, and never touching the column to its left: a value
  // wider than its column (a 9-digit sample count) keeps one space.
  auto cell_at = [](const std::string& v, int w) {
    return static_cast<int>(v.size()) >= w ? " " + v : fmt::format("{:>{}}", v, w);
  };
  std::string out = title + "\n";
  std::string h = fmt::format("  {:<9}", "phase");
  for (Column c : cols) h += fmt::format("{:>{}}", column_name(c), width(c));
  h += fmt::format("{:>9}", "samples");
  if (!per_page) h += fmt::format("{:>12}", "stall lost");
  out += h + "\n";
  bool marked = false;
  for (const auto& ps : va.phases) {
    const Summary& s = per_page ? ps.per_page : ps.per_batch;
    std::string line = fmt::format("  {:<9}", to_string(ps.phase));
    for (Column c : cols) {
      std::string cell = "-";
      if (s.count >= column_min_samples(c)) {
        cell = num(column_value(s, c));
        if (!per_page && (ps.beyond_spread >> static_cast<int>(c)) & 1u) {
          cell += "*";
          marked = true;
        }
      }
      line += cell_at(cell, width(c));
    }
    line += cell_at(std::to_string(s.count), 9);
    if (!per_page) line += cell_at(s.count ? format_duration_ns(ps.stall_lost_ns) : "-", 12);
    out += line + "\n";
  }
  if (marked)
    out += fmt::format("  * outside the range this column takes over {} windows of {} of the baseline alone\n",
                       va.spread_windows, format_duration_ns(va.spread_window_ns));
  return out;
}

namespace {
std::string kernel_path_text(const std::vector<std::string>& path, std::size_t frames) {
  std::string out;
  for (std::size_t i = 0; i < path.size() && i < frames; ++i) out += (i ? " <- " : "") + path[i];
  if (path.size() > frames) out += " <- ...";
  return out;
}

// "1 shootdown IPI of the tool's own reached cpu1 outside the release calls
// (culprit: page fault: write to a read-only page, ...)": who sent it and by
// which kernel path, so it is never read as the strategy's.
std::string own_flushes_clause(const VictimVerdict& x, const std::vector<OwnFlush>& own, const std::string& cpu) {
  std::string s = fmt::format(
      "{} shootdown IPI{} of the tool's own reached {} outside the release calls ({} stalled, "
      "not counted above",
      x.own_outside, x.own_outside == 1 ? "" : "s", cpu, format_duration_ns(x.own_outside_stall_ns));
  if (own.empty()) return s + "; no initiator traced)";
  std::map<std::string, std::int64_t> by;  // "culprit: cause (path)" -> flushes
  for (const OwnFlush& f : own)
    ++by[f.thread + ": " + f.cause + (f.kernel_path.empty() ? "" : ", " + kernel_path_text(f.kernel_path, 4))];
  std::string who;
  for (const auto& [k, n] : by) who += (who.empty() ? "" : "; ") + (n > 1 ? std::to_string(n) + " x " : "") + k;
  return s + "; initiated by " + who + ": a defect of shootdown run, please report it)";
}
}  // namespace

std::string verdict_line(const Result& r, const Verdict& v, const VictimVerdict& x) {
  const Plan& p = r.plan;
  auto d = [](std::int64_t ns) { return format_duration_ns(ns); };
  std::string head;
  if (v.releases == 0)
    head = "no release performed" + (r.complete ? std::string() : " (" + r.incomplete_reason + ")");
  else if (v.releases == 1)
    head = fmt::format("{} of {} ({})", strategy_name(p.release), released_what(p.release, p.chunk_size, p.pace()),
                       d(v.release_window_ns));
  else
    head = fmt::format("{} x {} of {} ({} each, p50)", v.releases, strategy_name(p.release),
                       released_what(p.release, p.chunk_size, p.pace()), d(v.release_p50_ns));
  for (const auto& rel : r.releases)
    if (rel.partial) {
      head += " (" + partial_release_note(rel.bytes, released_bytes(p.release, p.chunk_size)) + ")";
      break;
    }
  const std::string cpu = "cpu" + std::to_string(x.cpu);
  if (p.release == ReleaseStrategy::kProbe) {
    // probe: no release of ours; what the target's own threads sent the probe.
    const std::string span = d(r.measure_end_ns - r.measure_start_ns);
    if (!x.evidence) return "the probe on " + cpu + ": shootdowns unknown (" + v.unknown + ")";
    if (x.shootdowns == 0) return "the probe on " + cpu + " received no shootdown IPI in " + span;
    std::string s = fmt::format("the probe on {} received {} shootdown IPI{} in {}: {} stalled, {} each (p50)", cpu,
                                x.shootdowns, x.shootdowns == 1 ? "" : "s", span, d(x.stall_ns), d(x.per_ipi_p50_ns));
    if (x.seen < x.shootdowns) s += fmt::format(" ({} of them inside a probe sample)", x.seen);
    return s;
  }
  if (!x.evidence) {
    std::string s =
        head + ": shootdowns to " + cpu + " unknown (" + (v.unknown.empty() ? "no kernel trace" : v.unknown) + ")";
    if (x.tlb_delta >= 0)
      s +=
          fmt::format("; /proc/interrupts counted {} TLB IPIs on {} over the span, from any process", x.tlb_delta, cpu);
    return s;
  }
  if (v.releases == 0) {
    return head +
           fmt::format(": {} shootdown IPIs of ours reached {} anyway, {} stalled", x.shootdowns, cpu, d(x.stall_ns));
  }
  std::string s;
  if (x.shootdowns == 0) {
    s = head + " sent no shootdown IPI to " + cpu;
    if (x.foreign > 0) s += fmt::format(" (its {} other TLB flushes were for other processes)", x.foreign);
  } else {
    s = head + fmt::format(" sent {} shootdown IPI{} to {}: {} stalled, {} each (p50)", x.shootdowns,
                           x.shootdowns == 1 ? "" : "s", cpu, d(x.stall_ns), d(x.per_ipi_p50_ns));
    if (v.release_window_ns > 0)
      s += fmt::format(", {:.1f} % of the release window",
                       100.0 * static_cast<double>(x.stall_ns) / static_cast<double>(v.release_window_ns));
    if (x.seen < x.shootdowns) s += fmt::format(" ({} of them inside a victim sample)", x.seen);
  }
  if (x.flushes_unseen)
    s += fmt::format(
        "; but the kernel made {} remote TLB flush request{} while {} ran this process and {} arrived as an IPI: "
        "remote flushes bypass IPIs here (a hypervisor's paravirtual flush), so their cost to {} is unseen, not zero "
        "(shootdown doctor: pv_tlb_flush)",
        x.flush_requests, x.flush_requests == 1 ? "" : "s", cpu,
        x.flush_requests_delivered == 0 ? std::string("none") : "only " + std::to_string(x.flush_requests_delivered),
        cpu);
  if (x.broadcast_flush && v.broadcast_by == "Intel RAR")
    s += "; this kernel may flush remote TLBs by Intel RAR remote action requests (shootdown doctor: "
         "tlb_broadcast): the releases sent no IPI and traced no tlb_flush, so no shootdown IPI is not no cost (the "
         "releasing thread waits for the targets' acknowledgements instead, unseen here)";
  else if (x.broadcast_flush)
    s += "; this CPU and kernel flush remote TLBs by AMD INVLPGB broadcast (shootdown doctor: tlb_broadcast): the "
         "releases sent no IPI and traced no tlb_flush, so no shootdown IPI is not no cost (the releasing thread "
         "waits in TLBSYNC instead, unseen here)";
  if (x.own_outside > 0) s += "; " + own_flushes_clause(x, v.own_flushes, cpu);
  if (x.off_cpu_in_release) s += "; the victim was switched out during a release, so part of its stall is unseen";
  if (x.shootdowns > 0 && p.release != ReleaseStrategy::kReuse)
    s += "; compare with the reuse control: shootdown compare";
  return s;
}

std::vector<std::string> verdict_lines(const Result& r, const Analysis& a) {
  std::vector<std::string> out;
  for (const auto& x : a.verdict.victims) out.push_back(verdict_line(r, a.verdict, x));
  return out;
}

std::string release_cost_lines(const Result& r, const Analysis& a) {
  std::string out;
  auto size = [](std::int64_t b) { return b < 0 ? std::string("unknown") : format_size(b); };
  if (r.allocator) {
    const AllocatorReport& al = *r.allocator;
    out += fmt::format("allocator: {}{}; {}; {}\n", al.version, al.library.empty() ? "" : " (" + al.library + ")",
                       al.settings,
                       al.purge_call.empty() ? "no give-back call (--allocator-purge off)"
                                             : "each release ended with " + al.purge_call);
  }
  if (r.memory) {
    const MemoryKept& m = *r.memory;
    out += fmt::format(
        "memory kept: {} of the {} {} still resident when the release settled (RSS {} before it, {} "
        "settled)",
        size(m.kept_bytes), format_size(m.released_bytes),
        r.plan.release == ReleaseStrategy::kReuse ? "rewritten" : "released", size(m.rss_before), size(m.rss_settled));
    if (r.allocator && r.allocator->allocator_free_bytes >= 0)
      out += fmt::format("; {}'s own count: {} free ({})", r.allocator->name,
                         format_size(r.allocator->allocator_free_bytes), r.allocator->allocator_free_source);
    out += "\n";
  }
  if (const auto c = release_cost(r, a.verdict)) {
    auto num = [](double x, const char* f) {
      return std::isfinite(x) ? fmt::format(fmt::runtime(f), x) : std::string("?");
    };
    out += fmt::format("per GiB released: {} shootdown IPIs and {} ms stall per victim, {} ms release, {} MiB kept\n",
                       num(c->shootdowns_per_gib, "{:.0f}"), num(c->stall_ms_per_gib, "{:.1f}"),
                       num(c->release_ms_per_gib, "{:.1f}"), num(c->kept_mib_per_gib, "{:.1f}"));
  }
  return out;
}

std::string attribution_section(const Result& r, const Analysis& a) {
  std::string out;
  const KernelTrace& t = r.trace;
  if (t.enabled)
    out += fmt::format("  {} tracepoints, {} events, {} lost\n", t.tracepoints.size(), a.event_total, t.lost_events);
  for (const auto& m : t.missing) out += "  missing: " + m + "\n";
  const Attribution& at = a.attribution;
  if (!at.available) return out;
  if (!at.note.empty()) out += "  note: " + at.note + "\n";
  auto d = [](std::int64_t ns) { return format_duration_ns(ns); };
  if (!at.own_flushes.empty()) {
    out += fmt::format("\nremote TLB flushes of the tool's own outside the release calls (not the strategy's): {}\n",
                       at.own_flushes.size());
    const std::int64_t t0 = r.interrupts_start_ns > 0 ? r.interrupts_start_ns : r.measure_start_ns;
    constexpr std::size_t kShown = 10;
    for (std::size_t i = 0; i < at.own_flushes.size() && i < kShown; ++i) {
      const OwnFlush& f = at.own_flushes[i];
      out += fmt::format(
          "  +{} {} (tid {}) on cpu{}, {}: {}\n", d(f.mono_ns - t0), f.thread, f.tid, f.cpu,
          f.pages < 0 ? std::string("full flush") : fmt::format("{} page{}", f.pages, f.pages == 1 ? "" : "s"),
          f.cause);
      if (!f.kernel_path.empty()) out += "      " + kernel_path_text(f.kernel_path, 8) + "\n";
    }
    if (at.own_flushes.size() > kShown)
      out += fmt::format("  ... and {} more (result.json attribution.own_flushes)\n", at.own_flushes.size() - kShown);
  }
  for (std::size_t i = 0; i < at.victims.size(); ++i) {
    const VictimAttribution& v = at.victims[i];
    out += fmt::format("\nstall attribution, victim cpu{} (stall > {} = {:g} x median {}):\n", v.cpu,
                       d(v.stall_threshold_ns), r.plan.stall_threshold_ns > 0 ? 0.0 : r.plan.stall_factor,
                       d(v.baseline_median_ns));
    out += fmt::format("  shootdown IPIs: {} received (kernel), {} in samples ({:.1f}%), {} stalls\n",
                       v.shootdowns_received, v.shootdowns_matched, 100.0 * v.recall, v.shootdowns_stalled);
    if (v.shootdowns_outside_releases > 0)
      out += fmt::format("    {} of them outside the release calls: the tool's own (above), not the strategy's\n",
                         v.shootdowns_outside_releases);
    out += fmt::format("  TLB IPIs: {} ran flush_tlb_func; reason 1 (this mm) {}, reason 5 (other mm) {}\n",
                       v.flush_ipis, v.shootdowns_received, v.wrong_cpu_flushes);
    if (v.tlb_counted >= 0) out += tlb_accounting_lines(v, "  ");
    out +=
        fmt::format("  {:<22}{:>12}{:>12}{:>12}{:>8}{:>12}\n", "per shootdown IPI", "p50", "p90", "max", "n", "total");
    auto row = [&](const char* name, const Quantiles& q) {
      if (q.count == 0) return fmt::format("  {:<22}{:>12}{:>12}{:>12}{:>8}{:>12}\n", name, "-", "-", "-", 0, "-");
      return fmt::format("  {:<22}{:>12}{:>12}{:>12}{:>8}{:>12}\n", name, d(q.p50), d(q.p90), d(q.max), q.count,
                         q.total < 0 ? std::string("-") : d(q.total));
    };
    out += row("victim stall", v.stall_per_shootdown);
    out += row("IPI handler", v.handler_ns);
    out += row("send -> handler entry", v.delivery_ns);
    out += row("other IPI handler", v.other_handler_ns);
    out += fmt::format("  {:<22}{:>12}{:>14}\n", "label", "samples", "stall lost");
    for (int l = 0; l < kStallLabelCount; ++l)
      out +=
          fmt::format("  {:<22}{:>12}{:>14}\n", label_name(static_cast<StallLabel>(l)), v.samples[l], d(v.stall_ns[l]));
    if (!v.ipi_functions.empty()) {
      std::string f = "  function-call IPIs:";
      for (const auto& [name, n] : v.ipi_functions) {
        std::string item = fmt::format(" {}={}", name, n);
        if (f.size() + item.size() > 78) {
          out += f + "\n";
          f = "   ";
        }
        f += item;
      }
      out += f + "\n";
    }
    if (i < a.clean_victims.size())
      out += summary_table(fmt::format("victim cpu{}: clean samples only, ns per batch", v.cpu), a.clean_victims[i],
                           false);
  }
  return out;
}

std::string console_summary(const Result& r, const Analysis& a, bool verbose) {
  std::string out;
  const Plan& p = r.plan;
  out += fmt::format("shootdown run: release={} chunk={} pages={} batch={}\n", strategy_name(p.release),
                     format_size(p.chunk_size), page_mode_name(p.pages), format_size(p.batch));
  out += fmt::format("culprit cpu{}, victims cpu{} ({})\n", p.culprit_cpu, format_cpulist(p.victim_cpus),
                     p.cpu_choice.rfind("default", 0) == 0             ? "default: one NUMA node, no SMT siblings"
                     : p.cpu_choice.empty() || p.cpu_choice == "given" ? "given"
                                                                       : "one given, the other chosen");
  if (!r.complete) out += fmt::format("INCOMPLETE: {}\n", r.incomplete_reason);
  for (const auto& line : verdict_lines(r, a)) out += line + "\n";
  for (const auto& va : a.victims) {
    out += "\n";
    out += summary_table(
        fmt::format("victim cpu{}: ns per batch ({} pages, {})", va.cpu, va.pages_per_batch, format_size(p.batch)), va,
        false);
    out += summary_table(fmt::format("victim cpu{}: ns per page (batch / {})", va.cpu, va.pages_per_batch), va, true);
  }
  out += "\n";
  if (!r.releases.empty()) {
    if (r.releases.size() == 1)
      out += fmt::format("release: {} of {} took {}\n", strategy_name(p.release),
                         released_what(p.release, p.chunk_size, p.pace()),
                         format_duration_ns(r.releases[0].duration_ns()));
    else
      out += fmt::format("releases: {} x {} of {}: duration p50 {}, max {}\n", r.releases.size(),
                         strategy_name(p.release), released_what(p.release, p.chunk_size, p.pace()),
                         format_duration_ns(static_cast<std::int64_t>(a.release_duration.p50)),
                         format_duration_ns(static_cast<std::int64_t>(a.release_duration.max)));
    for (const auto& rel : r.releases)
      if (rel.partial)
        out += fmt::format("release {}: {}\n", rel.index + 1,
                           partial_release_note(rel.bytes, released_bytes(p.release, p.chunk_size)));
  } else {
    out += "release: none performed\n";
  }
  out += release_cost_lines(r, a);
  if (!r.counters.empty()) {
    out += fmt::format("/proc/interrupts deltas over {}:\n", format_duration_ns(r.interrupts_span_ns));
    out += fmt::format("  {:<8}{:<9}{:>10}{:>10}{:>10}{:>10}\n", "cpu", "role", "TLB", "CAL", "LOC", "RES");
    for (const auto& c : r.counters) {
      if (c.role == CpuRole::kOther && c.tlb == 0 && c.cal == 0) continue;
      out += fmt::format("  {:<8}{:<9}{:>10}{:>10}{:>10}{:>10}\n", "cpu" + std::to_string(c.cpu), to_string(c.role),
                         c.tlb, c.cal, c.loc, c.res);
    }
  }
  out += fmt::format("kernel trace: {}\n", r.trace.status.empty() ? "off" : r.trace.status);
  out += attribution_section(r, a);
  // Tuning warnings (the doctor's findings) in one line unless -v; the run's
  // own warnings always in full. result.json and report.html keep them all.
  if (verbose || r.env.warnings.size() == 1) {
    for (const auto& w : r.env.warnings) out += "warning: " + w + "\n";
  } else if (!r.env.warnings.empty()) {
    out += fmt::format("warning: {} tuning warnings undermine these numbers: shootdown doctor (-v lists them)\n",
                       r.env.warnings.size());
  }
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

std::string probe_processes(const std::vector<ProbeProcess>& ps, const std::string& command) {
  int probed = 0;
  for (const auto& p : ps) probed += p.samples > 0;
  std::string s = fmt::format("shootdown probe: {}: {} process image{} seen, {} probed\n", command, ps.size(),
                              ps.size() == 1 ? "" : "s", probed);
  for (const auto& p : ps) {
    std::string fate;
    switch (p.fate) {
      case ProbeFate::kUntilEnd:
        fate = "probed until the end";
        break;
      case ProbeFate::kExited:
        fate = "until it exited";
        break;
      case ProbeFate::kExeced:
        fate = p.successor_pid ? fmt::format("then exec'd {}", p.successor_comm) : "then exec'd (no probe slot left)";
        break;
      case ProbeFate::kHandedOver:
        fate = fmt::format("then handed cpu{} to its child pid {} ({})", p.cpu, p.successor_pid, p.successor_comm);
        break;
      case ProbeFate::kOverrun:
        fate = "until its ring filled (raise --ring)";
        break;
      case ProbeFate::kFailed:
        fate = "probe failed: " + p.error;
        break;
      case ProbeFate::kNoCpu:
        fate = "not probed: every probe CPU was held by another process of the target (give more with --cpu)";
        break;
      case ProbeFate::kGone:
        fate = "its probe vanished (exec'd a program that ignores LD_PRELOAD?)";
        break;
    }
    s += fmt::format("  pid {:<7} {:<16}", p.pid, p.comm);
    if (p.cpu >= 0 && p.fate != ProbeFate::kNoCpu)
      s += fmt::format(" cpu{} {:>9} samples over {:>9}, ", p.cpu, p.samples, format_duration_ns(p.probed_ns));
    s += fate + "\n";
  }
  return s;
}

std::string probe_callsites(const BlameReport& r, const BlameOptions& o, const std::string& command) {
  std::string s = fmt::format(
      "who sent them: {} shootdowns initiated by the target's threads ({} process{}, {} "
      "flush IPIs)\n",
      r.flushes, r.processes, r.processes == 1 ? "" : "es", r.ipis);
  const std::size_t n = std::min<std::size_t>(r.sites.size(), static_cast<std::size_t>(std::max(o.top, 1)));
  for (std::size_t i = 0; i < n; ++i) {
    const CallSite& c = r.sites[i];
    s += fmt::format("  {:>2}. {}\n      {} flushes ({:.0f} %), {} IPIs, cause: {}{}\n", i + 1, c.stack, c.flushes,
                     r.flushes ? 100.0 * static_cast<double>(c.flushes) / static_cast<double>(r.flushes) : 0.0, c.ipis,
                     c.syscall.empty() ? "unknown" : c.syscall, c.location.empty() ? "" : " at " + c.location);
    if (!c.advice.empty()) s += "      advice: " + c.advice + "\n";
  }
  if (r.sites.empty()) s += "  none: the target's threads initiated no shootdown while probed\n";
  if (r.lost) s += fmt::format("  the kernel dropped {} samples: counts are low\n", r.lost);
  s += "  every call site, stacks and folded output: shootdown blame -- " + command + "\n";
  return s;
}

std::string probe_summary(const Result& r, const Analysis& a, const std::string& command) {
  const Attribution& at = a.attribution;
  const std::int64_t span = r.measure_end_ns - r.measure_start_ns;
  const int cpu = r.plan.victim_cpus.empty() ? -1 : r.plan.victim_cpus.front();
  std::string s = r.probe ? fmt::format("pid {} ({}), probe thread on cpu{}, {} probed\n", r.probe->pid, r.probe->comm,
                                        cpu, format_duration_ns(span))
                          : fmt::format("shootdown probe: {}, probe thread on cpu{}, {} probed\n", command, cpu,
                                        format_duration_ns(span));
  for (const auto& line : verdict_lines(r, a)) s += line + "\n";
  if (!r.complete) s += fmt::format("INCOMPLETE: {}\n", r.incomplete_reason);
  s += "\n";
  const double secs = static_cast<double>(span) / 1e9;
  auto per_s = [&](double x) { return secs > 0 ? x / secs : 0.0; };
  if (!r.victims.empty()) {
    const auto& vs = r.victims.front();
    s += fmt::format(
        "  {:<17}{} samples of {} pages ({}), median {}\n", "samples", vs.size(), vs.pages_per_batch,
        format_size(r.plan.batch),
        format_duration_ns(at.available && !at.victims.empty() ? at.victims.front().baseline_median_ns : 0));
  }
  if (at.available && !at.victims.empty()) {
    const VictimAttribution& va = at.victims.front();
    const std::int64_t tlb = va.stall_ns[static_cast<int>(StallLabel::kTlbShootdown)];
    s += fmt::format("  {:<17}{} received ({:.1f} /s), {} inside a sample ({:.1f} %), {} stalled\n", "shootdowns",
                     va.shootdowns_received, per_s(static_cast<double>(va.shootdowns_received)), va.shootdowns_matched,
                     100.0 * va.recall, va.shootdowns_stalled);
    s += fmt::format("  {:<17}{} ({} per second, {:.3f} % of the time probed)\n", "stall lost", format_duration_ns(tlb),
                     format_duration_ns(static_cast<std::int64_t>(per_s(static_cast<double>(tlb)))),
                     span > 0 ? 100.0 * static_cast<double>(tlb) / static_cast<double>(span) : 0.0);
    s += fmt::format("  {:<17}p50 {}, p90 {}, max {} (n {})\n", "per shootdown",
                     format_duration_ns(va.stall_per_shootdown.p50), format_duration_ns(va.stall_per_shootdown.p90),
                     format_duration_ns(va.stall_per_shootdown.max), va.stall_per_shootdown.count);
    std::string other;
    for (StallLabel l : {StallLabel::kOtherIpi, StallLabel::kTimer, StallLabel::kIrq, StallLabel::kResched,
                         StallLabel::kPreempted, StallLabel::kUnexplained}) {
      const auto i = static_cast<int>(l);
      if (va.samples[i] == 0) continue;
      other += fmt::format("{}{} {} ({})", other.empty() ? "" : ", ", label_name(l), va.samples[i],
                           format_duration_ns(va.stall_ns[i]));
    }
    s += fmt::format("  {:<17}{}\n", "other causes", other.empty() ? "none" : other);
    if (va.tlb_counted >= 0)
      s += fmt::format("  {:<17}TLB {} on cpu{} = {}\n", "/proc/interrupts", va.tlb_counted, va.cpu,
                       tlb_accounting_terms(va));
  } else {
    s += "  kernel evidence: " + (at.note.empty() ? r.trace.status : at.note) + "\n";
  }
  for (const auto& w : r.warnings) s += "warning: " + w + "\n";
  return s;
}

}  // namespace shootdown::sink
