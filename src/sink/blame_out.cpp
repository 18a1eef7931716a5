// SPDX-License-Identifier: Apache-2.0
#include "sink/blame_out.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/cpulist.hpp"
#include "core/units.hpp"

namespace shootdown::sink {

namespace {

std::string cpus_str(const std::map<int, std::int64_t>& m) {
  if (m.empty()) return "-";
  std::string out;
  for (const auto& [cpu, n] : m) out += fmt::format("{}cpu{}:{}", out.empty() ? "" : " ", cpu, n);
  return out;
}

}  // namespace

std::string blame_text(const BlameReport& r, const BlameOptions& opts) {
  std::string o;
  o += fmt::format("shootdown blame: pid {}{}{}, {}\n", r.pid, r.command.empty() ? "" : " ", r.command,
                   format_duration_ns(r.duration_ns));
  // The answer first, in one line.
  if (r.flushes == 0) {
    o += fmt::format("  it initiated no shootdown in {}{}\n", format_duration_ns(r.duration_ns),
                     r.received ? fmt::format("; its threads received {} (from other processes' flushes)", r.received)
                                : std::string());
  } else {
    std::string line = fmt::format("  it initiated {} shootdown{} in {}, {} flush IPIs to {}", r.flushes,
                                   r.flushes == 1 ? "" : "s", format_duration_ns(r.duration_ns), r.ipis,
                                   r.ipi_cpus.empty() ? std::string("no other CPU") : cpus_str(r.ipi_cpus));
    if (!r.sites.empty()) {
      const CallSite& top = r.sites.front();
      line += fmt::format("; top call site {} ({:.0f} % of them)", top.syscall.empty() ? "?" : top.syscall,
                          100.0 * static_cast<double>(top.flushes) / static_cast<double>(r.flushes));
    }
    o += line + "\n";
  }
  o += fmt::format("  processes followed {}, threads seen {}\n", r.processes, r.threads);
  o += fmt::format("  shootdowns initiated  {} (tlb_flush reason 4), pages {}{}\n", r.flushes, r.pages,
                   r.full_flushes ? fmt::format(" + {} full flushes", r.full_flushes) : std::string());
  o += fmt::format("  flush IPIs delivered  {} ({}){}\n", r.ipis, cpus_str(r.ipi_cpus),
                   r.ipis_unpaired ? fmt::format(", {} without a sampled flush", r.ipis_unpaired) : std::string());
  // Reason 4 is traced only when another CPU is in the mm's cpumask: with no
  // IPI after it, those CPUs were lazy, or the flush went another way.
  if (r.flushes > 0 && r.ipis == 0)
    o += "                        (none: the process's other CPUs were idle or lazy, or remote flushes bypass IPIs\n"
         "                        here: shootdown doctor, check pv_tlb_flush)\n";
  if (r.ipi_sends)
    o += fmt::format("  flush IPI sends       {} (hardware IPIs; a flush queued behind a pending IPI needs none)\n",
                     r.ipi_sends);
  if (r.other_ipis)
    o += fmt::format("  other IPIs sent       {} (function calls that are not TLB flushes)\n", r.other_ipis);
  o += fmt::format("  received by target    {} (tlb_flush reason 1 interrupting its threads: {})\n", r.received,
                   cpus_str(r.received_by_target));
  if (!r.interrupts_tlb.empty())
    o += fmt::format("  /proc/interrupts TLB  {} (all processes)\n", cpus_str(r.interrupts_tlb));
  if (r.lost) o += fmt::format("  lost samples          {} (the kernel dropped them: counts are low)\n", r.lost);
  if (r.sites.empty()) {
    o += "\nno shootdowns initiated by the target\n";
  } else {
    o += fmt::format("\ntop call sites (of {}):\n", r.sites.size());
    const int top = opts.top > 0 ? opts.top : 10;
    int rank = 0;
    for (const CallSite& c : r.sites) {
      if (++rank > top) break;
      o += fmt::format("{:2}. {}\n", rank, c.stack);
      o += fmt::format("    {} flushes, {} pages{}, {} IPIs → {}, syscall {}\n", c.flushes, c.pages,
                       c.full_flushes ? fmt::format(" (+{} full)", c.full_flushes) : std::string(), c.ipis,
                       cpus_str(c.receiving_cpus), c.syscall);
      if (!c.location.empty()) o += fmt::format("    at {}\n", c.location);
      if (!c.advice.empty()) o += fmt::format("    advice: {}\n", c.advice);
    }
    if (static_cast<int>(r.sites.size()) > top)
      o += fmt::format("    ... {} more (--top, --json)\n", r.sites.size() - static_cast<std::size_t>(top));
  }
  for (const auto& n : r.notes) o += "note: " + n + "\n";
  return o;
}

std::string blame_json(const BlameReport& r) {
  using nlohmann::json;
  auto cpumap = [](const std::map<int, std::int64_t>& m) {
    json j = json::object();
    for (const auto& [cpu, n] : m) j[std::to_string(cpu)] = n;
    return j;
  };
  json sites = json::array();
  for (const CallSite& c : r.sites) {
    json addresses = json::array();
    for (const FrameAddress& a : c.addresses)
      addresses.push_back(json{{"kind", a.kind}, {"module", a.module}, {"offset", fmt::format("{:#x}", a.offset)}});
    sites.push_back(json{{"stack", c.stack},
                         {"frames", c.frames},
                         {"addresses", addresses},
                         {"location", c.location},
                         {"syscall", c.syscall},
                         {"flushes", c.flushes},
                         {"pages", c.pages},
                         {"full_flushes", c.full_flushes},
                         {"ipis", c.ipis},
                         {"receiving_cpus", cpumap(c.receiving_cpus)},
                         {"advice", c.advice}});
  }
  json j{{"schema", "shootdown-blame"},
         {"version", 1},
         {"pid", r.pid},
         {"command", r.command},
         {"duration_ns", r.duration_ns},
         {"processes", r.processes},
         {"threads", r.threads},
         {"flushes", r.flushes},
         {"pages", r.pages},
         {"full_flushes", r.full_flushes},
         {"ipis", r.ipis},
         {"ipis_unpaired", r.ipis_unpaired},
         {"ipi_cpus", cpumap(r.ipi_cpus)},
         {"ipi_sends", r.ipi_sends},
         {"other_ipis", r.other_ipis},
         {"received", r.received},
         {"received_by_target", cpumap(r.received_by_target)},
         {"received_all", cpumap(r.received_all)},
         {"interrupts_tlb", cpumap(r.interrupts_tlb)},
         {"lost", r.lost},
         {"sites", sites},
         {"notes", r.notes}};
  return j.dump(2) + "\n";
}

}  // namespace shootdown::sink
