// SPDX-License-Identifier: Apache-2.0
// shootdown trace: a live, human-readable stream of the kernel events behind
// TLB shootdowns (the article's SystemTap script, done with perf tracepoints),
// and a per-CPU summary that cross-checks the tracepoint counts against
// /proc/interrupts over the same span.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fmt/core.h>
#include <limits>
#include <map>
#include <optional>

#include "cli/common_options.hpp"
#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "cmd/trace_session.hpp"
#include "core/cpulist.hpp"
#include "core/event_counts.hpp"
#include "core/events.hpp"
#include "core/units.hpp"
#include "sink/atomic_writer.hpp"
#include "sys/affinity.hpp"
#include "sys/child.hpp"
#include "sys/interrupts.hpp"
#include "sys/perf_trace.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

namespace shootdown::cmd {

namespace {

struct TraceOptions {
  std::string culprit_cpu;
  std::string victim_cpus;
  std::string duration;
  bool all = false;
  bool quiet = false;
  std::string format = "text";
  bool no_callchains = false;
  std::string output;  // -o FILE: the stream and summary go there, the command keeps stdout
  std::vector<std::string> command;
};

std::string pages_str(std::int64_t pages) {
  return pages == -1 ? "all" : std::to_string(pages);
}

std::string mask_str(const CpuMask& m) {
  return m.empty() ? "-" : "cpu" + format_cpumask(m);
}

class Printer {
 public:
  Printer(const sys::Tracer& t, std::FILE* out, int culprit, std::int64_t t0, bool all, bool quiet, bool raw)
      : tracer_(t), out_(out), culprit_(culprit), t0_(t0), all_(all), quiet_(quiet || raw), raw_(raw) {}

  void event(const KernelEvent& e) {
    Open& o = open_[e.cpu];
    if (raw_) raw_line(e);
    switch (e.type) {
      case EventType::kTlbFlush:
        if (e.a == kTlbFlushOnTaskSwitch && !all_) return;  // context switches: noise unless --all
        line(e,
             fmt::format("tlb_flush reason={} pages={}", tlb_flush_reason_text(static_cast<int>(e.a)), pages_str(e.b)));
        backtrace(e);
        return;
      case EventType::kCallFunctionEntry:
      case EventType::kCallFunctionSingleEntry:
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
        if (o.cf_start)
          o.cf_funcs.push_back(fn);
        else if (all_)
          line(e, "csd function " + fn + " (outside an IPI handler)");
        return;
      }
      case EventType::kLocalTimerEntry:
        o.timer_start = e.mono_ns;
        return;
      case EventType::kLocalTimerExit:
        if (all_ && o.timer_start) line(e, "timer tick " + format_duration_ns(e.mono_ns - o.timer_start));
        o.timer_start = 0;
        return;
      case EventType::kReschedEntry:
        o.resched_start = e.mono_ns;
        return;
      case EventType::kReschedExit:
        if (all_ && o.resched_start) line(e, "reschedule IPI " + format_duration_ns(e.mono_ns - o.resched_start));
        o.resched_start = 0;
        return;
      case EventType::kIrqHandlerEntry:
        o.irq_start = e.mono_ns;
        return;
      case EventType::kIrqHandlerExit:
        if (all_ && o.irq_start)
          line(e, fmt::format("irq {} handler {}", e.a, format_duration_ns(e.mono_ns - o.irq_start)));
        o.irq_start = 0;
        return;
      case EventType::kIpiSendCpu:
      case EventType::kIpiSendCpumask: {
        const std::string to = e.type == EventType::kIpiSendCpu ? fmt::format("cpu{}", e.a)
                               : e.cpumask >= 0                 ? mask_str(tracer_.cpumask(e.cpumask))
                                                                : mask_str(CpuMask({static_cast<std::uint64_t>(e.a)}));
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
    std::fprintf(out_, "%lld %d %d %s %lld %lld %lld %s\n", static_cast<long long>(e.mono_ns), e.cpu, e.tid,
                 event_type_name(e.type), static_cast<long long>(e.a), static_cast<long long>(e.b),
                 static_cast<long long>(e.c), fn.c_str());
  }

  const char* role(int cpu) const {
    if (cpu == culprit_) return "CULPRIT";
    return "VICTIM ";
  }

  void line(const KernelEvent& e, const std::string& what) {
    if (quiet_) return;
    std::fprintf(out_, "%s cpu%d %+10.3fms %s [%d]\n", role(e.cpu), e.cpu, static_cast<double>(e.mono_ns - t0_) / 1e6,
                 what.c_str(), e.tid);
  }

  void backtrace(const KernelEvent& e) {
    if (quiet_ || e.callchain < 0) return;
    const Callchain c = tracer_.callchain(e.callchain);
    for (auto& s : c.symbols) std::fprintf(out_, "        %s\n", s.c_str());
  }

  const sys::Tracer& tracer_;
  std::FILE* out_;
  int culprit_;
  std::int64_t t0_;
  bool all_, quiet_, raw_;
  std::map<int, Open> open_;
};

class TraceTool final : public Tool {
 public:
  explicit TraceTool(const TraceOptions& o) : o_(o) {}

  void plan() override {
    const cli::CpuPlan cpus = cli::resolve_cpus(o_.culprit_cpu, o_.victim_cpus, cli::read_machine_facts());
    culprit_ = cpus.culprit;
    victims_ = cpus.victims;
    if (!o_.duration.empty()) duration_ns_ = cli::positive_duration("--duration", o_.duration);
    check_output_file("-o", o_.output);
  }

  void prepare() override {
    std::vector<int> cpus{culprit_};
    cpus.insert(cpus.end(), victims_.begin(), victims_.end());
    auto tracer = sys::Tracer::open(tracer_options(cpus, culprit_, !o_.no_callchains));
    if (!tracer) throw RuntimeError("kernel tracing unavailable: " + tracer.error());
    tracer_ = std::move(*tracer);
    if (!o_.output.empty()) {
      // Streamed to a temporary next to FILE and renamed over it at the end.
      try {
        file_ = std::make_unique<sink::AtomicStream>(o_.output);
      } catch (const std::runtime_error& e) {
        throw RuntimeError(fmt::format("-o {}: {}", o_.output, e.what()));
      }
      out_ = file_->file();
    }
    for (auto& m : tracer_->missing()) std::fprintf(stderr, "shootdown trace: missing: %s\n", m.c_str());
    if (auto snap = sys::read_interrupts()) snap0_ = std::move(*snap);
    t0_ = snap0_ ? snap0_->mono_ns : tracer_->start_ns();
    std::fprintf(
        stderr, "shootdown trace: culprit cpu%d, victims cpu%s; %zu tracepoints; %s\n", culprit_,
        format_cpulist(victims_).c_str(), tracer_->tracepoints().size(),
        o_.command.empty() ? (duration_ns_ ? "for the given duration" : "Ctrl-C to stop") : "until the command exits");
    std::fflush(stderr);
    // Spawned before we pin ourselves: the command keeps our original affinity.
    if (!o_.command.empty()) child_ = sys::ChildProcess::spawn(o_.command);
    (void)sys::pin_this_thread(culprit_);
    printer_ = std::make_unique<Printer>(*tracer_, out_, culprit_, t0_, o_.all, o_.quiet, o_.format == "raw");
  }

  void run() override {
    // Hold events back this long so the per-CPU rings merge in time order.
    constexpr std::int64_t kHoldBackNs = 50'000'000;
    Watch w;
    w.child = child_.valid() ? &child_ : nullptr;
    w.start_ns = t0_;
    w.duration_ns = duration_ns_;
    w.tick = [this] {
      tracer_->drain();
      emit(sys::mono_now_ns() - kHoldBackNs, std::numeric_limits<std::int64_t>::max());
      return false;
    };
    watch(w);
    if (auto snap = sys::read_interrupts()) snap1_ = std::move(*snap);
    signal_ = sys::StopSignals::pending();
    child_.terminate();  // stopped by a signal or the duration: do not leave the command behind
    tracer_->drain();
    trace_ = tracer_->stop();
    // The rest: emitted, counted only inside the /proc/interrupts snapshot span.
    t1_ = snap1_ ? snap1_->mono_ns : sys::mono_now_ns();
    emit(0, t1_);
  }

  int interrupted_by() const override { return signal_; }

  int report() override {
    std::FILE* sout = o_.format == "raw" ? stderr : out_;
    // The summary (on stderr with --format raw): tracepoint counts next to /proc/interrupts over [t0, t1].
    std::fprintf(sout, "\nsummary over %s (tracepoint counts inside the /proc/interrupts snapshot span):\n",
                 format_duration_ns(t1_ - t0_).c_str());
    std::vector<int> cpus{culprit_};
    cpus.insert(cpus.end(), victims_.begin(), victims_.end());
    for (int cpu : cpus) {
      const auto it = tally_.cpus.find(cpu);
      const CpuEventTally c = it == tally_.cpus.end() ? CpuEventTally{} : it->second;
      const bool have = snap0_ && snap1_;
      const std::int64_t tlb = have ? sys::interrupts_delta(*snap0_, *snap1_, "TLB", cpu) : -1;
      const std::int64_t cal = have ? sys::interrupts_delta(*snap0_, *snap1_, "CAL", cpu) : -1;
      const char* role = cpu == culprit_ ? "culprit" : "victim";
      std::fprintf(
          sout,
          "cpu%d %s: tlb_flush reason=1: %lld, /proc/interrupts TLB: %lld, CAL: %lld, call-function IPIs: %lld, "
          "reason=5: %lld, reason=4 sends: %lld, timer: %lld, resched: %lld, irq: %lld\n",
          cpu, role, static_cast<long long>(c.tlb_flush[kTlbRemoteShootdown]), static_cast<long long>(tlb),
          static_cast<long long>(cal), static_cast<long long>(c.call_function),
          static_cast<long long>(c.tlb_flush[kTlbRemoteWrongCpu]),
          static_cast<long long>(c.tlb_flush[kTlbRemoteSendIpi]), static_cast<long long>(c.timer),
          static_cast<long long>(c.resched), static_cast<long long>(c.irq));
      std::map<std::string, std::int64_t> by_name;
      for (const auto& [addr, n] : c.csd) by_name[function_name(addr)] += n;
      std::string funcs;
      for (auto& [f, n] : by_name) funcs += fmt::format(" {}={}", f, n);
      std::fprintf(sout, "cpu%d %s: csd functions:%s\n", cpu, role, funcs.empty() ? " none" : funcs.c_str());
    }
    std::fprintf(sout, "lost events: %lld\n", static_cast<long long>(trace_.lost_events));
    std::fflush(sout);
    if (file_) {
      try {
        file_->commit();
      } catch (const std::runtime_error& e) {
        throw RuntimeError(fmt::format("-o {}: {}", o_.output, e.what()));
      }
      std::fprintf(stderr, "shootdown trace: report in %s\n", o_.output.c_str());
    }

    if (signal_) return kExitOk;  // drive() exits 128 + signal
    if (child_.valid() && !child_.exited_ok()) {
      std::fprintf(stderr, "shootdown trace: command %s\n", child_.describe_exit().c_str());
      return kExitError;
    }
    return kExitOk;
  }

 private:
  std::string function_name(std::uint64_t addr) const {
    std::string fn = tracer_->function_name(addr);
    return fn.empty() ? tracer_->symbolize(addr) : fn;
  }

  // Prints the events up to `upto` (0 = all) in time order and counts those
  // inside [t0, count_to].
  void emit(std::int64_t upto, std::int64_t count_to) {
    auto fresh = tracer_->take_events();
    pending_.insert(pending_.end(), fresh.begin(), fresh.end());
    std::stable_sort(pending_.begin(), pending_.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; });
    std::size_t k = 0;
    for (; k < pending_.size() && (upto == 0 || pending_[k].mono_ns <= upto); ++k) printer_->event(pending_[k]);
    TallyFilter f;
    f.from_ns = t0_;
    f.to_ns = count_to;
    tally_events(std::span<const KernelEvent>(pending_.data(), k), f, tally_);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(k));
    std::fflush(out_);
  }

  const TraceOptions& o_;
  int culprit_ = -1;
  std::vector<int> victims_;
  std::int64_t duration_ns_ = 0;
  std::unique_ptr<sys::Tracer> tracer_;
  std::unique_ptr<sink::AtomicStream> file_;  // -o FILE
  std::FILE* out_ = stdout;                   // the stream and summary: stdout or file_
  sys::ChildProcess child_;
  std::optional<sys::InterruptsSnapshot> snap0_, snap1_;
  std::int64_t t0_ = 0, t1_ = 0;
  std::unique_ptr<Printer> printer_;
  std::vector<KernelEvent> pending_;
  EventTally tally_;
  KernelTrace trace_;
  int signal_ = 0;
};

}  // namespace

Command add_trace(CLI::App& root) {
  auto o = std::make_shared<TraceOptions>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("trace", "Live stream of the kernel events behind shootdowns");
  app->add_option("--culprit-cpu", o->culprit_cpu,
                  "CPU whose IPI sends and reason-4 flushes are traced with backtraces")
      ->type_name("CPU");
  app->add_option("--victim-cpus", o->victim_cpus, "CPU list receiving shootdowns, e.g. 1,3-5");
  cli::add_duration(*app, o->duration, "Ctrl-C or command exit");
  app->add_flag("--all", o->all, "Also show timer ticks, device IRQs, reschedule IPIs and task-switch flushes");
  app->add_flag("-q,--quiet", o->quiet, "Only print the summary");
  app->add_option("--format", o->format,
                  "text: the human-readable stream; raw: one event per line "
                  "(mono_ns cpu tid event a b c function) for scripts")
      ->check(CLI::IsMember({"text", "raw"}));
  app->add_flag("--no-callchains", o->no_callchains, "Do not sample kernel backtraces on the culprit CPU");
  cli::add_output_file(*app, o->output, "the stream and summary");
  cli::add_command(*app, o->command, "run while tracing");
  return tool_command<TraceTool>(
      app, o,
      {.notes = "Needs root (or CAP_PERFMON and a mounted tracefs). Mounts tracefs for the\n"
                "moment it takes to read event formats when it is not mounted, and changes\n"
                "no ftrace setting. The summary compares tracepoint counts with\n"
                "/proc/interrupts over the same span.",
       .examples = {"shootdown trace --culprit-cpu 0 --victim-cpus 1                 until Ctrl-C",
                    "shootdown trace --culprit-cpu 0 --victim-cpus 1 --duration 10s --all",
                    "shootdown trace --culprit-cpu 0 --victim-cpus 1 -- taskset -c 0 ./my-app",
                    "shootdown trace -o trace.txt -- ./my-app > app.out     the app keeps stdout",
                    "shootdown trace -q --duration 5s                                  summary only"},
       .exit_status = "0 done, 1 error (tracing unavailable, command failed), 2 bad input, 130/143 interrupted."});
}

}  // namespace shootdown::cmd
