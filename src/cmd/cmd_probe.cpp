// shootdown probe: run a command with the probe library preloaded, so one
// pinned victim thread lives inside it (only threads of the same mm receive
// its shootdowns), trace kernel events with sys::Tracer meanwhile, and
// analyse the probe's samples exactly like a run's victim.
// plan (validate) → prepare (memfd ring, Tracer on every online CPU) → run
// (spawn with LD_PRELOAD + SHOOTDOWN_PROBE_FD, drain the ring) → report
// (Result → analyze → console/JSON/--out files) → restore (Tracer closes
// its fds; the memfd goes with its last mapping).
#include <memory>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cmd/commands.hpp"
#include "cmd/run_support.hpp"
#include "core/analysis.hpp"
#include "core/attribution.hpp"
#include "core/cpulist.hpp"
#include "core/units.hpp"
#include "probe/probe_shm.h"
#include "sink/atomic_writer.hpp"
#include "sys/cpus.hpp"
#include "sys/environment.hpp"
#include "sys/fs.hpp"
#include "sys/interrupts.hpp"
#include "sys/perf_trace.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

extern char** environ;

#ifndef SHOOTDOWN_PROBE_BUILD_PATH
#define SHOOTDOWN_PROBE_BUILD_PATH ""
#endif

namespace shootdown::cmd {

namespace {

struct ProbeOpts {
  int cpu = -1;
  std::string duration;
  std::string out;
  bool json = false;
  std::string arena = "2MiB";
  int batch_pages = 512;
  std::string ring = "16MiB";
  std::string stall_threshold;
  bool rt = false;
  std::vector<std::string> command;
};

constexpr std::int64_t kMs = 1'000'000;

// Next to the binary (installed: <prefix>/bin/shootdown + <prefix>/lib/...),
// in the build tree, or SHOOTDOWN_PROBE_LIB.
std::string find_library() {
  if (const char* e = std::getenv("SHOOTDOWN_PROBE_LIB"); e && *e) return e;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::vector<std::string> tries;
  if (n > 0) {
    std::string dir(exe, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    tries = {dir + "/libshootdown_probe.so", dir + "/probe/libshootdown_probe.so",
             dir + "/../lib/libshootdown_probe.so", dir + "/../lib/shootdown/libshootdown_probe.so"};
  }
  tries.emplace_back(SHOOTDOWN_PROBE_BUILD_PATH);
  for (const auto& t : tries)
    if (!t.empty() && ::access(t.c_str(), R_OK) == 0) return t;
  return {};
}

int execute_probe(const ProbeOpts& o) {
  // --- plan -----------------------------------------------------------------
  if (o.command.empty()) throw UsageError("nothing to probe: give -- CMD ARGS");
  const sys::Topology topo = sys::read_topology();
  int cpu = o.cpu;
  if (cpu < 0) {
    if (topo.online.empty()) throw UsageError("cannot list online CPUs: give --cpu");
    cpu = topo.online.back();
  }
  if (!topo.online.empty() && !topo.is_online(cpu))
    throw UsageError(fmt::format("--cpu {}: not an online CPU (online: {})", cpu, format_cpulist(topo.online)));
  std::string why;
  const auto arena = parse_size(o.arena, &why);
  if (!arena || *arena < 4096 || *arena > (1LL << 30))
    throw UsageError(fmt::format("--arena '{}': {} (accepted: 4KiB .. 1GiB)", o.arena, arena ? "out of range" : why));
  const auto ring_bytes = parse_size(o.ring, &why);
  if (!ring_bytes || *ring_bytes < (1 << 20) || *ring_bytes > (4LL << 30))
    throw UsageError(
        fmt::format("--ring '{}': {} (accepted: 1MiB .. 4GiB)", o.ring, ring_bytes ? "out of range" : why));
  const std::int64_t arena_pages = *arena / 4096;
  if (o.batch_pages < 1 || o.batch_pages > arena_pages)
    throw UsageError(
        fmt::format("--batch-pages {}: out of range [1, {}] (the arena's pages)", o.batch_pages, arena_pages));
  std::int64_t duration_ns = 0;
  if (!o.duration.empty()) {
    auto d = parse_duration_ns(o.duration, &why);
    if (!d || *d <= 0)
      throw UsageError(fmt::format("--duration '{}': {} (accepted: a positive duration like 10s)", o.duration,
                                   d ? "must be positive" : why));
    duration_ns = *d;
  }
  std::int64_t threshold_ns = 0;
  if (!o.stall_threshold.empty()) {
    auto d = parse_duration_ns(o.stall_threshold, &why);
    if (!d || *d <= 0)
      throw UsageError(fmt::format("--stall-threshold '{}': {}", o.stall_threshold, d ? "must be positive" : why));
    threshold_ns = *d;
  }
  std::unique_ptr<sink::OutputDir> out;
  if (!o.out.empty()) {
    try {
      out = std::make_unique<sink::OutputDir>(o.out);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }
  const std::string lib = find_library();
  if (lib.empty())
    throw RuntimeError(
        "cannot find libshootdown_probe.so next to the binary or in the build tree (set SHOOTDOWN_PROBE_LIB)");

  // --- prepare --------------------------------------------------------------
  sys::StopSignals signals;
  const std::uint64_t capacity = static_cast<std::uint64_t>(*ring_bytes) / 8;
  const std::size_t shm_len = sizeof(sd_probe_shm) + capacity * 8;
  // No MFD_CLOEXEC: the command inherits it (the library closes it at once).
  // Anonymous (no name anyone can open), mode 0600, size sealed after sizing:
  // the library refuses any fd that is not exactly this (probe.c).
  const int mfd = ::memfd_create("shootdown-probe", MFD_ALLOW_SEALING);
  if (mfd < 0) throw RuntimeError(fmt::format("memfd_create: {}", std::strerror(errno)));
  struct FdGuard {
    int fd;
    ~FdGuard() { ::close(fd); }
  } guard{mfd};
  if (::fchmod(mfd, 0600) != 0 || ::ftruncate(mfd, static_cast<off_t>(shm_len)) != 0 ||
      ::fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    throw RuntimeError(fmt::format("sizing the probe ring: {}", std::strerror(errno)));
  void* base = ::mmap(nullptr, shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
  if (base == MAP_FAILED) throw RuntimeError(fmt::format("mapping the probe ring: {}", std::strerror(errno)));
  struct MapGuard {
    void* p;
    std::size_t n;
    ~MapGuard() { ::munmap(p, n); }
  } map_guard{base, shm_len};
  auto* shm = static_cast<sd_probe_shm*>(base);
  shm->magic = SD_PROBE_MAGIC;
  shm->version = SD_PROBE_VERSION;
  shm->cpu = cpu;
  shm->batch_pages = static_cast<std::uint32_t>(o.batch_pages);
  shm->arena_bytes = static_cast<std::uint64_t>(arena_pages) * 4096;
  shm->capacity = capacity;
  shm->sched_fifo = o.rt ? 1u : 0u;
  const std::uint64_t* ring = sd_probe_ring(shm);

  Result r;
  r.run_id = fmt::format("probe-{}-{}", ::getpid(), std::time(nullptr));
  r.started_at = iso_now();
  r.command_line = read_cmdline_self();
  r.env = sys::read_environment();
  r.plan.culprit_cpu = -1;
  r.plan.victim_cpus = {cpu};
  r.plan.cpu_choice = o.cpu >= 0 ? "given" : "default: the last online CPU";
  r.plan.chunk_size = r.plan.chunk_size_requested = static_cast<std::int64_t>(shm->arena_bytes);
  r.plan.batch = static_cast<std::int64_t>(o.batch_pages) * 4096;
  r.plan.report_every = 32LL << 20;
  r.plan.release = "probe";
  r.plan.trigger = "command";
  r.plan.trace = "on";
  r.plan.stall_threshold_ns = threshold_ns;
  r.plan.mlock = true;

  sys::TracerOptions topts;
  topts.cpus = topo.online.empty() ? std::vector<int>{cpu} : topo.online;
  topts.callchains = false;
  for (int c : topts.cpus)
    if (c != cpu) {
      topts.reader_cpu = c;  // never drain on the probe's CPU
      break;
    }
  auto tracer = sys::Tracer::open(topts, &why);
  if (!tracer) throw RuntimeError("not permitted: kernel tracing unavailable: " + why);
  tracer->start_reader();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // enabling tracepoints sends IPIs: let them pass
  auto irq0 = sys::read_interrupts();
  const sys::TscPoint first = sys::tsc_point();

  // --- run ------------------------------------------------------------------
  std::vector<std::string> env_s;
  std::string preload = lib;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("LD_PRELOAD=", 0) == 0)
      preload += ":" + kv.substr(11);
    else if (kv.rfind(std::string(SD_PROBE_ENV_FD) + "=", 0) != 0)
      env_s.push_back(kv);
  }
  env_s.push_back("LD_PRELOAD=" + preload);
  env_s.push_back(fmt::format("{}={}", SD_PROBE_ENV_FD, mfd));
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t child = -1;
  const int rc = ::posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0) throw RuntimeError(fmt::format("cannot run '{}': {}", o.command[0], std::strerror(rc)));
  std::string command;
  for (auto& a : o.command) command += (command.empty() ? "" : " ") + a;
  std::fprintf(stderr, "shootdown probe: pid %d (%s), probe thread on cpu%d; %s\n", child, command.c_str(), cpu,
               duration_ns ? "for the given duration" : "until the command exits");
  std::fflush(stderr);

  std::vector<std::uint64_t> ticks;  // batch-end TSC values, in order
  auto drain = [&] {
    const std::uint64_t count = __atomic_load_n(&shm->count, __ATOMIC_ACQUIRE);
    std::uint64_t c = shm->consumed;
    for (; c < count; ++c) ticks.push_back(ring[c % capacity]);
    __atomic_store_n(&shm->consumed, c, __ATOMIC_RELEASE);
  };
  const std::int64_t t0 = sys::mono_now_ns();
  int child_status = 0;
  bool child_done = false;
  std::string stop_reason = "command exited";
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    drain();
    if (sys::StopSignals::stop_requested()) {
      stop_reason = fmt::format("interrupted by signal {}", sys::StopSignals::pending());
      break;
    }
    if (::waitpid(child, &child_status, WNOHANG) == child) {
      child_done = true;
      break;
    }
    if (duration_ns && sys::mono_now_ns() - t0 >= duration_ns) {
      stop_reason = "--duration reached";
      break;
    }
    const auto st = __atomic_load_n(&shm->state, __ATOMIC_ACQUIRE);
    if (st == SD_PROBE_FAILED || st == SD_PROBE_OVERRUN) break;
  }
  __atomic_store_n(&shm->stop, 1u, __ATOMIC_RELAXED);
  for (int i = 0; i < 100 && !child_done && __atomic_load_n(&shm->state, __ATOMIC_ACQUIRE) == SD_PROBE_RUNNING; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  drain();
  const sys::TscPoint last = sys::tsc_point();
  auto irq1 = sys::read_interrupts();
  KernelTrace kt = tracer->stop();
  if (!child_done) {  // --duration or a signal: do not leave the command behind
    ::kill(child, SIGTERM);
    while (::waitpid(child, &child_status, 0) < 0 && errno == EINTR) {}
  }
  const int sig = sys::StopSignals::pending();
  const auto state = __atomic_load_n(&shm->state, __ATOMIC_ACQUIRE);
  if (shm->claimed == 0)
    throw RuntimeError(
        fmt::format("the probe never started in '{}' (a static or setuid binary ignores LD_PRELOAD; a shell wrapper "
                    "that clears the environment too)",
                    o.command[0]));
  if (state == SD_PROBE_FAILED) throw RuntimeError(fmt::format("the probe failed inside the command: {}", shm->error));

  // --- report ---------------------------------------------------------------
  if (state == SD_PROBE_OVERRUN)
    r.warnings.push_back("probe ring full (the tool fell behind): measurement ended early; raise --ring");
  if (!shm->mlocked)
    r.warnings.push_back("probe arena/ring not mlocked (RLIMIT_MEMLOCK): page faults may show as stalls");
  if (!child_done || !WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) {
    r.complete = child_done && WIFEXITED(child_status);
    if (!child_done)
      r.incomplete_reason = stop_reason;
    else if (WIFSIGNALED(child_status))
      r.warnings.push_back(fmt::format("command killed by signal {}", WTERMSIG(child_status)));
    else
      r.warnings.push_back(fmt::format("command exited with status {}", WEXITSTATUS(child_status)));
  }
  r.exit_signal = sig;
  const sys::TscClock clock = sys::TscClock::from(first, last);
  r.env.tsc_hz = r.env.tsc_hz_pre = clock.hz();
  VictimSamples v;
  v.cpu = cpu;
  v.pages_per_batch = o.batch_pages;
  v.start_ns = clock.to_mono(shm->start_tsc);
  v.end_ns.reserve(ticks.size());
  v.lat_ns.reserve(ticks.size());
  std::int64_t prev = v.start_ns;
  for (std::uint64_t t : ticks) {
    const std::int64_t e = clock.to_mono(t);
    v.end_ns.push_back(e);
    v.lat_ns.push_back(e - prev);
    prev = e;
  }
  r.measure_start_ns = v.start_ns;
  r.measure_end_ns = v.end_ns.empty() ? v.start_ns : v.end_ns.back();
  r.victims.push_back(std::move(v));
  r.trace = std::move(kt);
  if (irq0 && irq1) {
    r.interrupts_span_ns = irq1->mono_ns - irq0->mono_ns;
    for (int c : irq1->cpus) {
      CpuCounters cc;
      cc.cpu = c;
      cc.role = c == cpu ? "victim" : "other";
      cc.tlb = sys::interrupts_delta(*irq0, *irq1, "TLB", c);
      cc.cal = sys::interrupts_delta(*irq0, *irq1, "CAL", c);
      cc.loc = sys::interrupts_delta(*irq0, *irq1, "LOC", c);
      cc.res = sys::interrupts_delta(*irq0, *irq1, "RES", c);
      r.counters.push_back(cc);
    }
  }
  for (auto& w : sys::plan_warnings(r.env, r.plan)) r.env.warnings.push_back(w);
  build_intervals(r);
  const Analysis a = analyze(r);

  // The probe's own summary: what the innocent thread lost to shootdowns.
  AttributionOptions ao;
  ao.stall_threshold_ns = threshold_ns;
  ao.stall_factor = r.plan.stall_factor;
  ao.span_start_ns = r.measure_start_ns;
  ao.span_end_ns = r.measure_end_ns;
  const Attribution at = attribute(r.victims, r.trace, ao);
  std::string summary;
  if (at.available && !at.victims.empty()) {
    const VictimAttribution& va = at.victims.front();
    const auto& vs = r.victims.front();
    summary += fmt::format("probe cpu{}: {} samples of {} pages over {}, median {}\n", va.cpu, vs.size(), o.batch_pages,
                           format_duration_ns(r.measure_end_ns - r.measure_start_ns),
                           format_duration_ns(va.baseline_median_ns));
    summary += fmt::format("  shootdowns received {} (tlb_flush reason 1 on cpu{}), matched to samples {}\n",
                           va.shootdowns_received, va.cpu, va.shootdowns_matched);
    summary +=
        fmt::format("  tlb-shootdown samples {}, stall lost {}; per shootdown p50 {} p90 {} max {}\n",
                    va.samples[static_cast<int>(StallLabel::kTlbShootdown)],
                    format_duration_ns(va.stall_ns[static_cast<int>(StallLabel::kTlbShootdown)]),
                    format_duration_ns(va.stall_per_shootdown.p50), format_duration_ns(va.stall_per_shootdown.p90),
                    format_duration_ns(va.stall_per_shootdown.max));
    summary += fmt::format(
        "  other IPIs {}, unexplained stalls {} (> {})\n", va.samples[static_cast<int>(StallLabel::kOtherIpi)],
        va.samples[static_cast<int>(StallLabel::kUnexplained)], format_duration_ns(va.stall_threshold_ns));
    summary += "  who sent them: shootdown blame -- " + command + "\n";
  }
  finish_run_outputs(r, a, out.get(), o.json);
  std::fputs(summary.c_str(), o.json ? stderr : stdout);
  std::fflush(stdout);
  return sig ? sys::exit_code_for_signal(sig) : kExitOk;
}

}  // namespace

Command add_probe(CLI::App& root) {
  auto o = std::make_shared<ProbeOpts>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("probe", "Run a victim thread inside another program");
  app->add_option("--cpu", o->cpu, "CPU for the probe thread (default: the last online CPU)")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--duration", o->duration, "Stop after this long (the command gets SIGTERM); default: command exit");
  app->add_option("--out", o->out, "Write result.json, timeline.csv, ... into this directory");
  app->add_flag("--json", o->json, "Print the result JSON instead of the console summary");
  app->add_option("--arena", o->arena, "Probe arena size (its own mlocked memory; default 2MiB)");
  app->add_option("--batch-pages", o->batch_pages,
                  "Pages written per timed sample (default 512: one pass over the arena)");
  app->add_option("--ring", o->ring, "Shared sample ring size (8 bytes per sample; default 16MiB)");
  app->add_option("--stall-threshold", o->stall_threshold, "Stall threshold (default: 8 x median)");
  app->add_flag("--rt", o->rt, "Run the probe thread SCHED_FIFO 1, so it owns its CPU on a loaded machine (root)");
  app->add_option("command", o->command, "Command to run with the probe (after --)");
  app->footer(
      "Preloads libshootdown_probe.so into CMD (LD_PRELOAD). Its constructor starts\n"
      "one thread pinned to --cpu that writes its own small arena and timestamps\n"
      "every batch (fenced TSC) into shared memory; the tool traces kernel events\n"
      "meanwhile and labels each of the probe's stalls (tlb-shootdown, other-ipi,\n"
      "timer, ...). The probe interposes nothing and takes no signals.\n\n"
      "EXAMPLES:\n"
      "  shootdown probe -- ./my-app\n"
      "  shootdown probe --cpu 3 --duration 30s --out probe-run -- ./my-server\n\n"
      "EXIT STATUS: 0 done, 1 not permitted or error, 2 bad input, 130/143 interrupted.");
  return {app, [o]() { return execute_probe(*o); }};
}

}  // namespace shootdown::cmd
