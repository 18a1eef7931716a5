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
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "cmd/trace_session.hpp"
#include "core/analysis.hpp"
#include "core/cpulist.hpp"
#include "core/units.hpp"
#include "experiment/finish.hpp"
#include "probe/probe_shm.h"
#include "sink/atomic_writer.hpp"
#include "sink/console.hpp"
#include "sink/json.hpp"
#include "sys/child.hpp"
#include "sys/cpus.hpp"
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
  int pid = 0;         // -p: refused with what to do instead
  std::string output;  // -o FILE: the console report
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

// The shared sample ring: a memfd the command inherits (no MFD_CLOEXEC; the
// library closes it at once), mapped here for the tool's side.
class ProbeShm {
 public:
  explicit ProbeShm(std::uint64_t capacity) : len_(sizeof(sd_probe_shm) + capacity * 8) {
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
  }
  ~ProbeShm() {
    if (shm_) ::munmap(shm_, len_);
    if (fd_ >= 0) ::close(fd_);
  }
  ProbeShm(const ProbeShm&) = delete;
  ProbeShm& operator=(const ProbeShm&) = delete;
  sd_probe_shm* operator->() const { return shm_; }
  sd_probe_shm* get() const { return shm_; }
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
    cpu_ = o_.cpu;
    if (cpu_ < 0) {
      if (topo_.online.empty()) throw UsageError("cannot list online CPUs: give --cpu");
      cpu_ = topo_.online.back();
    }
    if (!topo_.online.empty() && !topo_.is_online(cpu_))
      throw UsageError(fmt::format("--cpu {}: not an online CPU (online: {})", cpu_, format_cpulist(topo_.online)));
    std::string why;
    const auto arena = parse_size(o_.arena, &why);
    if (!arena || *arena < 4096 || *arena > (1LL << 30))
      throw UsageError(
          fmt::format("--arena '{}': {} (accepted: 4KiB .. 1GiB)", o_.arena, arena ? "out of range" : why));
    const auto ring_bytes = parse_size(o_.ring, &why);
    if (!ring_bytes || *ring_bytes < (1 << 20) || *ring_bytes > (4LL << 30))
      throw UsageError(
          fmt::format("--ring '{}': {} (accepted: 1MiB .. 4GiB)", o_.ring, ring_bytes ? "out of range" : why));
    capacity_ = static_cast<std::uint64_t>(*ring_bytes) / 8;
    arena_pages_ = *arena / 4096;
    if (o_.batch_pages < 1 || o_.batch_pages > arena_pages_)
      throw UsageError(
          fmt::format("--batch-pages {}: out of range [1, {}] (the arena's pages)", o_.batch_pages, arena_pages_));
    try {
      if (!o_.duration.empty()) duration_ns_ = cli::positive_duration("--duration", o_.duration);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
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
    lib_ = find_library();
    if (lib_.empty())
      throw RuntimeError(
          "cannot find libshootdown_probe.so next to the binary or in the build tree (set SHOOTDOWN_PROBE_LIB)");
    for (auto& a : o_.command) command_ += (command_.empty() ? "" : " ") + a;
  }

  void prepare() override {
    shm_.emplace(capacity_);
    sd_probe_shm* shm = shm_->get();
    shm->magic = SD_PROBE_MAGIC;
    shm->version = SD_PROBE_VERSION;
    shm->cpu = cpu_;
    shm->batch_pages = static_cast<std::uint32_t>(o_.batch_pages);
    shm->arena_bytes = static_cast<std::uint64_t>(arena_pages_) * 4096;
    shm->capacity = capacity_;
    shm->sched_fifo = o_.rt ? 1u : 0u;

    Plan& p = r_.plan;
    p.culprit_cpu = -1;
    p.victim_cpus = {cpu_};
    p.cpu_choice = o_.cpu >= 0 ? "given" : "default: the last online CPU";
    p.chunk_size = p.chunk_size_requested = static_cast<std::int64_t>(shm->arena_bytes);
    p.batch = static_cast<std::int64_t>(o_.batch_pages) * 4096;
    p.report_every = 32LL << 20;
    p.release = ReleaseStrategy::kProbe;
    p.trigger = "command";
    p.trace = "on";
    p.stall_threshold_ns = threshold_ns_;
    p.mlock = true;

    std::string why;
    tracer_ = sys::Tracer::open(
        tracer_options(topo_.online.empty() ? std::vector<int>{cpu_} : topo_.online, -1, false, cpu_), &why);
    if (!tracer_) throw RuntimeError("not permitted: kernel tracing unavailable: " + why);
    tracer_->start_reader();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // enabling tracepoints sends IPIs: let them pass
    irq0_ = sys::read_interrupts();
    first_ = sys::tsc_point();
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
    std::fprintf(stderr, "shootdown probe: pid %d (%s), probe thread on cpu%d; %s\n", child_.pid(), command_.c_str(),
                 cpu_, duration_ns_ ? "for the given duration" : "until the command exits");
    std::fflush(stderr);

    sd_probe_shm* shm = shm_->get();
    Watch w;
    w.child = &child_;
    w.duration_ns = duration_ns_;
    w.period_ms = 5;
    w.tick = [this, shm] {
      drain();
      const auto st = __atomic_load_n(&shm->state, __ATOMIC_ACQUIRE);
      return st == SD_PROBE_FAILED || st == SD_PROBE_OVERRUN;
    };
    const StopCause cause = watch(w);
    if (cause == StopCause::kSignal)
      stop_reason_ = fmt::format("interrupted by signal {}", sys::StopSignals::pending());
    else if (cause == StopCause::kDuration)
      stop_reason_ = "--duration reached";
    __atomic_store_n(&shm->stop, 1u, __ATOMIC_RELAXED);
    for (int i = 0; i < 100 && !child_.done() && __atomic_load_n(&shm->state, __ATOMIC_ACQUIRE) == SD_PROBE_RUNNING;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    drain();
    last_ = sys::tsc_point();
    irq1_ = sys::read_interrupts();
    r_.trace = tracer_->stop();
    child_done_ = child_.done();
    child_.terminate();  // --duration or a signal: do not leave the command behind
    r_.exit_signal = sys::StopSignals::pending();
    const auto state = __atomic_load_n(&shm->state, __ATOMIC_ACQUIRE);
    if (shm->claimed == 0)
      throw RuntimeError(
          fmt::format("the probe never started in '{}' (a static or setuid binary ignores LD_PRELOAD; a shell "
                      "wrapper that clears the environment too)",
                      o_.command[0]));
    if (state == SD_PROBE_FAILED)
      throw RuntimeError(fmt::format("the probe failed inside the command: {}", shm->error));
    if (state == SD_PROBE_OVERRUN)
      r_.warnings.push_back("probe ring full (the tool fell behind): measurement ended early; raise --ring");
    if (!shm->mlocked)
      r_.warnings.push_back("probe arena/ring not mlocked (RLIMIT_MEMLOCK): page faults may show as stalls");
  }

  void analyze() override {
    if (ticks_.empty()) {
      // Never empty tables: say why in one line (exit 1).
      const int claimed = (*shm_)->claimed;
      throw RuntimeError(fmt::format(
          "no sample arrived: the probe started in pid {} but '{}' {} before its first batch ({}; wrappers such as "
          "sh -c, env, taskset, nice and numactl exec the real program, and the probe does not follow exec yet: "
          "run the program directly, or see who sends shootdowns with shootdown blame -- CMD)",
          claimed, o_.command[0], child_done_ ? "exited or exec'd" : "exec'd or stopped", stop_reason_));
    }
    const int status = child_.status();
    if (!child_done_ || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      r_.complete = child_done_ && WIFEXITED(status);
      if (!child_done_)
        r_.incomplete_reason = stop_reason_;
      else
        r_.warnings.push_back("command " + child_.describe_exit());
    }
    const sys::TscClock clock = sys::TscClock::from(first_, last_);
    r_.env.tsc_hz = r_.env.tsc_hz_pre = clock.hz();
    VictimSamples v;
    v.cpu = cpu_;
    v.pages_per_batch = o_.batch_pages;
    v.start_ns = clock.to_mono((*shm_)->start_tsc);
    v.end_ns.reserve(ticks_.size());
    v.lat_ns.reserve(ticks_.size());
    std::int64_t prev = v.start_ns;
    for (std::uint64_t t : ticks_) {
      const std::int64_t e = clock.to_mono(t);
      v.end_ns.push_back(e);
      v.lat_ns.push_back(e - prev);
      prev = e;
    }
    r_.measure_start_ns = v.start_ns;
    r_.measure_end_ns = v.end_ns.empty() ? v.start_ns : v.end_ns.back();
    r_.victims.push_back(std::move(v));
    if (irq0_ && irq1_) {
      // interrupts_start_ns stays 0: the attribution span is the probe's
      // sampled span (the snapshots also hold the command's start-up, before
      // the probe's first sample).
      r_.interrupts_span_ns = irq1_->mono_ns - irq0_->mono_ns;
      r_.counters = exp::cpu_counters(*irq0_, *irq1_, r_.plan);
    }
    exp::FinishOptions fo;
    fo.run_id = fmt::format("probe-{}-{}", ::getpid(), std::time(nullptr));
    fo.doctor = false;
    exp::finish_result(r_, fo);
    build_intervals(r_);
    a_ = shootdown::analyze(r_);
  }

  int report() override {
    if (o_.output.empty() && o_.json) {
      finish_run_outputs(r_, a_, out_.get(), true);
    } else if (o_.output.empty()) {
      // probe's own presentation (not run's tables: there is no culprit and no release).
      const std::string file_error = write_result_files_or_error(r_, a_, out_.get());
      std::string text = sink::probe_summary(r_, a_, command_, child_.pid());
      if (out_ && file_error.empty()) text += "results: " + out_->path() + "/\n";
      emit_report(text, "", stdout);
      if (!file_error.empty()) throw RuntimeError("writing results: " + file_error);
    } else {
      // -o FILE: the command keeps stdout; files (--out) first, then the report.
      const std::string file_error = write_result_files_or_error(r_, a_, out_.get());
      emit_report(o_.json ? sink::result_to_string(r_, a_) : sink::probe_summary(r_, a_, command_, child_.pid()),
                  o_.output, stdout);
      std::fprintf(stderr, "shootdown probe: report in %s\n", o_.output.c_str());
      if (!file_error.empty()) throw RuntimeError("writing results: " + file_error);
    }
    return r_.exit_signal ? sys::exit_code_for_signal(r_.exit_signal) : kExitOk;
  }

 private:
  void drain() {
    sd_probe_shm* shm = shm_->get();
    const std::uint64_t* ring = sd_probe_ring(shm);
    const std::uint64_t count = __atomic_load_n(&shm->count, __ATOMIC_ACQUIRE);
    std::uint64_t c = shm->consumed;
    for (; c < count; ++c) ticks_.push_back(ring[c % capacity_]);
    __atomic_store_n(&shm->consumed, c, __ATOMIC_RELEASE);
  }

  const ProbeOpts& o_;
  sys::Topology topo_;
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
  std::optional<sys::InterruptsSnapshot> irq0_, irq1_;
  sys::TscPoint first_{}, last_{};
  sys::ChildProcess child_;  // declared after shm_ and tracer_: terminated before they go
  bool child_done_ = false;
  std::string stop_reason_ = "command exited";
  std::vector<std::uint64_t> ticks_;  // batch-end TSC values, in order
  Result r_;
  Analysis a_;
};

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
  app->add_option("-p,--pid", o->pid,
                  "Refused: a probe cannot join a running process (says what to do instead: blame -p PID)");
  app->add_option("-o,--output", o->output,
                  "Write the report to FILE (atomically) instead of stdout: the command keeps its stdout");
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
  return tool_command<ProbeTool>(app, o);
}

}  // namespace shootdown::cmd
