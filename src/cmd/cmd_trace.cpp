// shootdown trace: a live, human-readable stream of the kernel events behind
// TLB shootdowns (the article's SystemTap script, done with perf tracepoints),
// and a per-CPU summary that cross-checks the tracepoint counts against
// /proc/interrupts over the same span.
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
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "cmd/commands.hpp"
#include "core/cpulist.hpp"
#include "core/events.hpp"
#include "core/units.hpp"
#include "sys/affinity.hpp"
#include "sys/cpus.hpp"
#include "sys/interrupts.hpp"
#include "sys/perf_trace.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

extern char** environ;

namespace shootdown::cmd {

namespace {

struct TraceOptions {
  int culprit_cpu = -1;
  std::string victim_cpus;
  std::string duration;
  bool all = false;
  bool quiet = false;
  std::string format = "text";
  bool no_callchains = false;
  std::vector<std::string> command;
};

struct Plan {
  int culprit = -1;
  std::vector<int> victims;
  std::int64_t duration_ns = 0;  // 0 = until signal / command exit
};

Plan validate(const TraceOptions& o) {
  Plan p;
  const sys::Topology topo = sys::read_topology();
  if (!o.victim_cpus.empty()) {
    std::string why;
    auto v = parse_cpulist(o.victim_cpus, &why);
    if (!v)
      throw UsageError(fmt::format("--victim-cpus '{}': {} (accepted: a CPU list like 1,3-5)", o.victim_cpus, why));
    p.victims = *v;
  }
  p.culprit = o.culprit_cpu;
  if (p.culprit < 0 && !p.victims.empty()) {
    for (int c : topo.online)
      if (std::find(p.victims.begin(), p.victims.end(), c) == p.victims.end()) {
        p.culprit = c;
        break;
      }
    if (p.culprit < 0)
      throw UsageError("--victim-cpus " + o.victim_cpus +
                       ": leaves no online CPU for the culprit (give --culprit-cpu)");
  } else if (p.victims.empty()) {
    const CpuChoice choice = choose_cpus(topo, 1);
    const std::string why = choice.why;
    for (int c : choice.cpus())
      if (p.culprit < 0)
        p.culprit = c;
      else if (c != p.culprit && p.victims.empty())
        p.victims.push_back(c);
    if (p.victims.empty())
      for (int c : topo.online)
        if (c != p.culprit) {
          p.victims.push_back(c);
          break;
        }
    if (p.culprit < 0 || p.victims.empty())
      throw UsageError("cannot choose default CPUs: " + why + " (give --culprit-cpu and --victim-cpus)");
  }
  auto online = [&](int c) { return topo.online.empty() || topo.is_online(c); };
  if (!online(p.culprit))
    throw UsageError(
        fmt::format("--culprit-cpu {}: not an online CPU (online: {})", p.culprit, format_cpulist(topo.online)));
  for (int v : p.victims) {
    if (!online(v))
      throw UsageError(fmt::format("--victim-cpus {}: CPU {} is not online (online: {})", o.victim_cpus, v,
                                   format_cpulist(topo.online)));
    if (v == p.culprit)
      throw UsageError(fmt::format(
          "--victim-cpus {}: contains the culprit CPU {} (victims must differ from the culprit)", o.victim_cpus, v));
  }
  if (!o.duration.empty()) {
    std::string why;
    auto d = parse_duration_ns(o.duration, &why);
    if (!d || *d <= 0)
      throw UsageError(fmt::format("--duration '{}': {} (accepted: a positive duration like 10s, 500ms)", o.duration,
                                   d ? "must be positive" : why));
    p.duration_ns = *d;
  }
  return p;
}

const char* reason_name(std::int64_t r) {
  switch (r) {
    case kTlbFlushOnTaskSwitch:
      return "task switch";
    case kTlbRemoteShootdown:
      return "remote shootdown";
    case kTlbLocalShootdown:
      return "local shootdown";
    case kTlbLocalMmShootdown:
      return "local mm shootdown";
    case kTlbRemoteSendIpi:
      return "remote IPI send";
    case kTlbRemoteWrongCpu:
      return "remote wrong CPU";
    default:
      return "?";
  }
}

std::string pages_str(std::int64_t pages) {
  return pages == -1 ? "all" : std::to_string(pages);
}

std::string mask_str(std::int64_t word) {
  std::vector<int> cpus;
  for (int i = 0; i < 64; ++i)
    if ((static_cast<std::uint64_t>(word) >> i) & 1u) cpus.push_back(i);
  return cpus.empty() ? "-" : "cpu" + format_cpulist(cpus);
}

// Per-CPU counts for the summary (only events inside the /proc/interrupts span).
struct CpuCounts {
  std::int64_t by_reason[6] = {0, 0, 0, 0, 0, 0};
  std::int64_t call_function = 0;  // entries, both vectors
  std::int64_t timer = 0, resched = 0, irq = 0, ipi_sent = 0;
  std::map<std::string, std::int64_t> csd;  // function -> count
};

class Printer {
 public:
  Printer(const sys::Tracer& t, const Plan& p, std::int64_t t0, bool all, bool quiet, bool raw)
      : tracer_(t), plan_(p), t0_(t0), all_(all), quiet_(quiet || raw), raw_(raw) {}

  void event(const KernelEvent& e, std::int64_t span_lo, std::int64_t span_hi) {
    const bool in_span = e.mono_ns >= span_lo && (span_hi == 0 || e.mono_ns <= span_hi);
    CpuCounts& c = counts_[e.cpu];
    Open& o = open_[e.cpu];
    if (raw_) raw_line(e);
    switch (e.type) {
      case EventType::kTlbFlush:
        if (in_span && e.a >= 0 && e.a < 6) ++c.by_reason[e.a];
        if (e.a == kTlbFlushOnTaskSwitch && !all_) return;  // context switches: noise unless --all
        line(e, fmt::format("tlb_flush reason={} pages={}", reason_name(e.a), pages_str(e.b)));
        backtrace(e);
        return;
      case EventType::kCallFunctionEntry:
      case EventType::kCallFunctionSingleEntry:
        if (in_span) ++c.call_function;
        o.cf_start = e.mono_ns;
        o.cf_funcs.clear();
        return;
      case EventType::kCallFunctionExit:
      case EventType::kCallFunctionSingleExit: {
        if (!o.cf_start) return;
        std::string funcs;
        for (auto& f : o.cf_funcs) funcs += (funcs.empty() ? "" : ",") + f;
        line(e, fmt::format("IPI handler {} ({}) ran {}", format_duration_ns(e.mono_ns - o.cf_start),
                            e.type == EventType::kCallFunctionExit ? "call_function" : "call_function_single",
                            funcs.empty() ? "?" : funcs));
        o.cf_start = 0;
        return;
      }
      case EventType::kCsdFunctionEntry: {
        std::string fn = tracer_.function_name(static_cast<std::uint64_t>(e.b));
        if (fn.empty()) fn = tracer_.symbolize(static_cast<std::uint64_t>(e.b));
        if (in_span) ++c.csd[fn];
        if (o.cf_start)
          o.cf_funcs.push_back(fn);
        else if (all_)
          line(e, "csd function " + fn + " (outside an IPI handler)");
        return;
      }
      case EventType::kLocalTimerEntry:
        if (in_span) ++c.timer;
        o.timer_start = e.mono_ns;
        return;
      case EventType::kLocalTimerExit:
        if (all_ && o.timer_start) line(e, "timer tick " + format_duration_ns(e.mono_ns - o.timer_start));
        o.timer_start = 0;
        return;
      case EventType::kReschedEntry:
        if (in_span) ++c.resched;
        o.resched_start = e.mono_ns;
        return;
      case EventType::kReschedExit:
        if (all_ && o.resched_start) line(e, "reschedule IPI " + format_duration_ns(e.mono_ns - o.resched_start));
        o.resched_start = 0;
        return;
      case EventType::kIrqHandlerEntry:
        if (in_span) ++c.irq;
        o.irq_start = e.mono_ns;
        return;
      case EventType::kIrqHandlerExit:
        if (all_ && o.irq_start)
          line(e, fmt::format("irq {} handler {}", e.a, format_duration_ns(e.mono_ns - o.irq_start)));
        o.irq_start = 0;
        return;
      case EventType::kIpiSendCpu:
      case EventType::kIpiSendCpumask: {
        if (in_span) ++c.ipi_sent;
        const std::string to = e.type == EventType::kIpiSendCpu ? fmt::format("cpu{}", e.a) : mask_str(e.a);
        if (!all_ && e.c == 0) return;  // reschedule kicks: --all
        line(e, fmt::format("{} → {} callsite={} callback={}", event_type_name(e.type), to,
                            tracer_.symbolize(static_cast<std::uint64_t>(e.b)),
                            e.c ? tracer_.function_name(static_cast<std::uint64_t>(e.c)) : std::string("-")));
        backtrace(e);
        return;
      }
      case EventType::kCsdFunctionExit:
        return;
      case EventType::kSchedSwitch:
        if (all_) line(e, fmt::format("sched_switch pid {} → pid {}", e.a, e.b));
        return;
    }
  }

  const std::map<int, CpuCounts>& counts() const { return counts_; }

 private:
  struct Open {
    std::int64_t cf_start = 0, timer_start = 0, resched_start = 0, irq_start = 0;
    std::vector<std::string> cf_funcs;
  };

  // One event per line for scripts: mono_ns cpu tid event a b c function
  // (function: csd function, or the IPI callsite; "-" when none).
  void raw_line(const KernelEvent& e) {
    std::string fn = "-";
    if (e.type == EventType::kCsdFunctionEntry || e.type == EventType::kCsdFunctionExit ||
        e.type == EventType::kIpiSendCpu || e.type == EventType::kIpiSendCpumask) {
      fn = tracer_.function_name(static_cast<std::uint64_t>(e.b));
      if (fn.empty()) fn = "-";
    }
    std::printf("%lld %d %d %s %lld %lld %lld %s\n", static_cast<long long>(e.mono_ns), e.cpu, e.tid,
                event_type_name(e.type), static_cast<long long>(e.a), static_cast<long long>(e.b),
                static_cast<long long>(e.c), fn.c_str());
  }

  const char* role(int cpu) const {
    if (cpu == plan_.culprit) return "CULPRIT";
    return "VICTIM ";
  }

  void line(const KernelEvent& e, const std::string& what) {
    if (quiet_) return;
    std::printf("%s cpu%d %+10.3fms %s [%d]\n", role(e.cpu), e.cpu, static_cast<double>(e.mono_ns - t0_) / 1e6,
                what.c_str(), e.tid);
  }

  void backtrace(const KernelEvent& e) {
    if (quiet_ || e.callchain < 0) return;
    const Callchain c = tracer_.callchain(e.callchain);
    for (auto& s : c.symbols) std::printf("        %s\n", s.c_str());
  }

  const sys::Tracer& tracer_;
  const Plan& plan_;
  std::int64_t t0_;
  bool all_, quiet_, raw_;
  std::map<int, CpuCounts> counts_;
  std::map<int, Open> open_;
};

int execute_trace(const TraceOptions& o) {
  const Plan plan = validate(o);
  sys::StopSignals signals;

  sys::TracerOptions topts;
  topts.cpus = plan.victims;
  topts.cpus.insert(topts.cpus.begin(), plan.culprit);
  topts.culprit_cpu = plan.culprit;
  topts.callchains = !o.no_callchains;
  topts.reader_cpu = plan.culprit;
  std::string why;
  auto tracer = sys::Tracer::open(topts, &why);
  if (!tracer) throw RuntimeError("kernel tracing unavailable: " + why);
  for (auto& m : tracer->missing()) std::fprintf(stderr, "shootdown trace: missing: %s\n", m.c_str());

  auto snap0 = sys::read_interrupts();
  const std::int64_t t0 = snap0 ? snap0->mono_ns : tracer->start_ns();
  std::fprintf(
      stderr, "shootdown trace: culprit cpu%d, victims cpu%s; %zu tracepoints; %s\n", plan.culprit,
      format_cpulist(plan.victims).c_str(), tracer->tracepoints().size(),
      o.command.empty() ? (plan.duration_ns ? "for the given duration" : "Ctrl-C to stop") : "until the command exits");
  std::fflush(stderr);

  pid_t child = -1;
  if (!o.command.empty()) {
    std::vector<char*> argv;
    for (auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    // The child inherits no perf fds (PERF_FLAG_FD_CLOEXEC) and, being
    // spawned before we pin ourselves, our original affinity.
    const int rc = ::posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ);
    if (rc != 0) throw RuntimeError(fmt::format("cannot run '{}': {}", o.command[0], std::strerror(rc)));
  }
  sys::pin_this_thread(plan.culprit);

  Printer printer(*tracer, plan, t0, o.all, o.quiet, o.format == "raw");
  std::vector<KernelEvent> pending;
  const std::int64_t deadline = plan.duration_ns ? t0 + plan.duration_ns : 0;
  // Hold events back this long so the per-CPU rings merge in time order.
  constexpr std::int64_t kHoldBackNs = 50'000'000;
  int child_status = 0;
  bool child_done = child < 0;
  auto emit = [&](std::int64_t upto) {
    tracer->drain();
    auto fresh = tracer->take_events();
    pending.insert(pending.end(), fresh.begin(), fresh.end());
    std::stable_sort(pending.begin(), pending.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; });
    std::size_t k = 0;
    for (; k < pending.size() && (upto == 0 || pending[k].mono_ns <= upto); ++k) printer.event(pending[k], t0, 0);
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(k));
    std::fflush(stdout);
  };
  while (!sys::StopSignals::stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const std::int64_t now = sys::mono_now_ns();
    emit(now - kHoldBackNs);
    if (!child_done && ::waitpid(child, &child_status, WNOHANG) == child) child_done = true;
    if (child >= 0 && child_done) break;
    if (deadline && now >= deadline) break;
  }
  auto snap1 = sys::read_interrupts();
  const int sig = sys::StopSignals::pending();
  if (!child_done) {  // stopped by a signal: do not leave the command behind
    ::kill(child, SIGTERM);
    while (::waitpid(child, &child_status, 0) < 0 && errno == EINTR) {}
    child_done = true;
  }
  tracer->drain();
  KernelTrace kt = tracer->stop();
  // Remaining events: emit them, counting only those inside the snapshot span.
  auto rest = tracer->take_events();
  pending.insert(pending.end(), rest.begin(), rest.end());
  std::stable_sort(pending.begin(), pending.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; });
  const std::int64_t t1 = snap1 ? snap1->mono_ns : sys::mono_now_ns();
  for (auto& e : pending) printer.event(e, t0, t1);

  std::FILE* sout = o.format == "raw" ? stderr : stdout;
  // The summary (on stderr with --format raw): tracepoint counts next to /proc/interrupts over [t0, t1].
  std::fprintf(sout, "\nsummary over %s (tracepoint counts inside the /proc/interrupts snapshot span):\n",
               format_duration_ns(t1 - t0).c_str());
  std::vector<int> cpus = topts.cpus;
  for (int cpu : cpus) {
    const auto it = printer.counts().find(cpu);
    const CpuCounts c = it == printer.counts().end() ? CpuCounts{} : it->second;
    const bool have = snap0 && snap1;
    const std::int64_t tlb = have ? sys::interrupts_delta(*snap0, *snap1, "TLB", cpu) : -1;
    const std::int64_t cal = have ? sys::interrupts_delta(*snap0, *snap1, "CAL", cpu) : -1;
    const char* role = cpu == plan.culprit ? "culprit" : "victim";
    std::fprintf(sout,
                 "cpu%d %s: tlb_flush reason=1: %lld, /proc/interrupts TLB: %lld, CAL: %lld, call-function IPIs: %lld, "
                 "reason=5: %lld, reason=4 sends: %lld, timer: %lld, resched: %lld, irq: %lld\n",
                 cpu, role, static_cast<long long>(c.by_reason[1]), static_cast<long long>(tlb),
                 static_cast<long long>(cal), static_cast<long long>(c.call_function),
                 static_cast<long long>(c.by_reason[5]), static_cast<long long>(c.by_reason[4]),
                 static_cast<long long>(c.timer), static_cast<long long>(c.resched), static_cast<long long>(c.irq));
    std::string funcs;
    for (auto& [f, n] : c.csd) funcs += fmt::format(" {}={}", f, n);
    std::fprintf(sout, "cpu%d %s: csd functions:%s\n", cpu, role, funcs.empty() ? " none" : funcs.c_str());
  }
  std::fprintf(sout, "lost events: %lld\n", static_cast<long long>(kt.lost_events));
  std::fflush(sout);

  if (sig) return sys::exit_code_for_signal(sig);
  if (child >= 0) {
    if (WIFEXITED(child_status) && WEXITSTATUS(child_status) != 0) {
      std::fprintf(stderr, "shootdown trace: command exited with status %d\n", WEXITSTATUS(child_status));
      return kExitError;
    }
    if (WIFSIGNALED(child_status)) {
      std::fprintf(stderr, "shootdown trace: command killed by signal %d\n", WTERMSIG(child_status));
      return kExitError;
    }
  }
  return kExitOk;
}

}  // namespace

Command add_trace(CLI::App& root) {
  auto o = std::make_shared<TraceOptions>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("trace", "Live stream of the kernel events behind shootdowns");
  app->add_option("--culprit-cpu", o->culprit_cpu,
                  "CPU whose IPI sends and reason-4 flushes are traced with backtraces")
      ->check(CLI::NonNegativeNumber);
  app->add_option("--victim-cpus", o->victim_cpus, "CPU list receiving shootdowns, e.g. 1,3-5");
  app->add_option("--duration", o->duration, "Stop after this long (e.g. 10s); default: Ctrl-C or command exit");
  app->add_flag("--all", o->all, "Also show timer ticks, device IRQs, reschedule IPIs and task-switch flushes");
  app->add_flag("-q,--quiet", o->quiet, "Only print the summary");
  app->add_option("--format", o->format,
                  "text: the human-readable stream; raw: one event per line "
                  "(mono_ns cpu tid event a b c function) for scripts")
      ->check(CLI::IsMember({"text", "raw"}));
  app->add_flag("--no-callchains", o->no_callchains, "Do not sample kernel backtraces on the culprit CPU");
  app->add_option("command", o->command, "Command to run while tracing (after --)");
  app->footer(
      "Needs root (or CAP_PERFMON and a mounted tracefs). Mounts tracefs for the\n"
      "moment it takes to read event formats when it is not mounted, and changes\n"
      "no ftrace setting. The summary compares tracepoint counts with\n"
      "/proc/interrupts over the same span.\n\n"
      "EXAMPLES:\n"
      "  shootdown trace --culprit-cpu 0 --victim-cpus 1                 until Ctrl-C\n"
      "  shootdown trace --culprit-cpu 0 --victim-cpus 1 --duration 10s --all\n"
      "  shootdown trace --culprit-cpu 0 --victim-cpus 1 -- taskset -c 0 ./my-app\n"
      "  shootdown trace -q --duration 5s                                  summary only\n\n"
      "EXIT STATUS: 0 done, 1 error (tracing unavailable, command failed), 2 bad input, 130/143 interrupted.");
  return {app, [o]() { return execute_trace(*o); }};
}

}  // namespace shootdown::cmd
