// SPDX-License-Identifier: Apache-2.0
// shootdown probe: run a command with the probe library preloaded, so one
// pinned victim thread lives inside it (only threads of the same mm receive
// its shootdowns), trace kernel events with sys::Tracer meanwhile, and
// analyse the probe's samples exactly like a run's victim.
// Wiring: the shared memory, its samples and their bound are
// exp::ProbeSession (experiment/probe_session.hpp).
// plan (validate) → prepare (ProbeSession, Tracer on every online CPU) → run
// (spawn with LD_PRELOAD + SHOOTDOWN_PROBE_FD, drain the session) → analyze
// (one Result per measured process) → report (console/JSON/--out files) →
// restore (Tracer closes its fds; the memfd goes with its last mapping).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <optional>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cli/common_options.hpp"
#include "cli/run_options.hpp"
#include "cmd/blame_input.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "cmd/trace_session.hpp"
#include "core/analysis.hpp"
#include "core/compaction.hpp"
#include "core/cpulist.hpp"
#include "core/units.hpp"
#include "experiment/finish.hpp"
#include "experiment/probe_session.hpp"
#include "probe/probe_shm.h"
#include "sink/atomic_writer.hpp"
#include "sink/blame_out.hpp"
#include "sink/console.hpp"
#include "sink/json.hpp"
#include "sys/child.hpp"
#include "sys/cpus.hpp"
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
      auto list = parse_cpulist(o_.cpu);
      if (!list || list->empty())
        throw UsageError(fmt::format("--cpu '{}': {} (accepted: a CPU list such as 3 or 2,3 or 4-7)", o_.cpu,
                                     list ? std::string("empty") : list.error()));
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
    // Each raw sample held costs 4 bytes while probing (exp::SampleStore)
    // and ~28 more in its analysis (end, latency and index, 8 bytes each,
    // and its label): the limit holds limit / 32 of them (all probes
    // together). The shared ring (--ring) comes on top.
    std::int64_t limit = kMemoryLimitDefault;
    if (!o_.memory_limit.empty()) {
      const auto m = parse_size(o_.memory_limit);
      if (!m || *m < kProbeMemoryLeast)
        throw UsageError(fmt::format("--memory-limit '{}': {} (accepted: a size of at least 64MiB, e.g. 512MiB)",
                                     o_.memory_limit, m ? std::string("below the least, 64MiB") : m.error()));
      limit = *m;
    }
    max_samples_ = static_cast<std::size_t>(limit / 32);
    const auto arena = parse_size(o_.arena);
    if (!arena || *arena < 4096 || *arena > (1LL << 30))
      throw UsageError(fmt::format("--arena '{}': {} (accepted: 4KiB .. 1GiB)", o_.arena,
                                   arena ? std::string("out of range") : arena.error()));
    const auto ring_bytes = parse_size(o_.ring);
    if (!ring_bytes || *ring_bytes < (1 << 20) || *ring_bytes > (4LL << 30))
      throw UsageError(fmt::format("--ring '{}': {} (accepted: 1MiB .. 4GiB)", o_.ring,
                                   ring_bytes ? std::string("out of range") : ring_bytes.error()));
    // --ring is per probe: each process image of the target gets its own.
    capacity_ = static_cast<std::uint64_t>(*ring_bytes) / 8;
    arena_pages_ = *arena / 4096;
    if (o_.batch_pages < 1 || o_.batch_pages > arena_pages_)
      throw UsageError(
          fmt::format("--batch-pages {}: out of range [1, {}] (the arena's pages)", o_.batch_pages, arena_pages_));
    if (!o_.duration.empty()) duration_ns_ = cli::positive_duration("--duration", o_.duration);
    if (!o_.stall_threshold.empty()) {
      auto d = parse_duration_ns(o_.stall_threshold);
      if (!d || *d <= 0)
        throw UsageError(fmt::format("--stall-threshold '{}': {}", o_.stall_threshold,
                                     d ? std::string("must be positive") : d.error()));
      threshold_ns_ = *d;
    }
    if (!o_.out.empty()) out_ = std::make_unique<sink::OutputDir>(o_.out);  // UsageError when it cannot be made
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
    exp::ProbeConfig pc;
    pc.cpus = cpus_;
    pc.capacity = capacity_;
    pc.batch_pages = static_cast<std::uint32_t>(o_.batch_pages);
    pc.arena_bytes = static_cast<std::uint64_t>(arena_pages_) * 4096;
    pc.sched_fifo = o_.rt;
    pc.max_samples = max_samples_;
    session_.emplace(std::move(pc));

    Plan& p = r_.plan;
    p.culprit_cpu = -1;
    p.victim_cpus = {cpu_};
    p.cpu_choice = !o_.cpu.empty() ? "given" : "default: the last online CPU";
    p.chunk_size = p.chunk_size_requested = static_cast<std::int64_t>(session_->shm().arena_bytes);
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

    // Every online CPU is traced (the target's threads may run anywhere): the
    // perf rings share a budget (core/compaction.hpp).
    auto topts = tracer_options(topo_.online.empty() ? std::vector<int>{cpu_} : topo_.online, -1, false, cpu_);
    topts.ring_pages = ring_pages_tracing_every_cpu(topts.cpus.size());
    auto tracer = sys::Tracer::open(topts);
    if (!tracer) throw RuntimeError("not permitted: kernel tracing unavailable: " + tracer.error());
    tracer_ = std::move(*tracer);
    tracer_->start_reader();
    if (!o_.no_callsites) {
      // Who sends them: reason-4 flushes of the target with user stacks
      // (blame's sampler), so the report names the call sites.
      sys::SamplerOptions so;
      so.cpus = topo_.online.empty() ? std::vector<int>{cpu_} : topo_.online;
      auto sampler = sys::FlushSampler::open(so);
      if (sampler) {
        sampler_ = std::move(*sampler);
        sampler_->start_reader();
      } else {
        r_.warnings.push_back("call sites unavailable (" + sampler.error() + "): shootdown blame -- CMD");
      }
    }
    pre_ = sys::calibrate(50'000'000);                           // folds convert with it while the command runs
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // enabling tracepoints sends IPIs: let them pass
    if (auto snap = sys::read_interrupts()) irq0_ = std::move(*snap);
    first_ = sys::tsc_point();
    session_->attach(pre_, tracer_.get(), pre_.to_mono(first_.tsc));
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
    env.push_back(fmt::format("{}={}", SD_PROBE_ENV_FD, session_->fd()));
    child_ = sys::ChildProcess::spawn(o_.command, env);
    std::fprintf(stderr, "shootdown probe: pid %d (%s), probe thread on cpu%s; %s\n", child_.pid(), command_.c_str(),
                 format_cpulist(cpus_).c_str(), duration_ns_ ? "for the given duration" : "until the command exits");
    std::fflush(stderr);

    Watch w;
    w.child = &child_;
    w.duration_ns = duration_ns_;
    w.period_ms = 5;
    w.tick = [this] {
      session_->drain();
      session_->sweep();
      return false;
    };
    const StopCause cause = watch(w);
    if (cause == StopCause::kSignal)
      stop_reason_ = fmt::format("interrupted by signal {}", sys::StopSignals::pending());
    else if (cause == StopCause::kDuration)
      stop_reason_ = "--duration reached";
    session_->stop_all();  // every probe still measuring stops at its next batch
    last_ = sys::tsc_point();
    if (auto snap = sys::read_interrupts()) irq1_ = std::move(*snap);
    r_.trace = tracer_->stop();
    r_.trace.folded = session_->take_folded_events();
    if (sampler_) sampler_data_ = sampler_->stop();
    child_done_ = child_.done();
    child_.terminate();  // --duration or a signal: do not leave the command behind
    r_.exit_signal = sys::StopSignals::pending();
    if (session_->shm().claimed == 0)
      throw RuntimeError(
          fmt::format("the probe never started in '{}' (a static or setuid binary ignores LD_PRELOAD; so does a "
                      "program started with a cleared environment)",
                      o_.command[0]));
  }

  void analyze() override {
    const sys::TscClock clock = sys::TscClock::from(first_, last_);
    collect_processes(clock);
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
    for (std::size_t i = 0; i < processes_.size(); ++i)
      if (processes_[i].samples > 0 && selected(processes_[i])) analyze_process(i, clock);
    if (results_.empty()) {
      std::string seen;
      for (const auto& p : processes_)
        if (p.samples > 0) seen += fmt::format("{}{} (pid {})", seen.empty() ? "" : ", ", p.comm, p.pid);
      throw RuntimeError(fmt::format("--only {}: no measured process matches (measured: {})", o_.only, seen));
    }
    r_.trace = {};
    if (sampler_) add_callsites();
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

  // The processes of the target in claim order; none measured: one line
  // saying why (exit 1), never empty tables.
  void collect_processes(const sys::TscClock& clock) {
    std::string failures;
    bool any_samples = false;
    for (int k : session_->claim_order()) {
      ProbeProcess p = session_->process(k, clock);
      if (p.fate == ProbeFate::kFailed)
        failures += fmt::format("{}pid {} ({}): {}", failures.empty() ? "" : "; ", p.pid, p.comm, p.error);
      any_samples = any_samples || p.samples > 0;
      processes_.push_back(p);
      slot_of_.push_back(k);
    }
    if (!any_samples) {
      if (!failures.empty()) throw RuntimeError("the probe failed inside the command: " + failures);
      std::string seen;
      for (const auto& p : processes_)
        seen += fmt::format("{}pid {} {} ({})", seen.empty() ? "" : ", ", p.pid, p.comm, probe_fate_name(p.fate));
      throw RuntimeError(fmt::format("no sample arrived from '{}' ({}; processes seen: {}){}", command_, stop_reason_,
                                     seen.empty() ? "none" : seen, session_->starved(clock)));
    }
    if (!failures.empty()) r_.warnings.push_back("the probe failed in " + failures);
    if (session_->shm().unslotted > 0)
      r_.warnings.push_back(
          fmt::format("{} more processes of the target found every one of the {} probe slots "
                      "taken: not probed",
                      session_->shm().unslotted, session_->slots()));
    const int status = child_.status();
    if (!child_done_ || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      r_.complete = child_done_ && WIFEXITED(status);
      if (!child_done_)
        r_.incomplete_reason = stop_reason_;
      else
        r_.warnings.push_back("command " + child_.describe_exit());
    }
  }

  // Process i's own result: what all share, its samples, its analysis.
  void analyze_process(std::size_t i, const sys::TscClock& clock) {
    const ProbeProcess& p = processes_[i];
    const int k = slot_of_[i];
    Result r = r_;
    r.probe = p;
    r.probe_seen = processes_;
    r.plan.victim_cpus = {p.cpu};
    if (!session_->slot(k).mlocked)
      r.warnings.push_back("probe arena/ring not mlocked (RLIMIT_MEMLOCK): page faults may show as stalls");
    if (p.fate == ProbeFate::kOverrun)
      r.warnings.push_back("probe ring full (the tool fell behind): measurement ended early; raise --ring");
    if (irq0_ && irq1_) r.counters = exp::cpu_counters(*irq0_, *irq1_, r.plan);
    session_->fill_result(k, clock, r);
    Analysis a = shootdown::analyze(r);
    results_.push_back({std::move(r), std::move(a)});
  }

  // Who sent them: the target's reason-4 call sites (blame's report).
  void add_callsites() {
    BlameInput in =
        blame_input(child_.pid(), command_, sampler_data_, syms_, irq0_ ? &*irq0_ : nullptr, irq1_ ? &*irq1_ : nullptr);
    blame_opts_.top = 3;
    callsites_ = blame(in, blame_opts_);
    sampler_data_ = {};
    BlameReport top = *callsites_;
    if (top.sites.size() > 10) top.sites.resize(10);  // result.json keeps the top 10; blame.json has all
    for (auto& [r, a] : results_) r.probe_callsites = top;
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
  std::optional<exp::ProbeSession> session_;
  std::unique_ptr<sys::Tracer> tracer_;
  std::unique_ptr<sys::FlushSampler> sampler_;
  sys::SamplerData sampler_data_;
  sys::UserSymbols syms_;
  BlameOptions blame_opts_;
  std::optional<BlameReport> callsites_;
  std::optional<sys::InterruptsSnapshot> irq0_, irq1_;
  sys::TscPoint first_{}, last_{};
  sys::ChildProcess child_;  // declared after session_ and tracer_: terminated before they go
  bool child_done_ = false;
  std::string stop_reason_ = "command exited";
  std::size_t max_samples_ = 0;  // raw samples held at most, all slots
  sys::TscClock pre_;            // calibrated before the command starts: converts while folding
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
  cli::add_duration(*app, o->duration, "command exit (the command gets SIGTERM when the duration ends first)");
  cli::add_out_dir(*app, o->out, "result.json, timeline.csv, ...");
  cli::add_json_flag(*app, o->json, "the result", "the console summary");
  app->add_option("--arena", o->arena, "Probe arena size (its own mlocked memory; default 2MiB)");
  app->add_option("--batch-pages", o->batch_pages,
                  "Pages written per timed sample (default 512: one pass over the arena)");
  app->add_option("--ring", o->ring, "Shared sample ring size (8 bytes per sample; default 16MiB)");
  app->add_option("--stall-threshold", o->stall_threshold, "Stall threshold (default: 8 x median)");
  app->add_flag("--rt", o->rt, "Run the probe thread SCHED_FIFO 1, so it owns its CPU on a loaded machine (root)");
  app->add_option("-p,--pid", o->pid,
                  "Refused: a probe cannot join a running process (says what to do instead: blame -p PID)");
  cli::add_output_file(*app, o->output, "the report");
  app->add_flag("--no-callsites", o->no_callsites,
                "Do not sample the target's reason-4 flushes with user stacks (its call sites; blame's sampler)");
  app->add_option("--memory-limit", o->memory_limit,
                  "Memory for the probes' samples and their analysis (default 512MiB, at least 64MiB): past it the "
                  "oldest samples fold into interval histograms, keeping raw samples around each IPI on the probe's "
                  "CPU, and the kernel events away from raw samples are counted, not kept");
  app->add_option("--only", o->only,
                  "Report only these processes of the target: PIDs or program names, comma-separated "
                  "(default: every process that was measured)");
  cli::add_command(*app, o->command, "run with the probe");
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
