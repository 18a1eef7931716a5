// SPDX-License-Identifier: Apache-2.0
#include "cli/run_options.hpp"

#include "cli/common_options.hpp"
#include "core/churn_plan.hpp"

#include "core/strategy.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <unistd.h>

#include "core/cpulist.hpp"
#include "core/errors.hpp"
#include "core/units.hpp"
#include "sys/cpus.hpp"
#include "sys/meminfo.hpp"

namespace shootdown::cli {

namespace {

[[noreturn]] void bad(const std::string& msg) {
  throw UsageError(msg);
}

std::int64_t size_opt(const char* name, const std::string& v) {
  auto s = parse_size(v);
  if (!s) bad(fmt::format("{} '{}': {} (accepted: a size like 64KiB, 512MiB, 4GiB)", name, v, s.error()));
  return *s;
}

std::int64_t duration_opt(const char* name, const std::string& v) {
  auto d = parse_duration_ns(v);
  if (!d) bad(fmt::format("{} '{}': {} (accepted: a duration like 250ms, 2s, 50us)", name, v, d.error()));
  return *d;
}

int cpu_opt(const char* name, const std::string& v, const MachineFacts& m) {
  auto n = parse_int(v);
  if (!n || *n < 0 || *n > 65535)
    bad(fmt::format("{} '{}': not a CPU number (online CPUs: {})", name, v, format_cpulist(m.online)));
  const int cpu = static_cast<int>(*n);
  if (std::find(m.online.begin(), m.online.end(), cpu) == m.online.end())
    bad(fmt::format("{} {}: CPU {} is not online (online CPUs: {})", name, v, cpu, format_cpulist(m.online)));
  return cpu;
}

// --pace SIZE/DURATION (paced, chunked): the step a multiple of the page
// size and at most the chunk, the gap from 0 to 1s, the whole spread within 1h.
Pace pace_opt(const std::string& v, ReleaseStrategy s, std::int64_t chunk, std::int64_t page_size,
              const std::string& page_name) {
  const std::string accepted = fmt::format(
      "accepted: SIZE/DURATION, a step that is a multiple of the page size ({}) up to the chunk ({}) and a pause "
      "from 0 to 1s after each step, like 64KiB/100us or 64MiB/10ms",
      format_size(page_size), format_size(chunk));
  if (v.empty()) {
    Pace p = default_pace(s);
    p.step = std::min(std::max(p.step, page_size) / page_size * page_size, chunk);  // whole pages, within A
    return p;
  }
  const auto slash = v.find('/');
  if (slash == std::string::npos || v.find('/', slash + 1) != std::string::npos)
    bad(fmt::format("--pace '{}': not SIZE/DURATION ({})", v, accepted));
  const auto step = parse_size(v.substr(0, slash));
  if (!step) bad(fmt::format("--pace '{}': step '{}': {} ({})", v, v.substr(0, slash), step.error(), accepted));
  const auto gap = parse_duration_ns(v.substr(slash + 1));
  if (!gap) bad(fmt::format("--pace '{}': pause '{}': {} ({})", v, v.substr(slash + 1), gap.error(), accepted));
  if (*step <= 0 || *step % page_size != 0)
    bad(fmt::format("--pace '{}': the step must be a positive multiple of the {} page size with --pages {} ({})", v,
                    format_size(page_size), page_name, accepted));
  if (*step > chunk) bad(fmt::format("--pace '{}': the step is larger than the chunk ({})", v, accepted));
  if (*gap < 0 || *gap > 1000000000LL) bad(fmt::format("--pace '{}': the pause is out of range ({})", v, accepted));
  const std::int64_t spread = (pace_steps(chunk, *step) - 1) * *gap;
  if (spread > 3600LL * 1000000000LL)
    bad(fmt::format("--pace '{}': {} steps with that pause take {} (more than 1h); {}", v, pace_steps(chunk, *step),
                    format_duration_ns(spread),
                    "use a larger step or a shorter pause (accepted: a release within 1h)"));
  return {*step, *gap};
}

}  // namespace

void add_run_options(CLI::App& app, RunOptions& o, bool for_compare) {
  // A later occurrence of an option overrides an earlier one (scripts append).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--culprit-cpu", o.culprit_cpu, "CPU of the culprit thread that releases memory (default: chosen)");
  app.add_option("--victim-cpus", o.victim_cpus, "CPU list of victim threads, e.g. 1 or 1,3-5 (default: chosen)");
  app.add_option("--chunk-size", o.chunk_size,
                 "Size of chunk A and of each victim's chunk B (default 4GiB, capped to fit memory)")
      ->each([&o](const std::string&) { o.chunk_size_given = true; });
  app.add_option("--batch", o.batch, "Bytes written per timed batch, multiple of 4KiB (default 64KiB)");
  app.add_option("--report-every", o.report_every,
                 "Report interval (victim.hlog, timeline.csv): a duration of wall time from 1ms to 1h, or a size of "
                 "victim writes like 32MiB (default 10ms)");
  app.add_option("--pages", o.pages, "Page mode: " + page_mode_help() + " (default 4k)");
  if (!for_compare)
    app.add_option("--release", o.release, "Release strategy: " + run_strategy_help() + " (default free)");
  app.add_option("--pace", o.pace,
                 std::string(for_compare ? "paced and chunked arms" : "--release paced or chunked") +
                     ": release A in madvise(MADV_DONTNEED) steps of SIZE with a pause of DURATION after each, "
                     "e.g. 2MiB/1ms (default: paced 64KiB/100us, chunked 64MiB/10ms)");
  const std::string arms = for_compare ? "allocator arms" : "--release glibc-malloc, jemalloc, tcmalloc or mimalloc";
  app.add_option("--allocator-conf", o.allocator_conf,
                 arms +
                     ": the allocator's own settings in its own syntax, e.g. jemalloc dirty_decay_ms:0,"
                     "background_thread:true; glibc-malloc M_TRIM_THRESHOLD=0; tcmalloc TCMALLOC_RELEASE_RATE=10; "
                     "mimalloc MIMALLOC_RESET_DELAY=0 (default: the allocator's defaults)");
  app.add_option("--allocator-purge", o.allocator_purge,
                 arms +
                     ": end each release with the allocator's give-back-now call (malloc_trim, arena purge, "
                     "ReleaseFreeMemory, mi_collect): on or off (default on)");
  app.add_option("--trigger", o.trigger,
                 for_compare
                     ? "after=DURATION per trial (default after=150ms)"
                     : "enter (wait for Enter) or after=DURATION (default: enter on a TTY, after=2s otherwise)");
  app.add_option("--repeat", o.repeat, "Number of releases (A re-allocated between them) (default 1)");
  app.add_option("--every", o.every, "Time between repeated releases (default 500ms)");
  app.add_option("--baseline", o.baseline,
                 for_compare ? "Minimum baseline before the release (default 150ms)"
                             : "Minimum baseline before the first release (default 1s)");
  app.add_option("--settle", o.settle, "Release window extends this long after the call returns (default 1ms)");
  app.add_option("--after", o.after,
                 for_compare ? "Measurement after the release window (default 100ms)"
                             : "Measurement after the last release window (default 1s)");
  app.add_option("--trace", o.trace, "Kernel evidence: auto (when permitted), on (required), off (default auto)");
  app.add_option("--stall-threshold", o.stall_threshold,
                 "Stall threshold for attribution (default: 8 x baseline median)");
  app.add_option("--stall-factor", o.stall_factor, "Auto stall threshold = factor x baseline median (default 8)");
  app.add_flag("--no-mlock", o.no_mlock, "Do not mlock chunk B and the sample ring");
  app.add_option("--memory-limit", o.memory_limit,
                 "Memory for the victims' samples and their analysis, e.g. 512MiB (at least 256MiB per victim); "
                 "a run longer than fits keeps raw samples and kernel events around each release and the rest "
                 "only as interval histograms and counts (default 512MiB, or 256MiB per victim if more; lowered to "
                 "fit MemAvailable and the memory cgroup)");
  app.add_flag("--rt", o.rt,
               "Run victims SCHED_FIFO (priority 1) so they keep their CPU: a preempted victim gets no shootdown IPI");
  if (!for_compare) {
    add_json_flag(app, o.json, "the full result", "the table");
    add_out_dir(app, o.out, "result.json, timeline.csv and the other files");
    app.add_flag("--open", o.open,
                 "Print the file:// URL of DIR/report.html when done (needs --out; starts no browser)");
    app.add_option(
        "--influx", o.influx,
        "Also send the result to InfluxDB: http://HOST:PORT/write?db=NAME or udp://HOST:PORT (after the files)");
  }
  app.add_flag("-q,--quiet", o.quiet, "No progress output on stderr");
  if (!for_compare)
    app.add_flag("-v,--verbose", o.verbose,
                 "List every tuning warning (default: one line counting them; result.json and report.html keep all)");
}

MachineFacts read_machine_facts() {
  MachineFacts m;
  const sys::Topology t = sys::read_topology();
  m.online = t.online;
  m.isolated = t.isolated;
  const CpuChoice choice = choose_cpus(t, 1);
  m.default_cpus = choice.cpus();
  m.default_cpus_why = choice.why;
  for (const auto& c : t.cpus) {
    if (c.cpu >= static_cast<int>(m.cpu_node.size())) m.cpu_node.resize(static_cast<std::size_t>(c.cpu) + 1, 0);
    m.cpu_node[static_cast<std::size_t>(c.cpu)] = c.node;
    for (int s : c.siblings)
      if (s > c.cpu) m.smt_pairs.emplace_back(c.cpu, s);
  }
  const sys::MemInfo mi = sys::read_meminfo();
  m.mem_available = mi.mem_available();
  if (const auto cg = sys::read_cgroup_memory(); cg && cg->limit >= 0) {
    m.cgroup_limit = cg->limit;
    m.cgroup_usage = cg->usage;
    m.cgroup_path = cg->path;
  }
  m.hugepages_free = mi.hugepages_free();
  m.hugepage_size = mi.hugepage_size();
  m.stdin_is_tty = ::isatty(STDIN_FILENO) == 1;
  return m;
}

CpuPlan resolve_cpus(const std::string& culprit, const std::string& victims, const MachineFacts& m) {
  CpuPlan p;
  if (!culprit.empty()) p.culprit = cpu_opt("--culprit-cpu", culprit, m);
  if (!victims.empty()) {
    auto l = parse_cpulist(victims);
    if (!l) bad(fmt::format("--victim-cpus '{}': {} (accepted: a CPU list like 1 or 1,3-5)", victims, l.error()));
    if (l->empty()) bad("--victim-cpus '': give at least one CPU (accepted: a CPU list like 1 or 1,3-5)");
    for (int c : *l)
      if (std::find(m.online.begin(), m.online.end(), c) == m.online.end())
        bad(fmt::format("--victim-cpus {}: CPU {} is not online (online CPUs: {})", victims, c,
                        format_cpulist(m.online)));
    p.victims = *l;
  }
  if (p.culprit < 0 && p.victims.empty()) {
    if (m.default_cpus.size() < 2)
      bad("--culprit-cpu/--victim-cpus: cannot choose defaults: " +
          (m.default_cpus_why.empty() ? std::string("need two online CPUs") : m.default_cpus_why) +
          "; give them explicitly");
    p.culprit = m.default_cpus[0];
    p.victims = {m.default_cpus[1]};
    p.choice = "default: " + (m.default_cpus_why.empty()
                                  ? std::string("one NUMA node, no SMT siblings, victim on the best CPU")
                                  : m.default_cpus_why);
  } else if (p.culprit < 0) {
    for (int c : m.online)
      if (std::find(p.victims.begin(), p.victims.end(), c) == p.victims.end()) {
        p.culprit = c;
        break;
      }
    if (p.culprit < 0) bad(fmt::format("--victim-cpus {}: leaves no online CPU for the culprit", victims));
    p.choice = "culprit chosen: first online CPU not a victim";
  } else if (p.victims.empty()) {
    for (int c : m.online)
      if (c != p.culprit) {
        p.victims = {c};
        break;
      }
    if (p.victims.empty()) bad(fmt::format("--culprit-cpu {}: no other online CPU for a victim", p.culprit));
    p.choice = "victim chosen: first online CPU other than the culprit";
  } else {
    p.choice = "given";
  }
  if (std::find(p.victims.begin(), p.victims.end(), p.culprit) != p.victims.end())
    bad(fmt::format("--victim-cpus {}: includes the culprit CPU {}; culprit and victims must be distinct CPUs",
                    format_cpulist(p.victims), p.culprit));
  return p;
}

std::int64_t positive_duration(const std::string& name, const std::string& v) {
  auto d = parse_duration_ns(v);
  if (!d || *d <= 0)
    bad(fmt::format("{} '{}': {} (accepted: a positive duration like 10s, 500ms)", name, v,
                    d ? std::string("must be positive") : d.error()));
  return *d;
}

namespace {

void warn(std::vector<std::string>* warnings, std::string w) {
  if (warnings) warnings->push_back(std::move(w));
}

// The CPUs, and warnings for SMT siblings and victims on another NUMA node.
void cpu_rules(Plan& p, const RunOptions& o, const MachineFacts& m, std::vector<std::string>* warnings) {
  const CpuPlan cpus = resolve_cpus(o.culprit_cpu, o.victim_cpus, m);
  p.culprit_cpu = cpus.culprit;
  p.victim_cpus = cpus.victims;
  p.cpu_choice = cpus.choice;
  for (auto [a, b] : m.smt_pairs) {
    const bool ia = a == p.culprit_cpu || std::count(p.victim_cpus.begin(), p.victim_cpus.end(), a);
    const bool ib = b == p.culprit_cpu || std::count(p.victim_cpus.begin(), p.victim_cpus.end(), b);
    if (ia && ib) warn(warnings, fmt::format("CPUs {} and {} are SMT siblings: they share a core and its TLB", a, b));
  }
  if (p.culprit_cpu < static_cast<int>(m.cpu_node.size()))
    p.numa_node = m.cpu_node[static_cast<std::size_t>(p.culprit_cpu)];
  for (int c : p.victim_cpus)
    if (c < static_cast<int>(m.cpu_node.size()) && m.cpu_node[static_cast<std::size_t>(c)] != p.numa_node)
      warn(warnings, fmt::format("victim CPU {} is on another NUMA node than the culprit", c));
}

// --allocator-conf and --allocator-purge: only with an allocator arm.
void allocator_rules(Plan& p, const RunOptions& o) {
  if (!is_allocator_arm(p.release)) {
    if (!o.allocator_conf.empty())
      bad(
          fmt::format("--allocator-conf '{}': the release {} uses no allocator (accepted with --release glibc-malloc, "
                      "jemalloc, tcmalloc or mimalloc)",
                      o.allocator_conf, o.release));
    if (!o.allocator_purge.empty())
      bad(
          fmt::format("--allocator-purge '{}': the release {} uses no allocator (accepted with --release "
                      "glibc-malloc, jemalloc, tcmalloc or mimalloc)",
                      o.allocator_purge, o.release));
    return;
  }
  if (auto conf = parse_allocator_conf(p.release, o.allocator_conf); !conf)
    bad(fmt::format("--allocator-conf '{}' for {}: {}", o.allocator_conf, o.release, conf.error()));
  p.allocator_conf = o.allocator_conf;
  if (o.allocator_purge != "" && o.allocator_purge != "on" && o.allocator_purge != "off")
    bad(fmt::format("--allocator-purge '{}': not on or off (accepted: on, off)", o.allocator_purge));
  p.allocator_purge = o.allocator_purge != "off";
}

// --pages, --release, --trace by name; --pace and the allocator options only
// where the release has them.
void enumeration_rules(Plan& p, const RunOptions& o) {
  if (auto mode = find_page_mode(o.pages))
    p.pages = *mode;
  else
    bad(fmt::format("--pages '{}': unknown page mode (accepted: {})", o.pages, page_mode_list()));
  if (auto r = find_strategy(o.release); r && strategy_info(*r).run_option)
    p.release = *r;
  else
    bad(fmt::format("--release '{}': unknown strategy (accepted: {})", o.release, run_strategy_list()));
  const auto mode = parse_trace_mode(o.trace);
  if (!mode || (*mode != TraceMode::kAuto && *mode != TraceMode::kOn && *mode != TraceMode::kOff))
    bad(fmt::format("--trace '{}': unknown mode (accepted: auto, on, off)", o.trace));
  else
    p.trace = *mode;
  if (!o.pace.empty() && !is_paced(p.release))
    bad(fmt::format("--pace '{}': the release {} has no pace (accepted with --release paced or chunked)", o.pace,
                    o.release));
  allocator_rules(p, o);
}

// --trigger, --repeat, the durations, the stall threshold, and the flags.
void timing_rules(Plan& p, const RunOptions& o, const MachineFacts& m) {
  std::string trig = o.trigger.empty() ? (m.stdin_is_tty ? "enter" : "after=2s") : o.trigger;
  if (trig == "enter") {
    p.trigger = Trigger::kEnter;
  } else if (trig.rfind("after=", 0) == 0) {
    p.trigger = Trigger::kAfter;
    auto d = parse_duration_ns(trig.substr(6));
    if (!d) bad(fmt::format("--trigger '{}': {} (accepted: enter or after=DURATION like after=2s)", trig, d.error()));
    p.trigger_after_ns = *d;
  } else {
    bad(fmt::format("--trigger '{}': unknown trigger (accepted: enter or after=DURATION like after=2s)", trig));
  }
  if (o.repeat < 1 || o.repeat > 100000) bad(fmt::format("--repeat {}: out of range [1, 100000]", o.repeat));
  p.repeat = o.repeat;
  p.every_ns = duration_opt("--every", o.every);
  p.baseline_ns = duration_opt("--baseline", o.baseline);
  p.settle_ns = duration_opt("--settle", o.settle);
  p.after_ns = duration_opt("--after", o.after);
  if (p.after_ns > 3600LL * 1000000000LL) bad(fmt::format("--after {}: out of range [0, 1h]", o.after));
  if (!o.stall_threshold.empty()) p.stall_threshold_ns = duration_opt("--stall-threshold", o.stall_threshold);
  if (!(o.stall_factor >= 1.0 && o.stall_factor <= 1000.0))
    bad(fmt::format("--stall-factor {}: out of range [1, 1000]", o.stall_factor));
  p.stall_factor = o.stall_factor;
  p.mlock = !o.no_mlock;
  p.rt = o.rt;
  if (o.open && o.out.empty()) bad("--open: needs --out DIR (the report is written to DIR/report.html)");
}

// --batch, --report-every, --chunk-size as asked and --memory-limit.
void size_rules(Plan& p, const RunOptions& o, const MachineFacts& m) {
  p.batch = size_opt("--batch", o.batch);
  // --report-every: a size ("32MiB", a bare number = bytes) or else a
  // duration ("10ms"; "m" is minutes, "M" MiB). By time, every interval but
  // the last is exactly the duration, so HdrHistogram's readers, which keep
  // interval start times in whole milliseconds, can place each one.
  if (auto sz = parse_size(o.report_every)) {
    p.report_every = *sz;
  } else if (auto d = parse_duration_ns(o.report_every); d && *d >= 1000000 && *d <= 3600LL * 1000000000LL) {
    p.report_every_ns = *d;
  } else {
    bad(
        fmt::format("--report-every '{}': {} (accepted: a duration from 1ms to 1h like 10ms, or a size of victim "
                    "writes like 32MiB)",
                    o.report_every, d ? "out of range" : "neither a duration nor a size"));
  }
  p.chunk_size_requested = size_opt("--chunk-size", o.chunk_size);
  p.page_size = p.pages == PageMode::k4k ? 4096 : m.hugepage_size;
  if (p.batch <= 0 || p.batch % 4096 != 0)
    bad(fmt::format("--batch {}: must be a positive multiple of the 4 KiB page size (e.g. 64KiB)", o.batch));
  if (p.chunk_size_requested < 4096)
    bad(fmt::format("--chunk-size {}: must be at least 4KiB (accepted: a size like 512MiB, 4GiB)", o.chunk_size));
  const std::int64_t least =
      kMemoryLimitPerVictim * static_cast<std::int64_t>(std::max<std::size_t>(p.victim_cpus.size(), 1));
  if (o.memory_limit.empty()) {
    p.memory_limit = std::max(kMemoryLimitDefault, least);
    return;
  }
  p.memory_limit = size_opt("--memory-limit", o.memory_limit);
  if (p.memory_limit < least)
    bad(
        fmt::format("--memory-limit {}: below the least for {} victim{} ({}: a 32 MiB sample store per victim, "
                    "8 bytes of analysis per stored byte) (accepted: a size like 512MiB, 2GiB)",
                    o.memory_limit, p.victim_cpus.size(), p.victim_cpus.size() == 1 ? "" : "s", format_size(least)));
}

// The memory the chunks may use, what to keep free, and what bounds it.
struct ChunkMemory {
  std::int64_t usable = 0;
  std::int64_t margin = 0;
  std::string name;  // "MemAvailable is ..." or the memory cgroup's headroom
};

ChunkMemory chunk_memory(const MachineFacts& m) {
  ChunkMemory c;
  c.margin = std::max<std::int64_t>(1LL << 30, m.mem_available / 10);
  c.usable = m.mem_available - c.margin;
  c.name = fmt::format("MemAvailable is {}", format_size(m.mem_available));
  // In a memory cgroup (a container, a systemd slice) the kernel OOM-kills
  // the run (SIGKILL, no result) once the chunks, the victims' sample rings
  // and the rest of the process exceed its limit: the headroom under the
  // limit bounds the chunks too.
  if (m.cgroup_limit >= 0) {
    const std::int64_t headroom = std::max<std::int64_t>(0, m.cgroup_limit - m.cgroup_usage);
    // A third of the headroom (at least 128 MiB) for the rest: the victims'
    // sample rings (~70 MiB for a 2 s run here; experiment/ caps them to what
    // the limit leaves), the trace buffers and the analysis.
    const std::int64_t cg_margin = std::max<std::int64_t>(128LL << 20, headroom / 3);
    if (headroom - cg_margin < c.usable) {
      c.usable = headroom - cg_margin;
      c.margin = cg_margin;
      c.name = fmt::format("the memory cgroup {} allows {} more (limit {}, {} in use)", m.cgroup_path,
                           format_size(headroom), format_size(m.cgroup_limit), format_size(m.cgroup_usage));
    }
  }
  return c;
}

// The chunk size: whole huge pages, and A plus one B per victim within the
// memory; a default size is capped to fit (a warning), a given one refused.
void fit_chunks(Plan& p, const RunOptions& o, const MachineFacts& m, std::vector<std::string>* warnings) {
  const std::int64_t chunks = 1 + static_cast<std::int64_t>(p.victim_cpus.size());
  const ChunkMemory mem = chunk_memory(m);
  std::int64_t chunk = p.chunk_size_requested;
  if (p.pages != PageMode::k4k) chunk = (chunk + (2LL << 20) - 1) / (2LL << 20) * (2LL << 20);  // whole huge pages
  if (chunk > mem.usable / chunks) {
    const std::int64_t fit = std::max<std::int64_t>(0, mem.usable / chunks) / (2LL << 20) * (2LL << 20);
    if (o.chunk_size_given)
      bad(fmt::format(
          "--chunk-size {}: {} chunks (A + one B per victim) need {} but {} (keep {} free); "
          "use at most {}",
          o.chunk_size, chunks, format_size(chunk * chunks), mem.name, format_size(mem.margin), format_size(fit)));
    if (fit < (64LL << 20))
      bad(
          fmt::format("--chunk-size: not enough memory for the default chunks ({}); free memory or give a "
                      "smaller size",
                      mem.name));
    warn(warnings, fmt::format("chunk size capped from {} to {} so {} chunks fit: {} (keep {} free)",
                               format_size(chunk), format_size(fit), chunks, mem.name, format_size(mem.margin)));
    chunk = fit;
    p.chunk_capped = true;
  }
  p.chunk_size = chunk;
}

// What depends on the final chunk: whole batches, --report-every, --pace,
// and the free huge pages --pages hugetlb needs.
void chunk_rules(Plan& p, const RunOptions& o, const MachineFacts& m) {
  if (p.batch > p.chunk_size)
    bad(fmt::format("--batch {}: larger than the chunk ({}); use a batch of at most the chunk size", o.batch,
                    format_size(p.chunk_size)));
  p.chunk_size = p.chunk_size / p.batch * p.batch;  // whole batches
  if (p.report_every_ns == 0 && p.report_every < p.batch)
    bad(fmt::format("--report-every {}: smaller than the batch ({}); use at least one batch", o.report_every,
                    format_size(p.batch)));
  if (is_paced(p.release)) {
    const Pace pace = pace_opt(o.pace, p.release, p.chunk_size, p.page_size, o.pages);
    p.pace_step = pace.step;
    p.pace_gap_ns = pace.gap_ns;
  }
  if (p.pages == PageMode::kHugetlb) {
    const std::int64_t chunks = 1 + static_cast<std::int64_t>(p.victim_cpus.size());
    const std::int64_t need = chunks * ((p.chunk_size + m.hugepage_size - 1) / m.hugepage_size);
    if (m.hugepages_free < need)
      bad(
          fmt::format("--pages hugetlb: needs {} free huge pages of {} but HugePages_Free is {}; reserve them with "
                      "'echo {} > /proc/sys/vm/nr_hugepages' or use --pages thp",
                      need, format_size(m.hugepage_size), m.hugepages_free, need));
  }
}

}  // namespace

Plan validate_run_options(const RunOptions& o, const MachineFacts& m, std::vector<std::string>* warnings) {
  Plan p;
  cpu_rules(p, o, m, warnings);
  enumeration_rules(p, o);
  timing_rules(p, o, m);
  size_rules(p, o, m);
  fit_chunks(p, o, m, warnings);
  chunk_rules(p, o, m);
  return p;
}

}  // namespace shootdown::cli
