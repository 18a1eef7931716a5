// shootdown blame: which call sites of a process initiate TLB shootdowns.
// plan (validate) → prepare (FlushSampler on every online CPU, maps snapshot)
// → run (spawn the command or watch the PID until it exits, --duration or a
// signal) → report (pick the target's records, symbolize, aggregate with
// core/blame, print text/JSON/folded) → restore (the sampler closes every fd;
// tracefs is mounted only while formats are read, by sys::Tracefs).
//
// Symbolization policy: the sampler records PERF_RECORD_MMAP2 for every file
// mapping made while it runs, and /proc/PID/maps is read at start (-p) and at
// the end while the target is still alive. So a target that exits before the
// report is still symbolized from the files on disk; we never keep it alive.
#include <memory>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fmt/core.h>
#include <map>
#include <set>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cmd/commands.hpp"
#include "core/blame.hpp"
#include "core/units.hpp"
#include "sink/blame_out.hpp"
#include "sys/cpus.hpp"
#include "sys/fs.hpp"
#include "sys/interrupts.hpp"
#include "sys/kallsyms.hpp"
#include "sys/perf_sampler.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"
#include "sys/user_symbols.hpp"

extern char** environ;

namespace shootdown::cmd {

namespace {

struct BlameOpts {
  int pid = 0;
  std::string duration;
  bool json = false;
  bool folded = false;
  int top = 10;
  int frames = 6;
  int stack_bytes = 128;
  std::vector<std::string> command;
};

std::string proc_comm(int pid) {
  return sys::trim(sys::read_file_or("/proc/" + std::to_string(pid) + "/comm", ""));
}

bool alive(int pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

int execute_blame(const BlameOpts& o) {
  // --- plan -----------------------------------------------------------------
  if (o.pid != 0 && !o.command.empty()) throw UsageError("give either -p PID or -- CMD ARGS, not both");
  if (o.pid == 0 && o.command.empty()) throw UsageError("nothing to blame: give -p PID or -- CMD ARGS");
  if (o.pid < 0) throw UsageError(fmt::format("-p {}: not a process id", o.pid));
  if (o.pid > 0 && !sys::path_exists("/proc/" + std::to_string(o.pid)))
    throw UsageError(fmt::format("-p {}: no such process", o.pid));
  std::int64_t duration_ns = 0;
  if (!o.duration.empty()) {
    std::string why;
    auto d = parse_duration_ns(o.duration, &why);
    if (!d || *d <= 0)
      throw UsageError(fmt::format("--duration '{}': {} (accepted: a positive duration like 10s, 500ms)", o.duration,
                                   d ? "must be positive" : why));
    duration_ns = *d;
  }
  if (o.stack_bytes < 8 || o.stack_bytes > 4096)
    throw UsageError(fmt::format("--stack-bytes {}: out of range [8, 4096]", o.stack_bytes));

  // --- prepare --------------------------------------------------------------
  sys::StopSignals signals;
  const sys::Topology topo = sys::read_topology();
  sys::SamplerOptions so;
  so.cpus = topo.online;
  if (so.cpus.empty())
    for (int c = 0; c < static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)); ++c) so.cpus.push_back(c);
  so.stack_bytes = o.stack_bytes;
  std::string why;
  auto sampler = sys::FlushSampler::open(so, &why);
  if (!sampler) throw RuntimeError("not permitted: " + why);

  sys::UserSymbols syms;
  int target = o.pid;
  std::string command;
  if (target > 0) {
    if (auto m = sys::read_proc_maps(target)) syms.add_maps_text(target, *m);
    command = proc_comm(target);
  }
  auto irq0 = sys::read_interrupts();
  sampler->start_reader();

  // --- run ------------------------------------------------------------------
  pid_t child = -1;
  if (!o.command.empty()) {
    std::vector<char*> argv;
    for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = ::posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ);
    if (rc != 0) throw RuntimeError(fmt::format("cannot run '{}': {}", o.command[0], std::strerror(rc)));
    target = child;
    for (auto& a : o.command) command += (command.empty() ? "" : " ") + a;
  }
  std::fprintf(stderr, "shootdown blame: sampling pid %d (%s) on %zu CPUs; %s\n", target, command.c_str(),
               so.cpus.size(),
               child >= 0    ? "until the command exits"
               : duration_ns ? "for the given duration"
                             : "Ctrl-C to stop");
  std::fflush(stderr);
  const std::int64_t t0 = sys::mono_now_ns();
  int child_status = 0;
  bool child_done = child < 0;
  bool target_gone = false;
  while (!sys::StopSignals::stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (child >= 0 && !child_done && ::waitpid(child, &child_status, WNOHANG) == child) child_done = true;
    if (child >= 0 && child_done) break;
    if (child < 0 && !alive(target)) {
      target_gone = true;
      break;
    }
    if (duration_ns && sys::mono_now_ns() - t0 >= duration_ns) break;
  }
  const int sig = sys::StopSignals::pending();
  // Maps while the target still lives (catches mappings made before we started).
  if (!child_done || (child < 0 && !target_gone))
    if (auto m = sys::read_proc_maps(target)) syms.add_maps_text(target, *m);
  sys::SamplerData data = sampler->stop();
  auto irq1 = sys::read_interrupts();
  if (!child_done) {  // duration or signal: do not leave the command behind
    ::kill(child, SIGTERM);
    while (::waitpid(child, &child_status, 0) < 0 && errno == EINTR) {}
  }

  // --- report ---------------------------------------------------------------
  // The target and its descendants (PERF_RECORD_FORK, in time order).
  std::set<int> pids{target};
  std::set<int> tids;
  std::stable_sort(data.forks.begin(), data.forks.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; });
  for (const auto& f : data.forks) {
    if (!pids.count(f.ppid)) continue;
    if (f.pid != f.ppid) pids.insert(f.pid);
    tids.insert(f.tid);
  }
  for (const auto& m : data.mmaps)
    if (pids.count(m.pid)) syms.add_mapping(m);
  const sys::Kallsyms ksyms = sys::Kallsyms::load();

  BlameInput in;
  in.pid = target;
  in.command = command;
  in.start_ns = data.start_ns;
  in.end_ns = data.stop_ns;
  in.lost = data.lost;
  in.processes = static_cast<int>(pids.size());
  in.has_csd = std::none_of(data.missing.begin(), data.missing.end(),
                            [](const std::string& m) { return m.rfind("csd:csd_queue_cpu", 0) == 0; });
  for (auto& m : data.missing) in.notes.push_back("missing: " + m);
  if (data.dropped)
    in.notes.push_back(fmt::format("{} flush samples over the in-memory limit were not kept", data.dropped));
  if (ksyms.empty()) in.notes.push_back("kernel symbols unavailable (/proc/kallsyms hidden): syscalls unknown");

  std::map<std::pair<int, std::uint64_t>, UserFrame> cache;
  auto frame = [&](int pid, std::uint64_t ip, bool ret) {
    auto key = std::make_pair(pid, ip * 2 + (ret ? 1 : 0));
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    UserFrame f = syms.symbolize(pid, ip, ret);
    cache.emplace(key, f);
    return f;
  };
  std::int64_t recovered = 0;
  for (const auto& s : data.flushes) {
    if (!pids.count(s.pid)) continue;
    tids.insert(s.tid);
    FlushSample f;
    f.mono_ns = s.mono_ns;
    f.cpu = s.cpu;
    f.pid = s.pid;
    f.tid = s.tid;
    f.pages = s.pages;
    for (auto ip : s.kernel_ips) {
      std::string fn = ksyms.function(ip);
      f.kernel.push_back(fn.empty() ? fmt::format("{:#x}", ip) : fn);
    }
    for (std::size_t i = 0; i < s.user_ips.size(); ++i) {
      f.user.push_back(frame(s.pid, s.user_ips[i], i > 0));
      // The frame the syscall stub hides: its return address is at the user sp.
      if (i == 0 && s.has_sp_word && syms.executable(s.pid, s.sp_word) &&
          (s.user_ips.size() < 2 || s.user_ips[1] != s.sp_word)) {
        UserFrame r = frame(s.pid, s.sp_word, true);
        r.recovered = true;
        f.user.push_back(r);
        ++recovered;
      }
    }
    in.flushes.push_back(std::move(f));
  }
  for (const auto& ipi : data.ipis) {
    if (!pids.count(ipi.pid)) continue;
    IpiSend s;
    s.mono_ns = ipi.mono_ns;
    s.cpu = ipi.cpu;
    s.tid = ipi.tid;
    s.targets = ipi.targets;
    s.callback = ksyms.function(ipi.callback);
    s.queued = ipi.queued;
    s.tlb = s.callback == "flush_tlb_func";
    in.ipis.push_back(s);
  }
  for (const auto& [key, n] : data.received) {
    in.received_all[key.first] += n;
    if (pids.count(key.second)) in.received_by_target[key.first] += n;
  }
  if (irq0 && irq1)
    for (int cpu : irq1->cpus) in.interrupts_tlb[cpu] = sys::interrupts_delta(*irq0, *irq1, "TLB", cpu);
  in.threads = static_cast<int>(tids.size());
  if (in.threads == 0) in.threads = 1;

  BlameOptions bo;
  bo.top = o.top;
  bo.max_frames = o.frames;
  if (o.folded) {
    std::fputs(folded_stacks(in, bo).c_str(), stdout);
  } else {
    const BlameReport rep = blame(in, bo);
    std::fputs(o.json ? sink::blame_json(rep).c_str() : sink::blame_text(rep, bo).c_str(), stdout);
  }
  std::fflush(stdout);
  if (child >= 0) {
    if (WIFEXITED(child_status) && WEXITSTATUS(child_status) != 0)
      std::fprintf(stderr, "shootdown blame: command exited with status %d\n", WEXITSTATUS(child_status));
    else if (WIFSIGNALED(child_status) && !sig)
      std::fprintf(stderr, "shootdown blame: command killed by signal %d\n", WTERMSIG(child_status));
  }
  (void)recovered;
  return sig ? sys::exit_code_for_signal(sig) : kExitOk;
}

}  // namespace

Command add_blame(CLI::App& root) {
  auto o = std::make_shared<BlameOpts>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("blame", "Find the call sites in a process that cause shootdowns");
  app->add_option("-p,--pid", o->pid, "Process to watch (its threads and the processes it starts)")
      ->check(CLI::PositiveNumber);
  app->add_option("--duration", o->duration, "Stop after this long (e.g. 10s); default: Ctrl-C or target exit");
  app->add_flag("--json", o->json, "Print the report as JSON (docs/blame-probe.md, FIELDS)");
  app->add_flag("--folded", o->folded,
                "Print collapsed stacks (flamegraph.pl / speedscope input) instead of the report");
  app->add_option("--top", o->top, "Call sites shown on the console")->check(CLI::Range(1, 1000));
  app->add_option("--frames", o->frames, "User frames per call site")->check(CLI::Range(1, 64));
  app->add_option("--stack-bytes", o->stack_bytes,
                  "User stack bytes copied per sample (the hidden caller is at the top)");
  app->add_option("command", o->command, "Command to run and blame (after --)");
  app->footer(
      "Samples tlb:tlb_flush reason 4 (the initiator, with kernel and user\n"
      "callchains) and ipi:ipi_send_* on every CPU, keeps the target's, and counts\n"
      "the reason-1 flushes its threads received. Build the target with frame\n"
      "pointers (-fno-omit-frame-pointer) for deep user stacks.\n\n"
      "EXAMPLES:\n"
      "  shootdown blame -p 1234 --duration 10s\n"
      "  shootdown blame -- ./my-app --config prod.toml\n"
      "  shootdown blame --folded -- ./my-app | flamegraph.pl > blame.svg\n\n"
      "EXIT STATUS: 0 done, 1 not permitted or error, 2 bad input (no such PID), 130/143 interrupted.");
  return {app, [o]() { return execute_blame(*o); }};
}

}  // namespace shootdown::cmd
