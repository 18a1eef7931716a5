// SPDX-License-Identifier: Apache-2.0
#include "sink/html_report.hpp"
#include "core/stats.hpp"

#include "sink/console.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "core/cpulist.hpp"
#include "core/units.hpp"
#include "sink/json.hpp"
#include "sink/svg_chart.hpp"

namespace shootdown::sink {

namespace {

using svg::escape;

// One palette for the whole page so a color means the same thing everywhere.
constexpr const char* kColorP50 = "#2b8a3e";
constexpr const char* kColorP90 = "#1c7ed6";
constexpr const char* kColorP99 = "#e67700";
constexpr const char* kColorMax = "#c92a2a";
constexpr const char* kColorBefore = "#862e9c";
constexpr const char* kColorAfter = "#0b7285";
constexpr const char* kColorBand = "#ffc078";
constexpr const char* kColorBaseline = "#1c7ed6";
constexpr const char* kColorRelease = "#c92a2a";
constexpr const char* kColorAfterPhase = "#868e96";
constexpr const char* kColorLatency = "#343a40";

struct CauseStyle {
  const char* kind;  // label_name() of the StallLabel
  const char* text;
  const char* color;
};
// Event-tick rows (the first five) and stall bars share these. Labels the
// attribution adds later get a bar with their own name and a neutral color.
constexpr CauseStyle kCauses[] = {
    {"tlb-shootdown", "TLB shootdown", "#c92a2a"},
    {"other-ipi", "other IPI", "#e67700"},
    {"timer", "timer", "#1c7ed6"},
    {"irq", "device IRQ", "#5f3dc4"},
    {"resched", "resched IPI", "#2b8a3e"},
    {"unexplained", "unexplained (no kernel event)", "#495057"},
    {"preempted", "another task ran", "#a61e4d"},
};

CauseStyle cause_style(const char* kind) {
  for (const auto& c : kCauses)
    if (std::string_view(c.kind) == kind) return c;
  return {kind, kind, "#868e96"};
}

bool have_events(const Result& r);
std::string evidence_missing(const Result& r);

// The analysis's attribution (core decides whether there is one to show:
// result_attribution); when there is none, why.
const Attribution& attribution_for(const Result& r, const Analysis& a, Attribution& storage) {
  if (a.attribution.available) return a.attribution;
  storage = a.attribution;
  if (storage.note.empty()) storage.note = evidence_missing(r);
  return storage;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "-";
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}

std::string dur(double ns) {
  return svg::format_duration(ns);
}

std::int64_t t0_of(const Result& r) {
  if (r.measure_start_ns > 0) return r.measure_start_ns;
  std::int64_t t0 = INT64_MAX;
  for (const auto& v : r.victims) t0 = std::min(t0, v.start_ns);
  for (const auto& iv : r.intervals) t0 = std::min(t0, iv.start_ns);
  for (const auto& rel : r.releases) t0 = std::min(t0, rel.before_ns);
  return t0 == INT64_MAX ? 0 : t0;
}

const VictimSamples* samples_of(const Result& r, int cpu) {
  for (const auto& v : r.victims)
    if (v.cpu == cpu) return &v;
  return nullptr;
}

const VictimAttribution* attribution_of(const Attribution& at, int cpu) {
  if (!at.available) return nullptr;
  for (const auto& v : at.victims)
    if (v.cpu == cpu) return &v;
  return nullptr;
}

const CpuCounters* counters_of(const Result& r, int cpu) {
  for (const auto& c : r.counters)
    if (c.cpu == cpu) return &c;
  return nullptr;
}

const PhaseStats* phase_of(const VictimAnalysis& va, Phase p) {
  for (const auto& ps : va.phases)
    if (ps.phase == p) return &ps;
  return nullptr;
}

// --- kernel events on victim CPUs, classified for the tick rows ---

// Kernel events are in memory after a run; a result loaded from result.json
// (shootdown report DIR) has the ones trace.events_table kept (none from an
// older shootdown, which kept only their counts).
bool have_events(const Result& r) {
  return r.trace.enabled && !r.trace.events.empty();
}

std::string evidence_missing(const Result& r) {
  if (have_events(r)) return {};
  if (r.trace.enabled)
    return "no kernel events in this result (re-rendered from result.json, which keeps only their counts)";
  std::string s = r.trace.status.empty() ? "kernel trace off" : r.trace.status;
  return "no kernel evidence (" + s + ")";
}

// --- sections ---

std::string fact(const std::string& k, const std::string& v) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape(k), escape(v));
}

std::string header_section(const Result& r, const Analysis& a) {
  const Plan& p = r.plan;
  const Environment& e = r.env;
  std::string o;
  const bool probe = p.release == ReleaseStrategy::kProbe;
  if (probe) {
    // A probe measured a foreign program: no culprit, no release of ours.
    const std::string who = r.probe ? fmt::format("pid {} ({})", r.probe->pid, r.probe->comm) : "the target";
    o += fmt::format("<header>\n<h1>shootdown probe: {}</h1>\n", escape(who));
    o += fmt::format(
        "<p class=\"sub\">a probe thread on CPU {} inside the program felt its shootdowns · {} · run {}</p>\n",
        escape(format_cpulist(p.victim_cpus)), escape(r.started_at.empty() ? "time unknown" : r.started_at),
        escape(r.run_id.empty() ? "-" : r.run_id));
  } else {
    o += fmt::format("<header>\n<h1>shootdown: {} of {} ({} pages)</h1>\n", escape(strategy_name(p.release)),
                     escape(format_size(p.chunk_size)), escape(page_mode_name(p.pages)));
    o += fmt::format("<p class=\"sub\">victim CPU {} measured while culprit CPU {} released memory · {} · run {}</p>\n",
                     escape(format_cpulist(p.victim_cpus)), p.culprit_cpu,
                     escape(r.started_at.empty() ? "time unknown" : r.started_at),
                     escape(r.run_id.empty() ? "-" : r.run_id));
  }
  if (!r.complete)
    o += fmt::format("<p class=\"banner incomplete\">INCOMPLETE RESULT: {}</p>\n",
                     escape(r.incomplete_reason.empty() ? "the run did not finish" : r.incomplete_reason));
  // The verdict: the console's third line, result.json summary.lines.
  for (const std::string& line : verdict_lines(r, a)) o += "<p class=\"verdict\">" + escape(line) + "</p>\n";
  o += "<div class=\"facts-grid\">\n<table class=\"facts\"><caption>what</caption>\n";
  if (probe) {
    if (r.probe) {
      o += fact("process", fmt::format("pid {} ({}), parent {}", r.probe->pid, r.probe->comm, r.probe->ppid));
      o += fact("probe ended", std::string(probe_fate_name(r.probe->fate)));
    }
    std::string seen;
    for (const auto& x : r.probe_seen)
      seen += fmt::format("{}pid {} {} ({}, {} samples)", seen.empty() ? "" : "; ", x.pid, x.comm,
                          probe_fate_name(x.fate), x.samples);
    if (!seen.empty()) o += fact("processes seen", seen);
    o += fact("probe",
              fmt::format("{} of writes per timed sample, arena {}", format_size(p.batch), format_size(p.chunk_size)));
    if (r.measure_end_ns > r.measure_start_ns)
      o += fact("probed", dur(static_cast<double>(r.measure_end_ns - r.measure_start_ns)));
  } else {
    o += fact("release strategy", std::string(strategy_name(p.release)));
    if (is_paced(p.release) && p.pace_step > 0)
      o += fact("pace", fmt::format("madvise(MADV_DONTNEED) steps of {}, {} after each (--pace {})",
                                    format_size(p.pace_step), format_gap(p.pace_gap_ns), format_pace(p.pace())));
    // The console's lines ("allocator: ...", "memory kept: ...", "per GiB
    // released: ...") as facts.
    const std::string alloc = release_cost_lines(r, a);
    for (std::size_t at = 0; at < alloc.size();) {
      const std::size_t nl = alloc.find('\n', at);
      const std::string line = alloc.substr(at, nl - at);
      at = nl == std::string::npos ? alloc.size() : nl + 1;
      if (const std::size_t colon = line.find(": "); colon != std::string::npos)
        o += fact(line.substr(0, colon), line.substr(colon + 2));
    }
    std::string chunk = format_size(p.chunk_size);
    if (p.chunk_capped) chunk += " (capped from " + format_size(p.chunk_size_requested) + ")";
    o += fact("chunk size", chunk + " per chunk (A, and one B per victim)");
    o += fact("pages", fmt::format("{} ({} per page)", page_mode_name(p.pages), format_size(p.page_size)));
    o += fact("batch", format_size(p.batch) + " of writes per timed sample");
    o += fact("report interval", p.report_every_ns > 0 ? dur(static_cast<double>(p.report_every_ns)) + " of wall time"
                                                       : format_size(p.report_every) + " of victim writes");
    std::string trig = p.trigger == Trigger::kAfter ? "after " + dur(static_cast<double>(p.trigger_after_ns))
                                                    : std::string(trigger_name(p.trigger));
    o += fact("trigger", trig);
    if (p.repeat > 1)
      o += fact("repeat", fmt::format("{} releases every {}", p.repeat, dur(static_cast<double>(p.every_ns))));
    o += fact("releases performed", std::to_string(r.releases.size()));
    o += fact("release window", "from the call to its return + " + dur(static_cast<double>(p.settle_ns)) + " settle");
    if (r.measure_end_ns > r.measure_start_ns)
      o += fact("measured", dur(static_cast<double>(r.measure_end_ns - r.measure_start_ns)));
  }
  if (!r.command_line.empty()) o += fact("command", r.command_line);
  o += "</table>\n<table class=\"facts\"><caption>where</caption>\n";
  if (!e.hostname.empty()) o += fact("host", e.hostname);
  o += fact("kernel", e.kernel + (e.kernel_version.empty() ? "" : " " + e.kernel_version));
  o += fact("CPU", e.cpu_model.empty() ? "unknown" : e.cpu_model);
  o += fact("machine", e.virtualized
                           ? "virtual machine" + (e.hypervisor.empty() ? std::string() : " (" + e.hypervisor + ")")
                           : "bare metal");
  o += fact("CPUs", probe ? fmt::format("{} online, {} NUMA node(s); probe {}", e.online_cpus, e.numa_nodes,
                                        format_cpulist(p.victim_cpus))
                          : fmt::format("{} online, {} NUMA node(s); culprit {}, victim(s) {}", e.online_cpus,
                                        e.numa_nodes, p.culprit_cpu, format_cpulist(p.victim_cpus)));
  if (!p.cpu_choice.empty()) o += fact("CPU choice", p.cpu_choice);
  o += fact("THP", e.thp_enabled.empty() ? "unknown" : e.thp_enabled + " (defrag " + e.thp_defrag + ")");
  o += fact("TLB features", fmt::format("PCID {}, INVPCID {}", e.pcid ? "yes" : "no", e.invpcid ? "yes" : "no"));
  if (e.tsc_hz > 0)
    o += fact("clock", fmt::format("TSC {:.3f} GHz (drift {:.1f} ppm), clocksource {}", e.tsc_hz / 1e9, e.tsc_drift_ppm,
                                   e.clocksource));
  if (!e.cmdline.empty()) o += fact("kernel cmdline", e.cmdline);
  o += fact("build", e.build_type + (e.version.empty() ? "" : ", shootdown " + e.version));
  std::string ev = r.trace.status.empty() ? "off" : r.trace.status;
  if (r.trace.enabled)
    ev += fmt::format(", {} tracepoints, {} events, {} lost", r.trace.tracepoints.size(), a.event_total,
                      r.trace.lost_events);
  o += fact("kernel evidence", ev);
  o += "</table>\n</div>\n";
  std::vector<std::string> warns = e.warnings;
  warns.insert(warns.end(), r.warnings.begin(), r.warnings.end());
  for (const auto& m : r.trace.missing) warns.push_back("tracepoint missing: " + m);
  if (!warns.empty()) {
    o += "<ul class=\"warnings\">\n";
    for (const auto& w : warns) o += "<li>" + escape(w) + "</li>\n";
    o += "</ul>\n";
  }
  o += "</header>\n";
  return o;
}

// probe: who sent the shootdowns (the target's call sites, blame's report).
std::string callsites_section(const BlameReport& b) {
  std::string o = "<section id=\"callsites\">\n<h2>Who sent them</h2>\n";
  o += fmt::format(
      "<p>{} shootdowns initiated by the target's threads ({} process{}, {} flush IPIs); the "
      "call sites, as <code>shootdown blame</code> names them:</p>\n",
      b.flushes, b.processes, b.processes == 1 ? "" : "es", b.ipis);
  if (b.sites.empty()) return o + "<p>None while probed.</p>\n</section>\n";
  o += "<table class=\"callsites\"><tr><th>#</th><th>call site</th><th>cause</th><th>flushes</th><th>IPIs</th>"
       "<th>advice</th></tr>\n";
  for (std::size_t i = 0; i < b.sites.size(); ++i) {
    const CallSite& c = b.sites[i];
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{} ({:.0f} %)</td><td>{}</td><td>{}</td></tr>\n", i + 1,
                     escape(c.stack), escape(c.syscall.empty() ? "unknown" : c.syscall), c.flushes,
                     b.flushes ? 100.0 * static_cast<double>(c.flushes) / static_cast<double>(b.flushes) : 0.0, c.ipis,
                     escape(c.advice));
  }
  return o + "</table>\n</section>\n";
}

std::string compare_word(double before, double after) {
  if (before <= 0 || after <= 0) return "not comparable";
  const double f = after / before;
  if (f >= 1.5) return fmt::format("{:.1f}x higher", f);
  if (f <= 1 / 1.5) return fmt::format("{:.1f}x lower", 1 / f);
  return "about the same";
}

std::string meaning_section(const Result& r, const Analysis& a, const Attribution& at) {
  const Plan& p = r.plan;
  std::vector<std::string> s;
  if (p.release == ReleaseStrategy::kProbe) {
    s.push_back(
        fmt::format("A probe thread inside {} measured it for {}: every shootdown below was sent by the "
                    "program's own threads (their call sites: shootdown blame, or blame.json next to this "
                    "report); with no release of ours, every sample is in the baseline phase.",
                    r.probe ? fmt::format("pid {} ({})", r.probe->pid, r.probe->comm) : "the program",
                    dur(static_cast<double>(r.measure_end_ns - r.measure_start_ns))));
  } else if (r.releases.empty()) {
    s.push_back("No release was performed, so every sample is baseline.");
  } else if (r.releases.size() == 1) {
    s.push_back(fmt::format("{} of {} on CPU {} took {}.", strategy_name(p.release),
                            released_what(p.release, p.chunk_size, p.pace()), p.culprit_cpu,
                            dur(static_cast<double>(r.releases[0].duration_ns()))));
  } else {
    s.push_back(fmt::format("{} releases ({} of {} each) on CPU {} took {} at the median, {} at most.",
                            r.releases.size(), strategy_name(p.release),
                            released_what(p.release, p.chunk_size, p.pace()), p.culprit_cpu,
                            dur(a.release_duration.p50), dur(a.release_duration.max)));
  }
  for (const auto& rel : r.releases)
    if (rel.partial)
      s.push_back(fmt::format("Release {} did not finish: {}.", rel.index + 1,
                              partial_release_note(rel.bytes, released_bytes(p.release, p.chunk_size))));
  if (p.release == ReleaseStrategy::kReuse)
    s.push_back("This is the control arm (reuse): nothing is unmapped, so no TLB shootdown is expected.");
  for (const auto& va : a.victims) {
    const CpuCounters* c = counters_of(r, va.cpu);
    const VictimAttribution* va_at = attribution_of(at, va.cpu);
    std::string who = fmt::format("CPU {}", va.cpu);
    if (va_at && va_at->shootdowns_received > 0) {
      // The verdict's figure (shootdowns of this process), not every flush
      // IPI the CPU ran: flushes for other processes' memory are named apart.
      s.push_back(fmt::format(
          "{} received {} TLB shootdown IPIs of this process (kernel trace: tlb_flush reason 1 while the victim "
          "ran{}{}); each stalled the victim by ~{} (p90 {}, max {}) while the handler itself ran ~{}.",
          who, va_at->shootdowns_received,
          va_at->wrong_cpu_flushes ? fmt::format("; {} more flushed other processes' memory", va_at->wrong_cpu_flushes)
                                   : std::string(),
          c ? fmt::format("; /proc/interrupts TLB delta {}", c->tlb) : std::string(),
          dur(static_cast<double>(va_at->stall_per_shootdown.p50)),
          dur(static_cast<double>(va_at->stall_per_shootdown.p90)),
          dur(static_cast<double>(va_at->stall_per_shootdown.max)), dur(static_cast<double>(va_at->handler_ns.p50))));
    } else if (c) {
      if (c->tlb > 0)
        s.push_back(
            fmt::format("{} received {} TLB shootdown IPIs during the run (/proc/interrupts TLB row).", who, c->tlb));
      else
        s.push_back(fmt::format("{} received no TLB shootdown IPI (/proc/interrupts TLB row unchanged).", who));
    }
    const PhaseStats* base = phase_of(va, Phase::kBaseline);
    const PhaseStats* rel = phase_of(va, Phase::kRelease);
    if (base && rel && base->per_batch.count > 0 && rel->per_batch.count > 0) {
      s.push_back(
          fmt::format("On {}, p99.9 per batch was {} in the baseline and {} in the release window ({}); p50 {} → {}, "
                      "max {} → {}.",
                      who, dur(base->per_batch.p999), dur(rel->per_batch.p999),
                      compare_word(base->per_batch.p999, rel->per_batch.p999), dur(base->per_batch.p50),
                      dur(rel->per_batch.p50), dur(base->per_batch.max), dur(rel->per_batch.max)));
      if (base->per_batch.max > rel->per_batch.max * 2)
        s.push_back(
            fmt::format("The largest stall on {} ({}) happened in the baseline, with no release running: the machine "
                        "itself stalls the victim (host preemption on a VM, interrupts, SMIs), so compare the release "
                        "window against that noise, not against zero.",
                        who, dur(base->per_batch.max)));
    } else if (rel && rel->per_batch.count == 0 && !r.releases.empty()) {
      s.push_back(fmt::format("{} has no samples inside the release window (it was shorter than one batch).", who));
    }
    if (va_at) {
      const auto u = static_cast<std::size_t>(StallLabel::kUnexplained);
      if (va_at->samples[u] > 0)
        s.push_back(
            fmt::format("{} samples on {} exceeded the stall threshold ({}) with no kernel event on the CPU, {} in "
                        "total: time the vCPU did not run (host preemption) or firmware, not the kernel.",
                        va_at->samples[u], who, dur(static_cast<double>(va_at->stall_threshold_ns)),
                        dur(static_cast<double>(va_at->stall_ns[u]))));
    }
  }
  if (!at.available) {
    std::string m = evidence_missing(r);
    if (!m.empty()) m[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(m[0])));
    s.push_back(
        m + ": this page cannot tell a shootdown stall from host preemption or another interrupt; " +
        (r.trace.enabled
             ? "the report written by `shootdown run --out` itself (before any re-render) attributes every stall."
             : "run as root with --trace on to attribute every stall."));
  }
  if (r.env.virtualized)
    s.push_back(
        "This is a virtual machine: every IPI goes through the hypervisor, which makes each shootdown several times "
        "dearer than on bare metal, and the host may deschedule the vCPU at any time.");
  std::string o = "<section id=\"summary\">\n<h2>What this means</h2>\n<p class=\"meaning\">";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? " " : "") + escape(s[i]);
  o += "</p>\n</section>\n";
  return o;
}

std::string phase_table(const VictimAnalysis& va, bool per_page, const std::string& title) {
  std::string o = fmt::format("<table class=\"phases\" data-victim=\"{}\" data-unit=\"{}\"><caption>{}</caption>\n",
                              va.cpu, per_page ? "page" : "batch", escape(title));
  o += "<tr><th>phase</th><th>min</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th>"
       "<th>samples</th><th>time</th></tr>\n";
  for (const auto& ps : va.phases) {
    const Summary& s = per_page ? ps.per_page : ps.per_batch;
    o += fmt::format("<tr class=\"phase-row\" data-phase=\"{}\" data-victim=\"{}\"><th>{}</th>", to_string(ps.phase),
                     va.cpu, ps.phase == Phase::kRelease ? "release window" : to_string(ps.phase));
    if (s.count == 0) {
      o += "<td colspan=\"7\" class=\"empty\">no samples in this phase</td><td>0</td><td>-</td></tr>\n";
      continue;
    }
    for (double v : {s.min, s.mean, s.p50, s.p90, s.p99, s.p999, s.max}) o += "<td>" + num(v) + "</td>";
    o += fmt::format("<td>{}</td><td>{}</td></tr>\n", s.count, escape(dur(static_cast<double>(ps.duration_ns))));
  }
  o += "</table>\n";
  return o;
}

std::string phases_section(const Result& r, const Analysis& a) {
  std::string o = "<section id=\"phases\">\n<h2>Latency by phase</h2>\n";
  o += "<p class=\"explain\">Each sample is one timed batch of writes, back to back (no gaps). Values in ns. The "
       "release "
       "window runs from the release call to its return plus the settle time.</p>\n";
  if (a.victims.empty()) o += "<p class=\"missing\">No victim samples were recorded.</p>\n";
  for (const auto& va : a.victims) {
    o += "<div class=\"pair\">";
    o += phase_table(va, false,
                     fmt::format("victim CPU {}: ns per batch ({} pages, {})", va.cpu, va.pages_per_batch,
                                 format_size(r.plan.batch)));
    o += phase_table(va, true, fmt::format("victim CPU {}: ns per page (batch / {})", va.cpu, va.pages_per_batch));
    o += "</div>\n";
  }
  if (!r.releases.empty()) {
    o += "<table class=\"releases\"><caption>releases</caption><tr><th>#</th><th>strategy</th><th>bytes</th><th>at</th>"
         "<th>duration</th></tr>\n";
    const std::int64_t t0 = t0_of(r);
    const std::size_t shown = std::min<std::size_t>(r.releases.size(), 50);
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& rel = r.releases[i];
      o += fmt::format("<tr class=\"release-row\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       rel.index, escape(strategy_name(rel.strategy)), escape(format_size(rel.bytes)),
                       escape(dur(static_cast<double>(rel.before_ns - t0))),
                       escape(dur(static_cast<double>(rel.duration_ns()))));
    }
    if (shown < r.releases.size())
      o += fmt::format("<tr><td colspan=\"5\">… {} more (see result.json)</td></tr>\n", r.releases.size() - shown);
    o += "</table>\n";
  }
  o += "</section>\n";
  return o;
}

void add_release_overlays(svg::LineChart& c, const Result& r, std::int64_t origin,
                          const std::vector<const Release*>& rels) {
  for (const Release* rel : rels) {
    c.bands.push_back(
        {static_cast<double>(rel->before_ns - origin), static_cast<double>(rel->after_ns + r.plan.settle_ns - origin),
         "release", rel->index,
         fmt::format("release {} window: {} + {} settle", rel->index, dur(static_cast<double>(rel->duration_ns())),
                     dur(static_cast<double>(r.plan.settle_ns))),
         kColorBand, ""});
    c.markers.push_back({static_cast<double>(rel->before_ns - origin), "before", rel->index,
                         fmt::format("release {}: before {} (call)", rel->index, strategy_name(r.plan.release)),
                         kColorBefore});
    c.markers.push_back({static_cast<double>(rel->after_ns - origin), "after", rel->index,
                         fmt::format("release {}: after {} (returned, {})", rel->index, strategy_name(r.plan.release),
                                     dur(static_cast<double>(rel->duration_ns()))),
                         kColorAfter});
  }
}

const TimelineVictim* timeline_of(const Timeline& tl, int cpu) {
  for (const auto& v : tl.victims)
    if (v.cpu == cpu) return &v;
  return nullptr;
}

// A bucket series as steps: bucket k's value holds over [k, k + 1); buckets
// without a value (no sample ended there, or too few for the percentile)
// break the line instead of bridging the gap.
svg::Series bucket_series(const Timeline& tl, const std::vector<std::int64_t>& vals, const char* name,
                          const char* color, double width) {
  svg::Series s{name, color, {}, true, width, "", ""};
  const double w = static_cast<double>(tl.bucket_ns);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  bool open = false;
  for (std::size_t k = 0; k < vals.size(); ++k) {
    const double x = w * static_cast<double>(k);
    if (vals[k] < 0) {
      if (open) s.points.push_back({x, nan});
      open = false;
      continue;
    }
    s.points.push_back({x, static_cast<double>(vals[k])});
    open = true;
  }
  if (open) s.points.push_back({w * static_cast<double>(vals.size()), s.points.back().y});
  return s;
}

std::string timeline_coverage(const Timeline& tl, const TimelineVictim& tv) {
  if (tv.latency_from_intervals)
    return fmt::format("from the {} report intervals in result.json (raw samples kept only around releases)",
                       tv.intervals_used);
  if (tl.partial)
    return fmt::format("only the {} raw samples kept around the releases (result.json): elsewhere no data",
                       tv.sample_count);
  return {};
}

std::string timeseries_section(const Result& r, const Analysis& a, const Timeline& tl) {
  std::string o = "<section id=\"timeseries\">\n<h2>1 · Latency over time</h2>\n";
  o += fmt::format(
      "<p class=\"explain\">p50, p90, p99 and max per batch of the samples ending in each {} time bucket ({} "
      "buckets over {}; p90 needs 10 and p99 100 samples in a bucket), with the release call (before) and its return "
      "(after) as vertical lines and the release window shaded.</p>\n",
      escape(dur(static_cast<double>(tl.bucket_ns))), tl.buckets, escape(dur(static_cast<double>(tl.span_ns))));
  if (std::any_of(tl.victims.begin(), tl.victims.end(),
                  [](const TimelineVictim& v) { return v.latency_from_intervals; }))
    o += "<p class=\"explain\">Re-rendered from result.json, which keeps every report interval but the raw samples "
         "only around the releases: these charts are drawn from the intervals, a bucket showing the highest "
         "p50/p90/p99/max of the intervals that overlap it.</p>\n";
  std::vector<const Release*> rels;
  for (const auto& rel : r.releases) rels.push_back(&rel);
  for (const auto& va : a.victims) {
    const TimelineVictim* tv = timeline_of(tl, va.cpu);
    svg::Series s50{"p50", kColorP50, {}, true, 1.5, "", ""};
    svg::Series s90{"p90", kColorP90, {}, true, 1.5, "", ""};
    svg::Series s99{"p99", kColorP99, {}, true, 1.5, "", ""};
    svg::Series smax{"max", kColorMax, {}, true, 1.2, "", ""};
    if (tv) {
      s50 = bucket_series(tl, tv->p50_ns, "p50", kColorP50, 1.5);
      s90 = bucket_series(tl, tv->p90_ns, "p90", kColorP90, 1.5);
      s99 = bucket_series(tl, tv->p99_ns, "p99", kColorP99, 1.5);
      smax = bucket_series(tl, tv->max_ns, "max", kColorMax, 1.2);
    }
    const std::string id = fmt::format("log-cpu{}", va.cpu);
    o += fmt::format(
        "<div class=\"chart-box scale-toggle\"><input type=\"checkbox\" class=\"logtoggle noprint\" id=\"{}\" "
        "checked><label class=\"noprint\" for=\"{}\">log scale</label>\n",
        id, id);
    for (svg::Scale sc : {svg::Scale::kLog, svg::Scale::kLinear}) {
      svg::LineChart c;
      c.id = "timeseries";
      c.title = fmt::format("victim CPU {}: latency per batch, per {} bucket ({} scale)", va.cpu,
                            dur(static_cast<double>(tl.bucket_ns)), sc == svg::Scale::kLog ? "log" : "linear");
      c.x = {"time since the victims started", svg::Scale::kLinear, svg::Format::kDuration, 0.0,
             static_cast<double>(tl.bucket_ns) * static_cast<double>(tl.buckets)};
      c.y = {"latency per batch", sc, svg::Format::kDuration, std::nullopt, std::nullopt};
      c.series = {s50, s90, s99, smax};
      add_release_overlays(c, r, tl.origin_ns, rels);
      if (s50.points.empty()) c.notes.push_back("no samples recorded for this victim");
      if (tv && !timeline_coverage(tl, *tv).empty()) c.notes.push_back(timeline_coverage(tl, *tv));
      if (rels.empty()) c.notes.push_back("no release was performed");
      c.attrs = {{"victim", std::to_string(va.cpu)},
                 {"releases", std::to_string(rels.size())},
                 {"bucket-ns", std::to_string(tl.bucket_ns)},
                 {"buckets", std::to_string(tl.buckets)},
                 {"source", tv && tv->latency_from_intervals ? "intervals" : "samples"}};
      o += fmt::format("<div class=\"{}\">", sc == svg::Scale::kLog ? "scale-log" : "scale-lin");
      o += svg::render(c);
      o += "</div>\n";
    }
    o += "</div>\n";
  }
  o += "</section>\n";
  return o;
}

// Stack order, bottom up: the kernel's interrupts first (the shootdowns at
// the base, where a storm shows however much else stalled), then stalls the
// kernel did not cause.
constexpr StallLabel kStackOrder[] = {StallLabel::kTlbShootdown, StallLabel::kOtherIpi, StallLabel::kResched,
                                      StallLabel::kIrq,          StallLabel::kTimer,    StallLabel::kPreempted,
                                      StallLabel::kUnexplained};

// A victim's stall per bucket, summed over the causes drawn: all, the
// kernel-caused ones, other IPIs, TLB shootdowns.
struct StallTotals {
  std::vector<double> tlb, ipi, kernel, total;
  explicit StallTotals(std::size_t buckets)
      : tlb(buckets, 0.0), ipi(buckets, 0.0), kernel(buckets, 0.0), total(buckets, 0.0) {}
};

// One layer per cause, in kStackOrder.
void stack_stall_by_cause(const TimelineVictim& tv, const Timeline& tl, svg::LineChart& c, StallTotals& s) {
  for (StallLabel l : kStackOrder) {
    const auto li = static_cast<std::size_t>(l);
    const CauseStyle cs = cause_style(label_name(l));
    // The IPIs in full color, the rest as a pale background, so a red
    // shootdown layer stands out of noise that may be far larger.
    const bool ipi_layer = l == StallLabel::kTlbShootdown || l == StallLabel::kOtherIpi;
    svg::StackLayer layer{cs.kind, cs.kind, cs.color, {}, ipi_layer ? 1.0 : 0.3};
    layer.y.reserve(tl.buckets);
    for (std::size_t k = 0; k < tl.buckets && k < tv.stall_ns[li].size(); ++k) {
      const auto v = static_cast<double>(tv.stall_ns[li][k]);
      layer.y.push_back(v);
      s.total[k] += v;
      if (l != StallLabel::kPreempted && l != StallLabel::kUnexplained) s.kernel[k] += v;
      if (l == StallLabel::kOtherIpi) s.ipi[k] += v;
      if (l == StallLabel::kTlbShootdown) s.tlb[k] += v;
    }
    c.stack.layers.push_back(std::move(layer));
  }
}

// Without attribution: one grey layer of the stalls above the threshold.
void stack_unattributed_stall(const Result& r, const TimelineVictim& tv, const Timeline& tl, svg::LineChart& c,
                              StallTotals& s) {
  svg::StackLayer layer{"unattributed", "unattributed (above threshold)", "#868e96", {}};
  for (std::size_t k = 0; k < tl.buckets && k < tv.unattributed_ns.size(); ++k) {
    layer.y.push_back(static_cast<double>(tv.unattributed_ns[k]));
    s.total[k] += layer.y.back();
  }
  c.stack.layers.push_back(std::move(layer));
  c.notes.push_back(evidence_missing(r) + ": stalls above the threshold (" + dur(static_cast<double>(tv.threshold_ns)) +
                    ") cannot be split by cause");
}

double highest(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// Preemption (another task, or the host descheduling the vCPU: both can
// also stretch a sample that holds a timer tick) can take a whole
// bucket, hiding 30 us shootdowns on a linear axis. When it towers over
// the shootdowns, the chart is drawn twice: by default with the axis cut
// at 2 x the highest tlb-shootdown bucket (none: 1.5 x the highest
// other-ipi one, else 1.3 x the highest kernel-caused one), the towers
// marked at the top, and at full scale behind a checkbox. Returns the cut,
// none when the chart is drawn once.
std::optional<double> stall_zoom_cut(const StallTotals& s) {
  const double full = highest(s.total);
  const double kmax = highest(s.kernel);
  const double smax = highest(s.tlb);
  const double imax = highest(s.ipi);
  if (full <= 0) return std::nullopt;
  double focus = smax > 0 ? 2 * smax : imax > 0 ? 1.5 * imax : 1.3 * kmax;
  if (focus <= 0) {  // no kernel-caused stall: the 99th percentile of the non-empty buckets
    std::vector<double> nz;
    for (double v : s.total)
      if (v > 0) nz.push_back(v);
    focus = nearest_rank_select(nz, 99);
  }
  if (focus > 0 && focus < full / 1.5) return svg::nice_range(0, focus, svg::Scale::kLinear).second;
  return std::nullopt;
}

// Shade where there are no samples (outside the kept raw windows).
void shade_buckets_without_samples(const Timeline& tl, const TimelineVictim* tv, svg::LineChart& c) {
  std::size_t k = 0;
  int idx = 0;
  while (tv && k < tl.buckets) {
    if (k >= tv->samples.size() || tv->samples[k] > 0) {
      ++k;
      continue;
    }
    std::size_t e = k;
    while (e + 1 < tl.buckets && tv->samples[e + 1] == 0) ++e;
    c.bands.push_back({static_cast<double>(k) * c.stack.dx, static_cast<double>(e + 1) * c.stack.dx, "no-data", idx++,
                       "no samples kept here", "#e9ecef", "no data"});
    k = e + 1;
  }
  c.notes.push_back(fmt::format("covers only the {} of samples kept around the releases (result.json); grey: no data",
                                dur(static_cast<double>(tv ? tv->covered_ns : 0))));
}

// The chart at full scale, or (with a cut) zoomed to the shootdowns with
// the full scale behind a checkbox.
std::string zoomable_stall_chart(svg::LineChart c, std::optional<double> cut, const StallTotals& s, int cpu) {
  if (!cut) {
    c.attrs.emplace_back("zoom", "full");
    return "<div class=\"chart-box\">" + svg::render(c) + "</div>\n";
  }
  std::size_t over = 0;
  for (double v : s.total) over += v > *cut;
  svg::LineChart zoomed = c;
  zoomed.y.max = *cut;
  zoomed.title += " (zoomed)";
  zoomed.notes.insert(zoomed.notes.begin(),
                      fmt::format("axis cut at {} to show the shootdowns: {} bucket(s) reach up to {} (▲)", dur(*cut),
                                  over, dur(highest(s.total))));
  zoomed.attrs.emplace_back("zoom", "kernel");
  c.attrs.emplace_back("zoom", "full");
  const std::string id = fmt::format("zoom-cpu{}", cpu);
  std::string o = fmt::format(
      "<div class=\"chart-box zoom-toggle\"><input type=\"checkbox\" class=\"zoomtoggle noprint\" id=\"{}\" "
      "checked><label class=\"noprint\" for=\"{}\">zoom to the shootdowns</label>\n",
      id, id);
  o += "<div class=\"zoom-kernel\">" + svg::render(zoomed) + "</div>\n";
  o += "<div class=\"zoom-full\">" + svg::render(c) + "</div>\n</div>\n";
  return o;
}

std::string stall_timeline_chart(const Result& r, const Attribution& at, const Timeline& tl,
                                 const std::vector<const Release*>& rels, const VictimAnalysis& va) {
  const TimelineVictim* tv = timeline_of(tl, va.cpu);
  const bool attributed = tv && tv->attributed && attribution_of(at, va.cpu) != nullptr;
  svg::LineChart c;
  c.id = "stall-timeline";
  c.height = 340;
  c.title = fmt::format("victim CPU {}: stall time lost per {} bucket, by cause", va.cpu,
                        dur(static_cast<double>(tl.bucket_ns)));
  c.x = {"time since the victims started", svg::Scale::kLinear, svg::Format::kDuration, 0.0,
         static_cast<double>(tl.bucket_ns) * static_cast<double>(tl.buckets)};
  c.y = {"stall per bucket", svg::Scale::kLinear, svg::Format::kDuration, 0.0, std::nullopt};
  c.stack.x0 = 0;
  c.stack.dx = static_cast<double>(tl.bucket_ns);
  StallTotals s(tl.buckets);
  if (tv && attributed)
    stack_stall_by_cause(*tv, tl, c, s);
  else if (tv)
    stack_unattributed_stall(r, *tv, tl, c, s);
  const std::optional<double> cut = stall_zoom_cut(s);
  add_release_overlays(c, r, tl.origin_ns, rels);
  if (tl.partial) shade_buckets_without_samples(tl, tv, c);
  if (!tv || tl.buckets == 0) c.notes.push_back("no samples recorded for this victim");
  if (rels.empty()) c.notes.push_back("no release was performed");
  c.attrs = {{"victim", std::to_string(va.cpu)},          {"releases", std::to_string(rels.size())},
             {"bucket-ns", std::to_string(tl.bucket_ns)}, {"buckets", std::to_string(tl.buckets)},
             {"attributed", attributed ? "yes" : "no"},   {"coverage", tl.partial ? "raw-windows" : "all-samples"}};
  return zoomable_stall_chart(std::move(c), cut, s, va.cpu);
}

std::string stall_timeline_section(const Result& r, const Analysis& a, const Attribution& at, const Timeline& tl) {
  std::string o = "<section id=\"stall-timeline\">\n<h2>2 · Stall time over time, by cause</h2>\n";
  o += fmt::format(
      "<p class=\"explain\">Time the victim lost in each {} bucket, stacked by the cause the kernel trace found "
      "inside the sample (TLB shootdowns at the bottom): each sample's latency above the baseline median, spread "
      "over the buckets its span covers. A shootdown storm is the dark red layer inside the shaded release window. "
      "Jitter of clean samples is left out.</p>\n",
      escape(dur(static_cast<double>(tl.bucket_ns))));
  std::vector<const Release*> rels;
  for (const auto& rel : r.releases) rels.push_back(&rel);
  for (const auto& va : a.victims) o += stall_timeline_chart(r, at, tl, rels, va);
  o += "</section>\n";
  return o;
}

std::string raw_section(const Result& r, const Analysis& a, const Attribution& at,
                        const std::map<int, std::vector<EventMark>>& ticks) {
  std::string o = "<section id=\"raw\">\n<h2>3 · Raw samples around each release</h2>\n";
  o += fmt::format(
      "<p class=\"explain\">Every batch sample from {} before the release call to {} after the window, drawn "
      "as steps (each sample spans its own time; the highest sample of each pixel column is always kept). "
      "Ticks below the plot are kernel events on the victim CPU, by type: a stall with a tick under it was "
      "caused by that interrupt. The last two rows mark stalls the kernel's interrupts did not cause: "
      "another task ran on the CPU (other task), or nothing traceable ran at all (no event: on a VM, the host "
      "descheduled the vCPU).</p>\n",
      escape(dur(static_cast<double>(kRawWindowPadNs))), escape(dur(static_cast<double>(kRawWindowPadNs))));
  const std::string missing = evidence_missing(r);
  for (const auto& va : a.victims) {
    const VictimSamples* v = samples_of(r, va.cpu);
    const std::size_t n_rel = r.releases.size();
    const std::size_t shown = std::min<std::size_t>(n_rel, kHtmlMaxReleaseCharts);
    if (n_rel == 0)
      o += fmt::format("<p class=\"missing\">victim CPU {}: no release, no window to show.</p>\n", va.cpu);
    for (std::size_t k = 0; k < shown; ++k) {
      const Release& rel = r.releases[k];
      const std::int64_t from = rel.before_ns - kRawWindowPadNs;
      const std::int64_t to = rel.after_ns + r.plan.settle_ns + kRawWindowPadNs;
      const std::int64_t origin = rel.before_ns;
      svg::LineChart c;
      c.id = "raw";
      c.height = 390;
      c.title = fmt::format("victim CPU {}: samples around release {} ({} took {})", va.cpu, rel.index,
                            strategy_name(r.plan.release), dur(static_cast<double>(rel.duration_ns())));
      c.x = {"time from the release call", svg::Scale::kLinear, svg::Format::kDuration,
             static_cast<double>(from - origin), static_cast<double>(to - origin)};
      c.y = {"latency per batch", svg::Scale::kLog, svg::Format::kDuration, std::nullopt, std::nullopt};
      svg::Series s{"latency", kColorLatency, {}, true, 1.0, "", ""};
      if (v) {
        auto lo = std::lower_bound(v->end_ns.begin(), v->end_ns.end(), from);
        auto hi = std::upper_bound(lo, v->end_ns.end(), to);
        if (hi != v->end_ns.end()) ++hi;  // the sample that straddles the end (a long stall) is in the window too
        const auto i0 = static_cast<std::size_t>(lo - v->end_ns.begin());
        const auto i1 = static_cast<std::size_t>(hi - v->end_ns.begin());
        s.points.reserve(i1 - i0 + 1);
        for (std::size_t i = i0; i < i1; ++i)
          s.points.push_back(
              {static_cast<double>(std::max(from, v->span_start(i)) - origin), static_cast<double>(v->lat_ns[i])});
        if (i1 > i0)
          s.points.push_back({static_cast<double>(std::min(to, v->end_ns[i1 - 1]) - origin), s.points.back().y});
      }
      if (s.points.empty()) c.notes.push_back("no raw samples kept for this window");
      c.series.push_back(std::move(s));
      add_release_overlays(c, r, origin, {&rel});
      if (!missing.empty()) {
        c.notes.push_back(missing + ": interrupts cannot be shown");
      } else {
        std::vector<svg::EventTicks> rows;
        for (int i = 0; i < 5; ++i) rows.push_back({kCauses[i].kind, kCauses[i].text, kCauses[i].color, {}});
        if (auto it = ticks.find(va.cpu); it != ticks.end()) {
          auto lo = std::lower_bound(it->second.begin(), it->second.end(), from,
                                     [](const EventMark& t, std::int64_t x) { return t.t < x; });
          for (; lo != it->second.end() && lo->t <= to; ++lo)
            rows[static_cast<std::size_t>(lo->cause)].x.push_back(static_cast<double>(lo->t - origin));
        }
        // Stalls the kernel did not cause, from the attribution's sample
        // labels: another task ran on the CPU, or nothing ran (the vCPU was
        // descheduled by the host, or firmware).
        const VictimAttribution* v_at = attribution_of(at, va.cpu);
        if (v && v_at && v_at->labels.size() == v->size()) {
          for (const char* kind : {"preempted", "unexplained"}) {
            const CauseStyle cs = cause_style(kind);
            svg::EventTicks row{
                cs.kind, kind == std::string_view("preempted") ? "other task" : "no event", cs.color, {}};
            auto lo = std::lower_bound(v->end_ns.begin(), v->end_ns.end(), from);
            for (auto i = static_cast<std::size_t>(lo - v->end_ns.begin()); i < v->size() && v->span_start(i) <= to;
                 ++i)
              if (std::string_view(label_name(static_cast<StallLabel>(v_at->labels[i]))) == kind)
                row.x.push_back(static_cast<double>(std::max(from, v->span_start(i)) - origin));
            rows.push_back(std::move(row));
          }
        }
        c.ticks = std::move(rows);
        if (!r.trace.missing.empty())
          c.notes.push_back(fmt::format("{} tracepoint(s) missing: some ticks may be absent", r.trace.missing.size()));
      }
      c.attrs = {{"victim", std::to_string(va.cpu)}, {"release", std::to_string(rel.index)}};
      o += "<div class=\"chart-box\">" + svg::render(c) + "</div>\n";
    }
    if (shown < n_rel)
      o += fmt::format(
          "<p class=\"explain\">victim CPU {}: showing the first {} of {} releases (all are in chart 1 and "
          "result.json).</p>\n",
          va.cpu, shown, n_rel);
  }
  o += "</section>\n";
  return o;
}

std::string distribution_section(const Analysis& a) {
  std::string o = "<section id=\"distribution\">\n<h2>4 · Latency distribution by phase</h2>\n";
  o += "<p class=\"explain\">Latency per batch at each percentile, on the HdrHistogram axis (each step right is ten "
       "times "
       "rarer: 90%, 99%, 99.9% …). Curves that split only at the right are rare stalls; a curve shifted everywhere is "
       "slower work.</p>\n";
  for (const auto& va : a.victims) {
    const bool from_samples = !va.phase_histograms.empty();
    svg::LineChart c;
    c.id = "distribution";
    c.title = fmt::format("victim CPU {}: latency per batch by percentile", va.cpu);
    c.x = {"percentile", svg::Scale::kLinear, svg::Format::kPercentile, 0.0, std::nullopt};
    c.y = {"latency per batch", svg::Scale::kLog, svg::Format::kDuration, std::nullopt, std::nullopt};
    const std::vector<hdr::Histogram>& hist = va.phase_histograms;
    if (!from_samples) {
      c.notes.push_back("coarse: drawn from the phase table's percentiles (raw samples not available)");
    }
    double max_x = 1;
    for (const auto& ps : va.phases) {
      const auto idx = static_cast<std::size_t>(ps.phase);
      const char* color = ps.phase == Phase::kBaseline  ? kColorBaseline
                          : ps.phase == Phase::kRelease ? kColorRelease
                                                        : kColorAfterPhase;
      std::string name = ps.phase == Phase::kRelease ? "release" : to_string(ps.phase);
      if (ps.per_batch.count == 0) {
        c.notes.push_back(fmt::format("{}: no samples in this phase", name == "release" ? "release window" : name));
        continue;
      }
      svg::Series s{
          name, color, {}, false, ps.phase == Phase::kAfter ? 1.2 : 1.8, ps.phase == Phase::kAfter ? "5 3" : "", ""};
      if (from_samples) {
        s.points = svg::percentile_curve(hist[idx]);
      } else {
        const Summary& m = ps.per_batch;
        s.points = svg::percentile_curve(
            {{0, m.min}, {50, m.p50}, {90, m.p90}, {99, m.p99}, {99.9, m.p999}, {100, m.max}}, m.count);
      }
      s.legend = fmt::format("{} (n={})", name, ps.per_batch.count);
      max_x = std::max(max_x, std::log10(static_cast<double>(std::max<std::int64_t>(2, ps.per_batch.count))));
      c.series.push_back(std::move(s));
    }
    c.x.max = std::min(7.0, std::ceil(max_x - 1e-9));
    c.attrs = {{"victim", std::to_string(va.cpu)}};
    o += "<div class=\"chart-box\">" + svg::render(c) + "</div>\n";
  }
  o += "</section>\n";
  return o;
}

std::string stalls_section(const Result& r, const Analysis& a, const Attribution& at) {
  std::string o = "<section id=\"stalls\">\n<h2>5 · Stall time by cause</h2>\n";
  o += "<p class=\"explain\">Time the victim lost, per cause: for each sample, its latency above the baseline median, "
       "summed by the kernel event found inside the sample (attribution rules: docs/kernel-evidence.md).</p>\n";
  for (const auto& va : a.victims) {
    svg::BarChart c;
    c.id = "stalls";
    c.title = fmt::format("victim CPU {}: stall time by cause", va.cpu);
    c.attrs = {{"victim", std::to_string(va.cpu)}};
    const VictimAttribution* v_at = attribution_of(at, va.cpu);
    if (v_at) {
      std::vector<std::size_t> order;  // the causes in kCauses order, then any newer label
      for (const auto& cs : kCauses)
        for (std::size_t l = 0; l < v_at->stall_ns.size(); ++l)
          if (std::string_view(label_name(static_cast<StallLabel>(l))) == cs.kind) order.push_back(l);
      for (std::size_t l = 0; l < v_at->stall_ns.size(); ++l)
        if (l != static_cast<std::size_t>(StallLabel::kClean) &&
            std::find(order.begin(), order.end(), l) == order.end())
          order.push_back(l);
      for (std::size_t l : order) {
        const CauseStyle cs = cause_style(label_name(static_cast<StallLabel>(l)));
        c.bars.push_back({cs.text, cs.kind, static_cast<double>(v_at->stall_ns[l]), cs.color,
                          fmt::format("· {} samples", v_at->samples[l])});
      }
      const auto cl = static_cast<std::size_t>(StallLabel::kClean);
      c.notes.push_back(
          fmt::format("threshold {} (stalls below it with no event are jitter: {} over {} clean samples, not shown)",
                      dur(static_cast<double>(v_at->stall_threshold_ns)), dur(static_cast<double>(v_at->stall_ns[cl])),
                      v_at->samples[cl]));
      if (!at.note.empty()) c.notes.push_back(at.note);
    } else {
      // No kernel evidence: only the total above the threshold can be said.
      const VictimSamples* v = samples_of(r, va.cpu);
      const PhaseStats* base = phase_of(va, Phase::kBaseline);
      const double median = base && base->per_batch.count ? base->per_batch.p50 : 0;
      const double thr =
          r.plan.stall_threshold_ns > 0 ? static_cast<double>(r.plan.stall_threshold_ns) : r.plan.stall_factor * median;
      double total = 0;
      std::int64_t n = 0;
      if (v && thr > 0)
        for (std::int64_t l : v->lat_ns)
          if (static_cast<double>(l) > thr) {
            total += static_cast<double>(l) - median;
            ++n;
          }
      c.bars.push_back(
          {"unattributed (above threshold)", "unattributed", total, "#868e96", fmt::format("· {} samples", n)});
      c.notes.push_back(evidence_missing(r) + ": stalls cannot be attributed to a cause");
      if (v && static_cast<std::int64_t>(v->size()) != va.samples)
        c.notes.push_back(fmt::format("counted over the {} raw samples kept around the releases only", v->size()));
      c.notes.push_back(fmt::format("threshold {} = {} x baseline median", dur(thr), r.plan.stall_factor));
    }
    o += "<div class=\"chart-box\">" + svg::render(c) + "</div>\n";
    if (v_at) {
      o += fmt::format(
          "<table class=\"attribution\" data-victim=\"{}\"><caption>victim CPU {}: shootdown IPIs</caption>\n", va.cpu,
          va.cpu);
      o += "<tr><th></th><th>count</th><th>p50</th><th>p90</th><th>max</th><th>total</th></tr>\n";
      auto row = [&](const char* name, const Quantiles& q) {
        o += fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", name, q.count,
                         escape(dur(static_cast<double>(q.p50))), escape(dur(static_cast<double>(q.p90))),
                         escape(dur(static_cast<double>(q.max))),
                         q.total < 0 ? std::string("-") : escape(dur(static_cast<double>(q.total))));
      };
      row("victim stall per shootdown IPI", v_at->stall_per_shootdown);
      row("shootdown IPI handler", v_at->handler_ns);
      row("other IPI handler", v_at->other_handler_ns);
      row("IPI delivery (send → entry)", v_at->delivery_ns);
      o += "</table>\n";
      o += fmt::format(
          "<p class=\"explain\">shootdowns received (kernel count) {}, matched to a victim sample {} (recall "
          "{:.1f}%), of which above the stall threshold {}.",
          v_at->shootdowns_received, v_at->shootdowns_matched, v_at->recall * 100, v_at->shootdowns_stalled);
      if (!v_at->ipi_functions.empty()) {
        o += " IPI functions:";
        for (const auto& [f, n] : v_at->ipi_functions) o += fmt::format(" {} ×{}", escape(f), n);
        o += ".";
      }
      o += "</p>\n";
    }
  }
  o += "</section>\n";
  return o;
}

std::string counters_section(const Result& r) {
  std::string o = "<section id=\"counters\">\n<h2>Interrupt counters</h2>\n";
  if (r.counters.empty()) {
    o += "<p class=\"missing\">No /proc/interrupts snapshots were taken.</p>\n</section>\n";
    return o;
  }
  o += fmt::format("<table class=\"counters\"><caption>/proc/interrupts deltas over {}</caption>\n",
                   escape(dur(static_cast<double>(r.interrupts_span_ns))));
  o += "<tr><th>CPU</th><th>role</th><th title=\"TLB shootdowns\">TLB</th><th title=\"function call "
       "interrupts\">CAL</th>"
       "<th title=\"local timer interrupts\">LOC</th><th title=\"rescheduling interrupts\">RES</th></tr>\n";
  for (const auto& c : r.counters) {
    if (c.role == CpuRole::kOther && c.tlb == 0 && c.cal == 0) continue;
    o += fmt::format(
        "<tr class=\"counter-row\" data-cpu=\"{}\" data-role=\"{}\"><th>cpu{}</th><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        c.cpu, to_string(c.role), c.cpu, to_string(c.role), c.tlb, c.cal, c.loc, c.res);
  }
  o += "</table>\n</section>\n";
  return o;
}

std::string backtraces_section(const Result& r) {
  std::string o = "<section id=\"backtraces\">\n<h2>Kernel backtraces</h2>\n";
  if (r.trace.callchains.empty()) {
    o += fmt::format("<p class=\"missing\">No kernel callchains were recorded ({}).</p>\n</section>\n",
                     escape(have_events(r) ? "the tracer sampled none" : evidence_missing(r)));
    return o;
  }
  // Identical stacks merged, most frequent first.
  struct Stack {
    std::int64_t count = 0;
    std::set<std::string> events;
  };
  std::map<std::vector<std::string>, Stack> stacks;
  std::vector<std::int64_t> refs(r.trace.callchains.size(), 0);
  std::vector<std::set<std::string>> ev(r.trace.callchains.size());
  for (const auto& e : r.trace.events)
    if (e.callchain >= 0 && static_cast<std::size_t>(e.callchain) < refs.size()) {
      ++refs[static_cast<std::size_t>(e.callchain)];
      ev[static_cast<std::size_t>(e.callchain)].insert(event_type_name(e.type));
    }
  for (std::size_t i = 0; i < r.trace.callchains.size(); ++i) {
    const auto& cc = r.trace.callchains[i];
    std::vector<std::string> frames = cc.symbols;
    if (frames.size() < cc.ips.size())
      for (std::size_t k = frames.size(); k < cc.ips.size(); ++k) frames.push_back(fmt::format("0x{:x}", cc.ips[k]));
    auto& s = stacks[frames];
    s.count += std::max<std::int64_t>(1, refs[i]);
    s.events.insert(ev[i].begin(), ev[i].end());
  }
  std::vector<std::pair<std::vector<std::string>, Stack>> sorted(stacks.begin(), stacks.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.second.count > y.second.count; });
  const std::size_t shown = std::min<std::size_t>(sorted.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& [frames, s] = sorted[i];
    std::string evs;
    for (const auto& e : s.events) evs += (evs.empty() ? "" : ", ") + e;
    o += fmt::format("<div class=\"stack\"><p><b>{} ×</b> {}</p><pre>", s.count, escape(evs.empty() ? "event" : evs));
    const std::size_t nf = std::min<std::size_t>(frames.size(), 24);
    for (std::size_t k = 0; k < nf; ++k) o += escape(frames[k]) + "\n";
    if (nf < frames.size()) o += fmt::format("… {} more frames\n", frames.size() - nf);
    o += "</pre></div>\n";
  }
  if (shown < sorted.size())
    o += fmt::format("<p class=\"explain\">{} less frequent stacks not shown.</p>\n", sorted.size() - shown);
  o += "</section>\n";
  return o;
}

constexpr const char* kCss = R"CSS(
:root{--fg:#212529;--muted:#6c757d;--line:#dee2e6}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);margin:0 auto;max-width:1000px;padding:16px}
h1{font-size:22px;margin:0 0 4px}.verdict{font-size:16px;font-weight:600;margin:6px 0;padding:6px 10px;border-left:4px solid #c0392b;background:#fdf2f0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:3px}
.sub,.explain{color:var(--muted)}.explain{font-size:13px}
.banner{background:#ffe3e3;border:1px solid #c92a2a;padding:6px 10px;font-weight:bold}
.facts-grid{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:2px 0}
th,td{border-bottom:1px solid var(--line);padding:2px 8px;text-align:right}
table.facts th,table.facts td{text-align:left;vertical-align:top}table.facts{flex:1 1 460px}
table.facts td{word-break:break-word}
td.empty{color:var(--muted);text-align:center}
.pair{display:flex;flex-wrap:wrap;gap:24px}
.warnings{background:#fff9db;border:1px solid #f59f00;padding:6px 10px 6px 28px;margin:8px 0}
.meaning{font-size:15px}
.missing{color:#b00020}
pre{background:#f8f9fa;border:1px solid var(--line);padding:6px;font-size:12px;overflow-x:auto}
.chart-box{margin:8px 0 16px;page-break-inside:avoid;break-inside:avoid}
svg.chart{max-width:100%;height:auto;display:block}
svg.chart text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:#343a40}
svg.chart .caption{font-size:13px;font-weight:600}
svg.chart .frame{fill:none;stroke:#adb5bd}
svg.chart .grid line{stroke:#e9ecef}
svg.chart .band{opacity:.45}
svg.chart .marker{stroke-width:1.5;stroke-dasharray:5 3}
svg.chart .ticks{stroke-width:1.5}
svg.chart .note{fill:#b00020;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg.chart .cursor{stroke:#495057;stroke-dasharray:2 2}
svg.chart .readout{font-weight:600}
.scale-toggle label{font-size:12px;color:var(--muted);margin-left:4px}
.logtoggle:checked~.scale-lin{display:none}
.logtoggle:not(:checked)~.scale-log{display:none}
.zoom-toggle label{font-size:12px;color:var(--muted);margin-left:4px}
.zoomtoggle:checked~.zoom-full{display:none}
.zoomtoggle:not(:checked)~.zoom-kernel{display:none}
footer{margin-top:32px;color:var(--muted);font-size:12px}
@media print{body{max-width:none;padding:0;font-size:10pt}.noprint{display:none}h2{break-after:avoid}section{break-inside:auto}}
)CSS";

// Hover: shows the x and y value under the cursor in the axis units. The
// plot's mapping comes from the data-* attributes svg_chart writes.
constexpr const char* kJs = R"JS(
(function(){
function fmt(v,k){
  if(k==='duration'){var a=Math.abs(v);
    if(a<1e3)return v.toFixed(0)+' ns';if(a<1e6)return (v/1e3).toPrecision(3)+' \u00b5s';
    if(a<1e9)return (v/1e6).toPrecision(3)+' ms';return (v/1e9).toPrecision(3)+' s';}
  if(k==='percentile'){var p=100*(1-Math.pow(10,-v));return p.toFixed(Math.max(0,Math.ceil(v)-1))+'%';}
  return v.toPrecision(3);}
function inv(f,lo,hi,s){if(s==='log'){var a=Math.log10(lo),b=Math.log10(hi);return Math.pow(10,a+f*(b-a));}return lo+f*(hi-lo);}
document.querySelectorAll('svg.chart g.plot').forEach(function(g){
  var svg=g.ownerSVGElement,d=g.dataset,cur=g.querySelector('.cursor'),ro=g.querySelector('.readout');
  if(!svg||!cur||!ro)return;
  var l=+d.l,r=+d.r,t=+d.t,b=+d.b;
  function hide(){cur.setAttribute('visibility','hidden');ro.setAttribute('visibility','hidden');}
  svg.addEventListener('mouseleave',hide);
  svg.addEventListener('mousemove',function(e){
    var m=svg.getScreenCTM();if(!m)return;var p=svg.createSVGPoint();p.x=e.clientX;p.y=e.clientY;p=p.matrixTransform(m.inverse());
    if(p.x<l||p.x>r||p.y<t||p.y>b){hide();return;}
    var x=inv((p.x-l)/(r-l),+d.xmin,+d.xmax,d.xscale),y=inv((b-p.y)/(b-t),+d.ymin,+d.ymax,d.yscale);
    cur.setAttribute('x1',p.x);cur.setAttribute('x2',p.x);cur.setAttribute('y1',t);cur.setAttribute('y2',b);
    ro.textContent=fmt(x,d.xfmt)+'  \u2192  '+fmt(y,d.yfmt);
    ro.setAttribute('x',Math.min(p.x+6,r-150));ro.setAttribute('y',Math.max(p.y-6,t+12));
    cur.setAttribute('visibility','visible');ro.setAttribute('visibility','visible');});
});})();
)JS";

}  // namespace

std::string html_report(const Result& r, const Analysis& a, const Timeline& tl) {
  Attribution storage;
  const Attribution& at = attribution_for(r, a, storage);

  const auto& ticks = a.marks;

  std::string o;
  o.reserve(1 << 20);
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  // No favicon request: the page must never touch the network or the disk.
  o += "<link rel=\"icon\" href=\"data:,\">\n";
  if (r.plan.release == ReleaseStrategy::kProbe)
    o += fmt::format("<title>shootdown probe: {} · {}</title>\n",
                     escape(r.probe ? fmt::format("pid {} ({})", r.probe->pid, r.probe->comm) : "a program"),
                     escape(r.started_at));
  else
    o += fmt::format("<title>shootdown report: {} of {} · {}</title>\n", escape(strategy_name(r.plan.release)),
                     escape(released_what(r.plan.release, r.plan.chunk_size)), escape(r.started_at));
  o += "<style>" + std::string(kCss) + "</style>\n</head>\n";
  o += fmt::format("<body data-releases=\"{}\" data-victims=\"{}\" data-kernel-evidence=\"{}\">\n", r.releases.size(),
                   a.victims.size(), at.available ? "yes" : "no");
  o += header_section(r, a);
  o += meaning_section(r, a, at);
  if (r.probe_callsites) o += callsites_section(*r.probe_callsites);
  o += phases_section(r, a);
  o += timeseries_section(r, a, tl);
  o += stall_timeline_section(r, a, at, tl);
  o += raw_section(r, a, at, ticks);
  o += distribution_section(a);
  o += stalls_section(r, a, at);
  o += counters_section(r);
  o += backtraces_section(r);
  o += fmt::format(
      "<footer>Generated by shootdown {} from run {}. How to read this page: docs/report.md in the shootdown "
      "sources.</footer>\n",
      escape(r.env.version), escape(r.run_id));
  o += "<script>" + std::string(kJs) + "</script>\n</body>\n</html>\n";
  return o;
}

}  // namespace shootdown::sink
