#include "sink/console.hpp"

#include <fmt/format.h>

#include "core/cpulist.hpp"
#include "core/units.hpp"

namespace shootdown::sink {

namespace {
std::string num(double v) {
  if (v >= 100000) return fmt::format("{:.0f}", v);
  if (v >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.1f}", v);
}
}  // namespace

std::string summary_table(const std::string& title, const VictimAnalysis& va, bool per_page) {
  std::string out = title + "\n";
  out += fmt::format("  {:<9}{:>7}{:>8}{:>7}{:>7}{:>8}{:>8}{:>9}{:>9}\n", "phase", "min", "mean", "p50", "p90", "p99",
                     "p99.9", "max", "samples");
  for (const auto& ps : va.phases) {
    const Summary& s = per_page ? ps.per_page : ps.per_batch;
    if (s.count == 0) {
      out += fmt::format("  {:<9}{:>7}{:>8}{:>7}{:>7}{:>8}{:>8}{:>9}{:>9}\n", to_string(ps.phase), "-", "-", "-", "-",
                         "-", "-", "-", 0);
      continue;
    }
    out += fmt::format("  {:<9}{:>7}{:>8}{:>7}{:>7}{:>8}{:>8}{:>9}{:>9}\n", to_string(ps.phase), num(s.min), num(s.mean),
                       num(s.p50), num(s.p90), num(s.p99), num(s.p999), num(s.max), s.count);
  }
  return out;
}

std::string console_summary(const Result& r, const Analysis& a) {
  std::string out;
  const Plan& p = r.plan;
  out += fmt::format("shootdown run: release={} chunk={} pages={} batch={} culprit=cpu{} victims=cpu{}\n", p.release,
                     format_size(p.chunk_size), p.pages, format_size(p.batch), p.culprit_cpu,
                     format_cpulist(p.victim_cpus));
  if (!r.complete) out += fmt::format("INCOMPLETE: {}\n", r.incomplete_reason);
  for (const auto& va : a.victims) {
    out += "\n";
    out += summary_table(fmt::format("victim cpu{}: ns per batch ({} pages, {})", va.cpu, va.pages_per_batch,
                                     format_size(p.batch)),
                         va, false);
    out += summary_table(fmt::format("victim cpu{}: ns per page (batch / {})", va.cpu, va.pages_per_batch), va, true);
  }
  out += "\n";
  if (!r.releases.empty()) {
    if (r.releases.size() == 1)
      out += fmt::format("release: {} of {} took {}\n", p.release, format_size(p.chunk_size),
                         format_duration_ns(r.releases[0].duration_ns()));
    else
      out += fmt::format("releases: {} x {} of {}: duration p50 {}, max {}\n", r.releases.size(), p.release,
                         format_size(p.chunk_size), format_duration_ns(static_cast<std::int64_t>(a.release_duration.p50)),
                         format_duration_ns(static_cast<std::int64_t>(a.release_duration.max)));
  } else {
    out += "release: none performed\n";
  }
  if (!r.counters.empty()) {
    out += fmt::format("/proc/interrupts deltas over {}:\n", format_duration_ns(r.interrupts_span_ns));
    out += fmt::format("  {:<8}{:<9}{:>10}{:>10}{:>10}{:>10}\n", "cpu", "role", "TLB", "CAL", "LOC", "RES");
    for (const auto& c : r.counters) {
      if (c.role == "other" && c.tlb == 0 && c.cal == 0) continue;
      out += fmt::format("  {:<8}{:<9}{:>10}{:>10}{:>10}{:>10}\n", "cpu" + std::to_string(c.cpu), c.role, c.tlb, c.cal,
                         c.loc, c.res);
    }
  }
  out += fmt::format("kernel trace: {}\n", r.trace.status.empty() ? "off" : r.trace.status);
  for (const auto& w : r.env.warnings) out += "warning: " + w + "\n";
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  return out;
}

}  // namespace shootdown::sink
