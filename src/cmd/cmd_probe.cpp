// SPDX-License-Identifier: Apache-2.0
// shootdown probe: run a command with the probe library preloaded, so one
// pinned victim thread lives inside it (only threads of the same mm receive
// its shootdowns), trace kernel events with sys::Tracer meanwhile, and
// analyse the probe's samples exactly like a run's victim.
// plan (validate) → prepare (memfd ring, Tracer on every online CPU) → run
// (spawn with LD_PRELOAD + SHOOTDOWN_PROBE_FD, drain the ring) → report
// (Result → analyze → console/JSON/--out files) → restore (Tracer closes
// its fds; the memfd goes with its last mapping).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cli/run_options.hpp"
#include "cmd/blame_input.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "cmd/trace_session.hpp"
#include "core/analysis.hpp"
#include "core/compaction.hpp"
#include "core/stats.hpp"
#include "core/cpulist.hpp"
#include "core/units.hpp"
#include "experiment/finish.hpp"
#include "probe/probe_shm.h"
#include "sink/atomic_writer.hpp"
#include "sink/blame_out.hpp"
#include "sink/console.hpp"
#include "sink/json.hpp"
#include "sys/child.hpp"
#include "sys/cpus.hpp"
#include "sys/fs.hpp"
#include "sys/interrupts.hpp"
#include "sys/perf_sampler.hpp"
#include "sys/perf_trace.hpp"
#include "sys/user_symbols.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

extern char** environ;

#ifndef SHOOTDOWN_PROBE_BUILD_PATH
#define SHOOTDOWN_PROBE_BUILD_PATH ""
#endif

namespace shootdown::cmd {

namespace {

// Raw samples a long probe keeps around each IPI on its CPU, and the kernel
// events kept around raw samples when the rest fold.
constexpr std::int64_t kProbeKeepNs = 2'000'000;
constexpr std::int64_t kProbeEventMarginNs = 10'000'000;
constexpr std::int64_t kProbeMemoryLeast = 64LL << 20;

struct ProbeOpts {
  std::string cpu;  // cpulist; default: the last online CPU
  std::string duration;
  std::string out;
  bool json = false;
  std::string arena = "2MiB";
  int batch_pages = 512;
  std::string ring = "16MiB";
  std::string stall_threshold;
  bool rt = false;
  int pid = 0;         // -p: refused with what to do instead
  std::string output;  // -o FILE: the console report
  bool no_callsites = false;
  std::string only;          // --only PID|PROGRAM,...: which processes to report (default all)
  std::string memory_limit;  // --memory-limit SIZE ("" = kMemoryLimitDefault)
  std::vector<std::string> command;
};

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

// The shared slots and rings: a memfd the command inherits (no MFD_CLOEXEC:
// the library keeps it open so the images it execs and the children it
// starts find it), mapped here for the tool's side.
class ProbeShm {
 public:
  ProbeShm(std::uint32_t ncpus, std::uint32_t nslots, std::uint64_t capacity)
      : len_(sd_probe_layout(nullptr, ncpus, nslots, capacity)) {
    if (len_ == 0) throw RuntimeError(fmt::format("probe region for {} CPUs and {} slots: too large", ncpus, nslots));
    // Anonymous (no name anyone can open), mode 0600, size sealed after sizing:
    // the library refuses any fd that is not exactly this (probe.c).
    fd_ = ::memfd_create("shootdown-probe", MFD_ALLOW_SEALING);
    if (fd_ < 0) throw RuntimeError(fmt::format("memfd_create: {}", std::strerror(errno)));
    if (::fchmod(fd_, 0600) != 0 || ::ftruncate(fd_, static_cast<off_t>(len_)) != 0 ||
        ::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
      throw RuntimeError(fmt::format("sizing the probe ring: {}", std::strerror(errno)));
    void* base = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (base == MAP_FAILED) throw RuntimeError(fmt::format("mapping the probe ring: {}", std::strerror(errno)));
    shm_ = static_cast<sd_probe_shm*>(base);
    shm_->ncpus = ncpus;
    shm_->nslots = nslots;
    shm_->capacity = capacity;
    sd_probe_layout(shm_, ncpus, nslots, capacity);
  }
  ~ProbeShm() {
    if (shm_) ::munmap(shm_, len_);
    if (fd_ >= 0) ::close(fd_);
  }
  ProbeShm(const ProbeShm&) = delete;
  ProbeShm& operator=(const ProbeShm&) = delete;
  sd_probe_shm* operator->() const { return shm_; }
  sd_probe_shm* get() const { return shm_; }
  sd_probe_slot& slot(int k) const { return sd_probe_slots(shm_)[k]; }
  int fd() const { return fd_; }

 private:
  std::size_t len_;
  int fd_ = -1;
  sd_probe_shm* shm_ = nullptr;
};

class ProbeTool final : public Tool {
 public:
  explicit ProbeTool(const ProbeOpts& o) : o_(o) {}

  void plan() override {
    if (o_.pid != 0)
      throw UsageError(fmt::format(
          "-p {}: a probe cannot join a running process without injecting code into it; use shootdown blame -p {} "
          "now (who sends its shootdowns), or shootdown probe -- CMD ARGS at its next start",
          o_.pid, o_.pid));
    if (o_.command.empty()) throw UsageError("nothing to probe: give -- CMD ARGS");
    check_output_file("-o", o_.output);
    topo_ = sys::read_topology();
    if (o_.cpu.empty()) {
      if (topo_.online.empty()) throw UsageError("cannot list online CPUs: give --cpu");
      cpus_ = {topo_.online.back()};
    } else {
      std::string cwhy;
      auto list = parse_cpulist(o_.cpu, &cwhy);
      if (!list || list->empty())
        throw UsageError(fmt::format("--cpu '{}': {} (accepted: a CPU list such as 3 or 2,3 or 4-7)", o_.cpu,
                                     list ? "empty" : cwhy));
      if (list->size() > SD_PROBE_MAX_CPUS)
        throw UsageError(fmt::format("--cpu '{}': {} CPUs; accepted: at most {} probe CPUs (CONFIG_NR_CPUS)", o_.cpu,
                                     list->size(), SD_PROBE_MAX_CPUS));
      for (int c : *list)
        if (!topo_.online.empty() && !topo_.is_online(c))
          throw UsageError(
              fmt::format("--cpu {}: cpu{} is not online (online: {})", o_.cpu, c, format_cpulist(topo_.online)));
      cpus_ = *list;
    }
    cpu_ = cpus_.front();
    std::string why;
    // Each raw sample costs 8 bytes while probing and ~24 more in its
    // analysis: the limit holds limit / 32 of them (all probes together).
    std::int64_t limit = kMemoryLimitDefault;
    if (!o_.memory_limit.empty()) {
      const auto m = parse_size(o_.memory_limit, &why);
      if (!m || *m < kProbeMemoryLeast)
        throw UsageError(fmt::format("--memory-limit '{}': {} (accepted: a size of at least 64MiB, e.g. 512MiB)",
                                     o_.memory_limit, m ? "below the least, 64MiB" : why));
      limit = *m;
    }
    max_samples_ = static_cast<std::size_t>(limit / 32);
    const auto arena = parse_size(o_.arena, &why);
    if (!arena || *arena < 4096 || *arena > (1LL << 30))
      throw UsageError(
          fmt::format("--arena '{}': {} (accepted: 4KiB .. 1GiB)", o_.arena, arena ? "out of range" : why));
    const auto ring_bytes = parse_size(o_.ring, &why);
    if (!ring_bytes || *ring_bytes < (1 << 20) || *ring_bytes > (4LL << 30))
      throw UsageError(
          fmt::format("--ring '{}': {} (accepted: 1MiB .. 4GiB)", o_.ring, ring_bytes ? "out of range" : why));
    // --ring is per probe: each process image of the target gets its own.
    capacity_ = static_cast<std::uint64_t>(*ring_bytes) / 8;
    arena_pages_ = *arena / 4096;
    if (o_.batch_pages < 1 || o_.batch_pages > arena_pages_)
      throw UsageError(
          fmt::format("--batch-pages {}: out of range [1, {}] (the arena's pages)", o_.batch_pages, arena_pages_));
    if (!o_.duration.empty()) duration_ns_ = cli::positive_duration("--duration", o_.duration);
    if (!o_.stall_threshold.empty()) {
      auto d = parse_duration_ns(o_.stall_threshold, &why);
      if (!d || *d <= 0)
        throw UsageError(fmt::format("--stall-threshold '{}': {}", o_.stall_threshold, d ? "must be positive" : why));
      threshold_ns_ = *d;
    }
    if (!o_.out.empty()) {
      try {
        out_ = std::make_unique<sink::OutputDir>(o_.out);
      } catch (const std::exception& e) {
        throw UsageError(e.what());
      }
    }
    if (!o_.only.empty()) {
      std::size_t b = 0;
      while (b <= o_.only.size()) {
        const std::size_t e = std::min(o_.only.find(',', b), o_.only.size());
        const std::string item = o_.only.substr(b, e - b);
        if (item.empty())
          throw UsageError(
              fmt::format("--only '{}': an empty item; accepted: PIDs or program names, comma-separated "
                          "(e.g. --only xz or --only 1234,java)",
                          o_.only));
        only_.push_back(item);
        b = e + 1;
      }
    }
    lib_ = find_library();
    if (lib_.empty())
      throw RuntimeError(
          "cannot find libshootdown_probe.so next to the binary or in the build tree (set SHOOTDOWN_PROBE_LIB)");
    for (auto& a : o_.command) command_ += (command_.empty() ? "" : " ") + a;
  }

  void prepare() override {
    nslots_ = static_cast<int>(cpus_.size()) + SD_PROBE_SPARE_SLOTS;
    series_.assign(static_cast<std::size_t>(nslots_), Series{});
    exited_.assign(static_cast<std::size_t>(nslots_), false);
    shm_.emplace(static_cast<std::uint32_t>(cpus_.size()), static_cast<std::uint32_t>(nslots_), capacity_);
    sd_probe_shm* shm = shm_->get();
    shm->magic = SD_PROBE_MAGIC;
    shm->version = SD_PROBE_VERSION;
    shm->batch_pages = static_cast<std::uint32_t>(o_.batch_pages);
    shm->arena_bytes = static_cast<std::uint64_t>(arena_pages_) * 4096;
    shm->sched_fifo = o_.rt ? 1u : 0u;
    for (std::size_t k = 0; k < cpus_.size(); ++k) {
      sd_probe_cpus(shm)[k] = cpus_[k];
      sd_probe_holders(shm)[k] = -1;
    }
    for (int k = 0; k < nslots_; ++k) {
      shm_->slot(k).successor = -1;
      shm_->slot(k).cpu = -1;
    }

    Plan& p = r_.plan;
    p.culprit_cpu = -1;
    p.victim_cpus = {cpu_};
    p.cpu_choice = !o_.cpu.empty() ? "given" : "default: the last online CPU";
    p.chunk_size = p.chunk_size_requested = static_cast<std::int64_t>(shm->arena_bytes);
    p.batch = static_cast<std::int64_t>(o_.batch_pages) * 4096;
    // Intervals by time (10 ms, as run's default): by size (32 MiB, 16 of
    // the probe's 2 MiB batches) a 20 s probe wrote 79 k intervals and took
    // 7 s to post-process; a long probe's raw budget would hold a million.
    p.report_every = 32LL << 20;
    p.report_every_ns = 10'000'000;
    p.release = ReleaseStrategy::kProbe;
    p.trigger = Trigger::kCommand;
    p.trace = TraceMode::kOn;
    p.stall_threshold_ns = threshold_ns_;
    p.mlock = true;

    std::string why;
    // Every online CPU is traced (the target's threads may run anywhere): the
    // perf rings share a budget (core/compaction.hpp).
    auto topts = tracer_options(topo_.online.empty() ? std::vector<int>{cpu_} : topo_.online, -1, false, cpu_);
    topts.ring_pages = ring_pages_tracing_every_cpu(topts.cpus.size());
    tracer_ = sys::Tracer::open(topts, &why);
    if (!tracer_) throw RuntimeError("not permitted: kernel tracing unavailable: " + why);
    tracer_->start_reader();
    if (!o_.no_callsites) {
      // Who sends them: reason-4 flushes of the target with user stacks
      // (blame's sampler), so the report names the call sites.
      sys::SamplerOptions so;
      so.cpus = topo_.online.empty() ? std::vector<int>{cpu_} : topo_.online;
      std::string swhy;
      sampler_ = sys::FlushSampler::open(so, &swhy);
      if (sampler_)
        sampler_->start_reader();
      else
        r_.warnings.push_back("call sites unavailable (" + swhy + "): shootdown blame -- CMD");
    }
    pre_ = sys::calibrate(50'000'000);                           // folds convert with it while the command runs
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // enabling tracepoints sends IPIs: let them pass
    irq0_ = sys::read_interrupts();
    first_ = sys::tsc_point();
    events_folded_until_ = pre_.to_mono(first_.tsc);
  }

  void run() override {
    std::vector<std::string> env;
    std::string preload = lib_;
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      if (kv.rfind("LD_PRELOAD=", 0) == 0)
        preload += ":" + kv.substr(11);
      else if (kv.rfind(std::string(SD_PROBE_ENV_FD) + "=", 0) != 0)
        env.push_back(kv);
    }
    env.push_back("LD_PRELOAD=" + preload);
    env.push_back(fmt::format("{}={}", SD_PROBE_ENV_FD, shm_->fd()));
    child_ = sys::ChildProcess::spawn(o_.command, env);
    std::fprintf(stderr, "shootdown probe: pid %d (%s), probe thread on cpu%s; %s\n", child_.pid(), command_.c_str(),
                 format_cpulist(cpus_).c_str(), duration_ns_ ? "for the given duration" : "until the command exits");
    std::fflush(stderr);

    Watch w;
    w.child = &child_;
    w.duration_ns = duration_ns_;
    w.period_ms = 5;
    w.tick = [this] {
      drain();
      sweep();
      return false;
    };
    const StopCause cause = watch(w);
    if (cause == StopCause::kSignal)
      stop_reason_ = fmt::format("interrupted by signal {}", sys::StopSignals::pending());
    else if (cause == StopCause::kDuration)
      stop_reason_ = "--duration reached";
    // The end: every probe still measuring stops at its next batch.
    stopping_ = true;
    sd_probe_shm* shm = shm_->get();
    for (int k = 0; k < nslots_; ++k) {
      sd_probe_slot& sl = shm_->slot(k);
      std::uint32_t none = SD_PROBE_STOP_NONE;
      __atomic_compare_exchange_n(&sl.stop, &none, std::uint32_t{SD_PROBE_STOP_TOOL}, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE);
    }
    for (int i = 0; i < 100 && running_probes() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      sweep();
    }
    drain();
    last_ = sys::tsc_point();
    irq1_ = sys::read_interrupts();
    r_.trace = tracer_->stop();
    r_.trace.folded = std::move(folded_events_);
    if (sampler_) sampler_data_ = sampler_->stop();
    child_done_ = child_.done();
    child_.terminate();  // --duration or a signal: do not leave the command behind
    r_.exit_signal = sys::StopSignals::pending();
    if (shm->claimed == 0)
      throw RuntimeError(
          fmt::format("the probe never started in '{}' (a static or setuid binary ignores LD_PRELOAD; so does a "
                      "program started with a cleared environment)",
                      o_.command[0]));
  }

  void analyze() override {
    sd_probe_shm* shm = shm_->get();
    const sys::TscClock clock = sys::TscClock::from(first_, last_);
    // The processes of the target in claim order.
    std::vector<int> order;
    for (int k = 0; k < nslots_; ++k)
      if (shm_->slot(k).pid != 0) order.push_back(k);
    std::sort(order.begin(), order.end(), [&](int x, int y) { return shm_->slot(x).seq < shm_->slot(y).seq; });
    std::string failures;
    bool any_samples = false;
    for (int k : order) {
      const sd_probe_slot& sl = shm_->slot(k);
      ProbeProcess p;
      p.pid = sl.pid;
      p.ppid = sl.ppid;
      p.comm = std::string(sl.comm, strnlen(sl.comm, sizeof sl.comm));
      p.image = static_cast<int>(sl.seq);
      p.cpu = sl.cpu;
      const Series& se = series_[k];
      p.samples = static_cast<std::int64_t>(se.samples());
      if (!se.tail.empty()) p.probed_ns = clock.to_mono(se.tail.back()) - clock.to_mono(sl.start_tsc);
      if (sl.successor >= 0 && sl.successor < nslots_) {
        p.successor_pid = shm_->slot(sl.successor).pid;
        const char* c = shm_->slot(sl.successor).comm;
        p.successor_comm = std::string(c, strnlen(c, sizeof shm_->slot(sl.successor).comm));
      }
      p.fate = fate_of(k);
      if (p.fate == ProbeFate::kFailed) {
        p.error = std::string(sl.error, strnlen(sl.error, sizeof sl.error));
        failures += fmt::format("{}pid {} ({}): {}", failures.empty() ? "" : "; ", p.pid, p.comm, p.error);
      }
      any_samples = any_samples || p.samples > 0;
      processes_.push_back(p);
      slot_of_.push_back(k);
    }
    if (!any_samples) {
      // Never empty tables: say why in one line (exit 1).
      if (!failures.empty()) throw RuntimeError("the probe failed inside the command: " + failures);
      std::string seen;
      for (const auto& p : processes_)
        seen += fmt::format("{}pid {} {} ({})", seen.empty() ? "" : ", ", p.pid, p.comm, probe_fate_name(p.fate));
      // A probe that ran for a while and completed no batch was kept off its
      // CPU (another real-time thread spinning there, CPU isolation, ...).
      std::string starved;
      for (int k : order) {
        const sd_probe_slot& sl = shm_->slot(k);
        if (sl.cpu >= 0 && sl.start_tsc != 0 && sl.end_tsc > sl.start_tsc &&
            clock.to_mono(sl.end_tsc) - clock.to_mono(sl.start_tsc) > 10'000'000)
          starved = fmt::format(
              "; the probe of pid {} ran {} on cpu{} without completing a batch: is a real-time "
              "thread spinning there (ps -eLo cls,rtprio,psr,comm)?",
              sl.pid, format_duration_ns(clock.to_mono(sl.end_tsc) - clock.to_mono(sl.start_tsc)), sl.cpu);
      }
      throw RuntimeError(fmt::format("no sample arrived from '{}' ({}; processes seen: {}){}", command_, stop_reason_,
                                     seen.empty() ? "none" : seen, starved));
    }
    if (!failures.empty()) r_.warnings.push_back("the probe failed in " + failures);
    if (shm->unslotted > 0)
      r_.warnings.push_back(
          fmt::format("{} more processes of the target found every one of the {} probe slots "
                      "taken: not probed",
                      shm->unslotted, nslots_));
    const int status = child_.status();
    if (!child_done_ || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      r_.complete = child_done_ && WIFEXITED(status);
      if (!child_done_)
        r_.incomplete_reason = stop_reason_;
      else
        r_.warnings.push_back("command " + child_.describe_exit());
    }
    r_.env.tsc_hz = r_.env.tsc_hz_pre = clock.hz();
    if (irq0_ && irq1_) {
      // interrupts_start_ns stays 0: the attribution span is each probe's
      // sampled span (the snapshots also hold the command's start-up).
      r_.interrupts_span_ns = irq1_->mono_ns - irq0_->mono_ns;
    }
    exp::FinishOptions fo;
    fo.run_id = fmt::format("probe-{}-{}", ::getpid(), std::time(nullptr));
    fo.doctor = false;
    exp::finish_result(r_, fo);
    // One result per process image that was measured, each analysed on its
    // own: its probe thread (tid), its CPU, its span.
    for (std::size_t i = 0; i < processes_.size(); ++i) {
      const ProbeProcess& p = processes_[i];
      const int k = slot_of_[i];
      if (p.samples == 0 || !selected(p)) continue;
      const sd_probe_slot& sl = shm_->slot(k);
      Result r = r_;
      r.probe = p;
      r.probe_seen = processes_;
      r.plan.victim_cpus = {p.cpu};
      if (!sl.mlocked)
        r.warnings.push_back("probe arena/ring not mlocked (RLIMIT_MEMLOCK): page faults may show as stalls");
      if (p.fate == ProbeFate::kOverrun)
        r.warnings.push_back("probe ring full (the tool fell behind): measurement ended early; raise --ring");
      Series& se = series_[k];
      VictimSamples v;
      v.cpu = p.cpu;
      v.tid = sl.tid;
      v.pages_per_batch = o_.batch_pages;
      // A probe past its --memory-limit: the raw windows kept around IPIs,
      // then the raw tail (partial: index[] numbers the samples).
      const bool partial = !se.folded.empty();
      v.start_ns = clock.to_mono(partial && !se.kept_index.empty() ? se.kept_start.front() : se.prev);
      const std::size_t n = se.kept_index.size() + se.tail.size();
      v.end_ns.reserve(n);
      v.lat_ns.reserve(n);
      if (partial) v.index.reserve(n);
      for (std::size_t j = 0; j < se.kept_index.size(); ++j) {
        const std::int64_t e = clock.to_mono(se.kept_end[j]);
        v.end_ns.push_back(e);
        v.lat_ns.push_back(e - clock.to_mono(se.kept_start[j]));
        v.index.push_back(static_cast<std::int64_t>(se.kept_index[j]));
      }
      std::int64_t prev = clock.to_mono(se.prev);
      for (std::size_t j = 0; j < se.tail.size(); ++j) {
        const std::int64_t e = clock.to_mono(se.tail[j]);
        v.end_ns.push_back(e);
        v.lat_ns.push_back(e - prev);
        if (partial) v.index.push_back(static_cast<std::int64_t>(se.tail_first + j));
        prev = e;
      }
      se.tail = {};
      r.measure_start_ns = clock.to_mono(sl.start_tsc);
      r.measure_end_ns = v.end_ns.back();
      r.victims.push_back(std::move(v));
      if (irq0_ && irq1_) r.counters = exp::cpu_counters(*irq0_, *irq1_, r.plan);
      build_intervals(r);
      if (partial) {
        hdr::Histogram all = make_latency_histogram();
        for (const Interval& iv : se.folded) iv.add_to(all);
        const Summary sum = summarize(all);
        r.warnings.push_back(fmt::format(
            "the probe's samples passed --memory-limit ({} raw samples at most): {} of them ({}) are kept only as {} "
            "interval histograms (p50 {}, max {}); raw samples are kept for the last {} and within {} of each of "
            "the {} IPIs on cpu{} in the folded stretch{}, and the attribution covers those",
            max_samples_, se.folded_samples, format_duration_ns(se.folded.back().end_ns - se.folded.front().start_ns),
            se.folded.size(), format_duration_ns(std::llround(sum.p50)), format_duration_ns(std::llround(sum.max)),
            format_duration_ns(r.measure_end_ns - clock.to_mono(se.prev)), format_duration_ns(kProbeKeepNs), se.ipis,
            p.cpu,
            se.ipis_dropped ? fmt::format(" ({} samples near IPIs folded too: the raw windows took half the budget)",
                                          se.ipis_dropped)
                            : ""));
        r.intervals.insert(r.intervals.begin(), se.folded.begin(), se.folded.end());
        std::stable_sort(r.intervals.begin(), r.intervals.end(),
                         [](const Interval& x, const Interval& y) { return x.start_ns < y.start_ns; });
      }
      Analysis a = shootdown::analyze(r);
      results_.push_back({std::move(r), std::move(a)});
    }
    if (results_.empty()) {
      std::string seen;
      for (const auto& p : processes_)
        if (p.samples > 0) seen += fmt::format("{}{} (pid {})", seen.empty() ? "" : ", ", p.comm, p.pid);
      throw RuntimeError(fmt::format("--only {}: no measured process matches (measured: {})", o_.only, seen));
    }
    r_.trace = {};
    if (sampler_) {
      BlameInput in = blame_input(child_.pid(), command_, sampler_data_, syms_, irq0_ ? &*irq0_ : nullptr,
                                  irq1_ ? &*irq1_ : nullptr);
      blame_opts_.top = 3;
      callsites_ = blame(in, blame_opts_);
      sampler_data_ = {};
      BlameReport top = *callsites_;
      if (top.sites.size() > 10) top.sites.resize(10);  // result.json keeps the top 10; blame.json has all
      for (auto& [r, a] : results_) r.probe_callsites = top;
    }
    // The main result (console first, result.json in --out): the process
    // probed longest.
    std::stable_sort(results_.begin(), results_.end(),
                     [](const auto& x, const auto& y) { return x.first.probe->probed_ns > y.first.probe->probed_ns; });
  }

  int report() override {
    const std::string root = out_ ? out_->path() : std::string();
    std::string file_error;
    std::vector<std::string> dirs;
    for (std::size_t i = 0; i < results_.size(); ++i) {
      auto& [r, a] = results_[i];
      std::unique_ptr<sink::OutputDir> sub;
      sink::OutputDir* dir = out_.get();
      if (out_ && i > 0) {
        // The other processes: DIR/pid-PID-COMM/ (an image after exec keeps the pid).
        const std::string name = fmt::format("pid-{}-{}", r.probe->pid, safe_name(r.probe->comm));
        try {
          sub = std::make_unique<sink::OutputDir>(root + "/" + name);
        } catch (const std::exception& e) {
          file_error += std::string(file_error.empty() ? "" : "; ") + e.what();
          continue;
        }
        dir = sub.get();
      }
      std::string err = write_result_files_or_error(r, a, dir);
      if (i == 0 && dir && callsites_) {
        try {
          dir->write("blame.json", sink::blame_json(*callsites_));  // the call sites: blame's format
        } catch (const std::exception& e) {
          err += std::string(err.empty() ? "" : "; ") + e.what();
        }
      }
      if (!err.empty()) file_error += (file_error.empty() ? "" : "; ") + err;
      if (dir) dirs.push_back(dir->path());
    }
    std::string text;
    if (o_.json) {
      if (results_.size() == 1) {
        text = sink::result_to_string(results_.front().first, results_.front().second);
      } else {
        // Several processes: a JSON array of results, the longest-probed first.
        text = "[\n";
        for (std::size_t i = 0; i < results_.size(); ++i) {
          std::string one = sink::result_to_string(results_[i].first, results_[i].second);
          while (!one.empty() && one.back() == '\n') one.pop_back();
          text += one + (i + 1 < results_.size() ? ",\n" : "\n");
        }
        text += "]\n";
      }
    } else {
      text = sink::probe_processes(processes_, command_);
      for (const auto& [r, a] : results_) text += "\n" + sink::probe_summary(r, a, command_);
      if (callsites_)
        text += "\n" + sink::probe_callsites(*callsites_, blame_opts_, command_);
      else
        text += "\nwho sent them: shootdown blame -- " + command_ + "\n";
      if (!dirs.empty() && file_error.empty()) text += "results: " + fmt::format("{}", fmt::join(dirs, "/, ")) + "/\n";
    }
    emit_report(text, o_.output, stdout);
    if (!o_.output.empty()) std::fprintf(stderr, "shootdown probe: report in %s\n", o_.output.c_str());
    if (!file_error.empty()) throw RuntimeError("writing results: " + file_error);
    return kExitOk;
  }
  int interrupted_by() const override { return r_.exit_signal; }

 private:
  bool selected(const ProbeProcess& p) const {
    if (only_.empty()) return true;
    for (const auto& x : only_)
      if (x == p.comm || x == std::to_string(p.pid)) return true;
    return false;
  }

  static std::string safe_name(const std::string& s) {
    std::string o;
    for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
    return o.empty() ? "process" : o;
  }

  void drain() {
    sd_probe_shm* shm = shm_->get();
    for (int k = 0; k < nslots_; ++k) {
      sd_probe_slot& sl = shm_->slot(k);
      if (__atomic_load_n(&sl.pid, __ATOMIC_ACQUIRE) == 0) continue;
      const std::uint64_t* ring = sd_probe_ring(shm, k);
      const std::uint64_t count = __atomic_load_n(&sl.count, __ATOMIC_ACQUIRE);
      std::uint64_t c = sl.consumed;
      Series& se = series_[k];
      if (c < count && se.samples() == 0) se.prev = sl.start_tsc;
      for (; c < count; ++c) se.tail.push_back(ring[c % capacity_]);
      __atomic_store_n(&sl.consumed, c, __ATOMIC_RELEASE);
    }
    bound();
  }

  // Past the budget: the largest tail folds its oldest 1 Mi samples, then
  // the kernel events no raw sample needs any more are counted, not kept.
  void bound() {
    constexpr std::size_t kFold = std::size_t{1} << 20;
    for (;;) {
      std::size_t held = 0;
      int largest = -1;
      for (int k = 0; k < nslots_; ++k) {
        held += series_[k].tail.size() + series_[k].kept_index.size();
        if (largest < 0 || series_[k].tail.size() > series_[largest].tail.size()) largest = k;
      }
      if (held <= max_samples_ || largest < 0 || series_[largest].tail.size() < 2 * kFold) break;
      fold(largest, kFold);
    }
    fold_unheld_events();
  }

  static bool is_ipi(const KernelEvent& e) {
    return (e.type == EventType::kTlbFlush && e.a == kTlbRemoteShootdown) || e.type == EventType::kCallFunctionEntry ||
           e.type == EventType::kCallFunctionSingleEntry;
  }

  void fold(int k, std::size_t n) {
    Series& se = series_[k];
    const int cpu = shm_->slot(k).cpu;
    const std::int64_t start = pre_.to_mono(se.prev);
    std::vector<std::int64_t> end(n);
    for (std::size_t i = 0; i < n; ++i) end[i] = pre_.to_mono(se.tail[i]);
    std::vector<std::int64_t> ipis;
    if (tracer_) tracer_->event_times(cpu, start - kProbeKeepNs, end.back() + kProbeKeepNs, is_ipi, ipis);
    std::vector<bool> keep;
    mark_near(start, end, ipis, kProbeKeepNs, keep);
    se.ipis += static_cast<std::size_t>(
        std::count_if(ipis.begin(), ipis.end(), [&](std::int64_t t) { return t >= start && t < end.back(); }));
    hdr::Histogram h = make_latency_histogram();
    std::uint64_t from = se.prev;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t to = se.tail[i];
      // Raw windows take at most half the budget; beyond it they fold too.
      if (keep[i] && se.kept_index.size() < max_samples_ / (2 * static_cast<std::size_t>(nslots_))) {
        se.kept_index.push_back(se.tail_first + i);
        se.kept_start.push_back(from);
        se.kept_end.push_back(to);
      } else {
        if (keep[i]) ++se.ipis_dropped;
        h.record(std::max<std::int64_t>(1, end[i] - (i ? end[i - 1] : start)));
      }
      from = to;
    }
    Interval iv;
    iv.victim_cpu = cpu;
    iv.start_ns = start;
    iv.end_ns = end.back();
    iv.phase = Phase::kBaseline;
    iv.folded = true;
    iv.set_histogram(h);
    se.folded_samples += static_cast<std::size_t>(h.total_count());
    se.folded.push_back(std::move(iv));
    se.prev = se.tail[n - 1];
    se.tail.erase(se.tail.begin(), se.tail.begin() + static_cast<std::ptrdiff_t>(n));
    se.tail_first += n;
  }

  // Once a probe folded samples, the kernel events farther than
  // kProbeEventMarginNs from every raw sample (each probe's raw tail and the
  // windows kept around IPIs) are counted and dropped, up to the newest
  // sample of the probes still running.
  void fold_unheld_events() {
    if (!tracer_) return;
    bool folded_any = false;
    std::int64_t hi = INT64_MAX, newest = INT64_MIN;
    std::vector<std::pair<std::int64_t, std::int64_t>> kept, gaps;
    for (int k = 0; k < nslots_; ++k) {
      const Series& se = series_[k];
      if (se.samples() == 0) continue;
      folded_any = folded_any || !se.folded.empty();
      const std::int64_t a = pre_.to_mono(se.prev), b = se.tail.empty() ? a : pre_.to_mono(se.tail.back());
      kept.emplace_back(a, b);
      newest = std::max(newest, b);
      const auto st = __atomic_load_n(&shm_->slot(k).state, __ATOMIC_ACQUIRE);
      if (st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING) hi = std::min(hi, b);
      for (std::size_t i = 0; i < se.kept_index.size(); ++i) {
        const std::int64_t x = pre_.to_mono(se.kept_start[i]), y = pre_.to_mono(se.kept_end[i]);
        if (y + kProbeEventMarginNs > events_folded_until_) kept.emplace_back(x, y);
      }
    }
    if (!folded_any) return;  // a probe that fits keeps every event
    hi = (hi == INT64_MAX ? newest : hi) - kProbeEventMarginNs;
    if (hi <= events_folded_until_) return;
    fold_gaps(kept, events_folded_until_, hi, kProbeEventMarginNs, gaps);
    cmd::fold_ranges(*tracer_, gaps, folded_events_);
    events_folded_until_ = hi;
  }

  int running_probes() const {
    int n = 0;
    for (int k = 0; k < nslots_; ++k) {
      const sd_probe_slot& sl = shm_->slot(k);
      const auto st = __atomic_load_n(&sl.state, __ATOMIC_ACQUIRE);
      n += st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING;
    }
    return n;
  }

  // Probe threads that vanished without saying so (the process was killed,
  // called _exit, or exec'd into a program that ignores LD_PRELOAD) are
  // marked gone, and the CPU they held is free for the next process.
  void sweep() {
    sd_probe_shm* shm = shm_->get();
    for (int k = 0; k < nslots_; ++k) {
      sd_probe_slot& sl = shm_->slot(k);
      const int pid = __atomic_load_n(&sl.pid, __ATOMIC_ACQUIRE);
      if (pid == 0) continue;
      auto st = __atomic_load_n(&sl.state, __ATOMIC_ACQUIRE);
      if (st == SD_PROBE_DONE && !stopping_ && !exited_[k] &&
          __atomic_load_n(&sl.stop, __ATOMIC_ACQUIRE) != SD_PROBE_STOP_HANDOVER)
        exited_[k] = true;  // it stopped before the tool asked: the process exited
      if (st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING) {
        const int tid = __atomic_load_n(&sl.tid, __ATOMIC_ACQUIRE);
        const bool gone = tid > 0 ? !sys::thread_alive(pid, tid) : !sys::process_alive(pid);
        if (gone) {
          exited_[k] = !sys::process_alive(pid);  // else: alive, exec'd into a program without the probe
          std::uint32_t expect = st;
          __atomic_compare_exchange_n(&sl.state, &expect, std::uint32_t{SD_PROBE_GONE}, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE);
          st = __atomic_load_n(&sl.state, __ATOMIC_ACQUIRE);
        }
      }
      if (st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING || st == SD_PROBE_INIT) continue;
      for (std::uint32_t c = 0; c < shm->ncpus; ++c) {
        std::int32_t h = k;
        __atomic_compare_exchange_n(&sd_probe_holders(shm)[c], &h, std::int32_t{-1}, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
      }
    }
  }

  ProbeFate fate_of(int k) const {
    const sd_probe_slot& sl = shm_->slot(k);
    switch (sl.state) {
      case SD_PROBE_EXECED:
        return ProbeFate::kExeced;
      case SD_PROBE_OVERRUN:
        return ProbeFate::kOverrun;
      case SD_PROBE_FAILED:
        return ProbeFate::kFailed;
      case SD_PROBE_NO_CPU:
        return ProbeFate::kNoCpu;
      case SD_PROBE_GONE:
        return exited_[k] ? ProbeFate::kExited : ProbeFate::kGone;
      case SD_PROBE_DONE:
        if (sl.stop == SD_PROBE_STOP_HANDOVER) return ProbeFate::kHandedOver;
        return exited_[k] ? ProbeFate::kExited : ProbeFate::kUntilEnd;
      default:
        return ProbeFate::kGone;
    }
  }

  const ProbeOpts& o_;
  sys::Topology topo_;
  std::vector<int> cpus_;
  std::vector<std::string> only_;
  int cpu_ = -1;
  std::uint64_t capacity_ = 0;
  std::int64_t arena_pages_ = 0;
  std::int64_t duration_ns_ = 0;
  std::int64_t threshold_ns_ = 0;
  std::unique_ptr<sink::OutputDir> out_;
  std::string lib_;
  std::string command_;
  std::optional<ProbeShm> shm_;
  std::unique_ptr<sys::Tracer> tracer_;
  std::unique_ptr<sys::FlushSampler> sampler_;
  sys::SamplerData sampler_data_;
  sys::UserSymbols syms_;
  BlameOptions blame_opts_;
  std::optional<BlameReport> callsites_;
  std::optional<sys::InterruptsSnapshot> irq0_, irq1_;
  sys::TscPoint first_{}, last_{};
  sys::ChildProcess child_;  // declared after shm_ and tracer_: terminated before they go
  bool child_done_ = false;
  bool stopping_ = false;
  std::string stop_reason_ = "command exited";
  // Per slot: the probe's samples, bounded by --memory-limit. The
  // newest are raw batch-end TSC values; past the budget the oldest 1 Mi
  // fold into an interval histogram, keeping raw the samples within
  // kProbeKeepNs of an IPI on the probe's CPU (attribution reads them).
  struct Series {
    std::deque<std::uint64_t> tail;                   // batch-end TSC, oldest first
    std::size_t tail_first = 0;                       // sample number of tail.front()
    std::uint64_t prev = 0;                           // TSC where tail.front() began (the slot's start_tsc at first)
    std::vector<std::size_t> kept_index;              // raw samples kept from folded stretches
    std::vector<std::uint64_t> kept_start, kept_end;  // their TSC span
    std::vector<Interval> folded;
    std::size_t folded_samples = 0, ipis = 0, ipis_dropped = 0;
    std::size_t samples() const { return tail_first + tail.size(); }
  };
  int nslots_ = 0;               // probe CPUs + SD_PROBE_SPARE_SLOTS
  std::vector<Series> series_;   // per slot
  std::size_t max_samples_ = 0;  // raw samples held at most, all slots
  sys::TscClock pre_;            // calibrated before the command starts: converts while folding
  FoldedEvents folded_events_;
  std::int64_t events_folded_until_ = 0;
  std::vector<bool> exited_;  // per slot
  std::vector<ProbeProcess> processes_;
  std::vector<int> slot_of_;
  Result r_;  // what all processes share (plan, environment, trace until analyze)
  std::vector<std::pair<Result, Analysis>> results_;
};

}  // namespace

Command add_probe(CLI::App& root) {
  auto o = std::make_shared<ProbeOpts>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("probe", "Run a victim thread inside another program");
  app->add_option("--cpu", o->cpu,
                  "CPU(s) for the probe threads, a list such as 3 or 2,3 (default: the last online CPU); one "
                  "process of the target measured per CPU at a time");
  app->add_option("--duration", o->duration, "Stop after this long (the command gets SIGTERM); default: command exit");
  app->add_option("--out", o->out, "Write result.json, timeline.csv, ... into this directory");
  app->add_flag("--json", o->json, "Print the result JSON instead of the console summary");
  app->add_option("--arena", o->arena, "Probe arena size (its own mlocked memory; default 2MiB)");
  app->add_option("--batch-pages", o->batch_pages,
                  "Pages written per timed sample (default 512: one pass over the arena)");
  app->add_option("--ring", o->ring, "Shared sample ring size (8 bytes per sample; default 16MiB)");
  app->add_option("--stall-threshold", o->stall_threshold, "Stall threshold (default: 8 x median)");
  app->add_flag("--rt", o->rt, "Run the probe thread SCHED_FIFO 1, so it owns its CPU on a loaded machine (root)");
  app->add_option("-p,--pid", o->pid,
                  "Refused: a probe cannot join a running process (says what to do instead: blame -p PID)");
  app->add_option("-o,--output", o->output,
                  "Write the report to FILE (atomically) instead of stdout: the command keeps its stdout");
  app->add_flag("--no-callsites", o->no_callsites,
                "Do not sample the target's reason-4 flushes with user stacks (its call sites; blame's sampler)");
  app->add_option("--memory-limit", o->memory_limit,
                  "Memory for the probes' samples and their analysis (default 512MiB, at least 64MiB): past it the "
                  "oldest samples fold into interval histograms, keeping raw samples around each IPI on the probe's "
                  "CPU, and the kernel events away from raw samples are counted, not kept");
  app->add_option("--only", o->only,
                  "Report only these processes of the target: PIDs or program names, comma-separated "
                  "(default: every process that was measured)");
  app->add_option("command", o->command, "Command to run with the probe (after --)");
  return tool_command<ProbeTool>(
      app, o,
      {.notes = "Preloads libshootdown_probe.so into CMD (LD_PRELOAD). Its constructor starts\n"
                "one thread pinned to --cpu that writes its own small arena and timestamps\n"
                "every batch (fenced TSC) into shared memory; the tool traces kernel events\n"
                "meanwhile and labels each of the probe's stalls (tlb-shootdown, other-ipi,\n"
                "timer, ...), and names the target's call sites that sent the shootdowns.\n"
                "The probe follows wrappers and shells (exec keeps the probe CPU, a waiting\n"
                "parent hands it to its child) and fork (a child gets a free --cpu). It\n"
                "interposes nothing and takes no signals.",
       .examples =
           {"shootdown probe -- ./my-app", "shootdown probe --rt -- taskset -c 0-2 ./my-app --threads 3",
            "shootdown probe --cpu 3 --duration 30s --out probe-run -- sh -c './start-server.sh'",
            "shootdown probe --cpu 2,3 -- ./forking-server   (parent and one child at a time)",
            "shootdown probe --duration 2h --memory-limit 1GiB --out night -- ./server   (hours: bounded memory)"},
       .exit_status = "0 done, 1 not permitted or error, 2 bad input, 130/143 interrupted."});
}

}  // namespace shootdown::cmd
