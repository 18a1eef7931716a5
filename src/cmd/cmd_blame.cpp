// SPDX-License-Identifier: Apache-2.0
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
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fmt/core.h>
#include <map>
#include <optional>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/common_options.hpp"
#include "cli/run_options.hpp"
#include "cmd/blame_input.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "core/blame.hpp"
#include "core/doctor.hpp"
#include "sink/blame_out.hpp"
#include "sys/child.hpp"
#include "sys/cpus.hpp"
#include "sys/facts.hpp"
#include "sys/fs.hpp"
#include "sys/interrupts.hpp"
#include "sys/kallsyms.hpp"
#include "sys/perf_sampler.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"
#include "sys/user_symbols.hpp"

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
  std::string output;  // -o FILE
  std::vector<std::string> command;
};

std::string proc_comm(int pid) {
  return sys::trim(sys::read_file_or("/proc/" + std::to_string(pid) + "/comm", ""));
}

class BlameTool final : public Tool {
 public:
  explicit BlameTool(const BlameOpts& o) : o_(o) {}

  void plan() override {
    if (o_.pid != 0 && !o_.command.empty()) throw UsageError("give either -p PID or -- CMD ARGS, not both");
    if (o_.pid == 0 && o_.command.empty()) throw UsageError("nothing to blame: give -p PID or -- CMD ARGS");
    if (o_.pid < 0) throw UsageError(fmt::format("-p {}: not a process id", o_.pid));
    if (o_.pid > 0 && !sys::path_exists("/proc/" + std::to_string(o_.pid)))
      throw UsageError(fmt::format("-p {}: no such process", o_.pid));
    if (!o_.duration.empty()) duration_ns_ = cli::positive_duration("--duration", o_.duration);
    if (o_.stack_bytes < 8 || o_.stack_bytes > 4096)
      throw UsageError(fmt::format("--stack-bytes {}: out of range [8, 4096]", o_.stack_bytes));
    check_output_file("-o", o_.output);
  }

  void prepare() override {
    so_.cpus = sys::read_topology().online;
    if (so_.cpus.empty())
      for (int c = 0; c < static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)); ++c) so_.cpus.push_back(c);
    so_.stack_bytes = o_.stack_bytes;
    auto sampler = sys::FlushSampler::open(so_);
    if (!sampler) throw RuntimeError("not permitted: " + sampler.error());
    sampler_ = std::move(*sampler);
    target_ = o_.pid;
    if (target_ > 0) {
      if (auto m = sys::read_proc_maps(target_)) syms_.add_maps_text(target_, *m);
      command_ = proc_comm(target_);
    }
    if (auto snap = sys::read_interrupts()) irq0_ = std::move(*snap);
    sampler_->start_reader();
    if (!o_.command.empty()) {
      child_ = sys::ChildProcess::spawn(o_.command);
      target_ = child_.pid();
      for (auto& a : o_.command) command_ += (command_.empty() ? "" : " ") + a;
    }
    std::fprintf(stderr, "shootdown blame: sampling pid %d (%s) on %zu CPUs; %s\n", target_, command_.c_str(),
                 so_.cpus.size(),
                 child_.valid() ? "until the command exits"
                 : duration_ns_ ? "for the given duration"
                                : "Ctrl-C to stop");
    std::fflush(stderr);
  }

  void run() override {
    Watch w;
    w.child = child_.valid() ? &child_ : nullptr;
    w.pid = child_.valid() ? 0 : target_;
    w.duration_ns = duration_ns_;
    const StopCause cause = watch(w);
    signal_ = sys::StopSignals::pending();
    // Maps while the target still lives (catches mappings made before we started).
    if (cause != StopCause::kChildExited && cause != StopCause::kTargetGone)
      if (auto m = sys::read_proc_maps(target_)) syms_.add_maps_text(target_, *m);
    data_ = sampler_->stop();
    if (auto snap = sys::read_interrupts()) irq1_ = std::move(*snap);
    child_.terminate();  // duration or signal: do not leave the command behind
  }

  void analyze() override {
    in_ = blame_input(target_, command_, data_, syms_, irq0_ ? &*irq0_ : nullptr, irq1_ ? &*irq1_ : nullptr);
    if (std::string note = flushes_without_ipis_note(check_broadcast_flush(sys::read_doctor_facts())); !note.empty())
      in_.notes.push_back(std::move(note));
    bo_.top = o_.top;
    bo_.max_frames = o_.frames;
  }

  int report() override {
    std::string text;
    if (o_.folded) {
      text = folded_stacks(in_, bo_);
    } else {
      const BlameReport rep = blame(in_, bo_);
      text = o_.json ? sink::blame_json(rep) : sink::blame_text(rep, bo_);
    }
    emit_report(text, o_.output, stdout);
    if (!o_.output.empty()) std::fprintf(stderr, "shootdown blame: report in %s\n", o_.output.c_str());
    // Folded stacks have no room for totals: a dropped sample must still be said.
    if (o_.folded && in_.lost > 0)
      std::fprintf(stderr, "shootdown blame: the kernel dropped %lld samples: the counts above are low\n",
                   static_cast<long long>(in_.lost));
    if (child_.valid() && !child_.exited_ok() && !(signal_ && WIFSIGNALED(child_.status())))
      std::fprintf(stderr, "shootdown blame: command %s\n", child_.describe_exit().c_str());
    return kExitOk;
  }
  int interrupted_by() const override { return signal_; }

 private:
  const BlameOpts& o_;
  std::int64_t duration_ns_ = 0;
  sys::SamplerOptions so_;
  std::unique_ptr<sys::FlushSampler> sampler_;
  sys::UserSymbols syms_;
  int target_ = 0;
  std::string command_;
  sys::ChildProcess child_;
  std::optional<sys::InterruptsSnapshot> irq0_, irq1_;
  sys::SamplerData data_;
  int signal_ = 0;
  BlameInput in_;
  BlameOptions bo_;
};

}  // namespace

Command add_blame(CLI::App& root) {
  auto o = std::make_shared<BlameOpts>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("blame", "Find the call sites in a process that cause shootdowns");
  app->add_option("-p,--pid", o->pid, "Process to watch (its threads and the processes it starts)")
      ->check(CLI::PositiveNumber);
  cli::add_duration(*app, o->duration, "Ctrl-C or target exit");
  cli::add_json_flag(*app, o->json, "the report (docs/blame-probe.md, FIELDS)", "the console report");
  app->add_flag("--folded", o->folded,
                "Print collapsed stacks (flamegraph.pl / speedscope input) instead of the report");
  app->add_option("--top", o->top, "Call sites shown on the console")->check(CLI::Range(1, 1000));
  app->add_option("--frames", o->frames, "User frames per call site")->check(CLI::Range(1, 64));
  app->add_option("--stack-bytes", o->stack_bytes,
                  "User stack bytes copied per sample (the hidden caller is at the top)");
  cli::add_output_file(*app, o->output, "the report");
  cli::add_command(*app, o->command, "run and blame");
  return tool_command<BlameTool>(
      app, o,
      {.notes = "Samples tlb:tlb_flush reason 4 (the initiator, with kernel and user\n"
                "callchains) and ipi:ipi_send_* on every CPU, keeps the target's, and counts\n"
                "the reason-1 flushes its threads received. Build the target with frame\n"
                "pointers (-fno-omit-frame-pointer) for deep user stacks.",
       .examples = {"shootdown blame -p 1234 --duration 10s", "shootdown blame -- ./my-app --config prod.toml",
                    "shootdown blame --folded -- ./my-app | flamegraph.pl > blame.svg"},
       .exit_status = "0 done, 1 not permitted or error, 2 bad input (no such PID), 130/143 interrupted."});
}

}  // namespace shootdown::cmd
