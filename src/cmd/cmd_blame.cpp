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

#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "core/blame.hpp"
#include "sink/blame_out.hpp"
#include "sys/child.hpp"
#include "sys/cpus.hpp"
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
    try {
      if (!o_.duration.empty()) duration_ns_ = cli::positive_duration("--duration", o_.duration);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (o_.stack_bytes < 8 || o_.stack_bytes > 4096)
      throw UsageError(fmt::format("--stack-bytes {}: out of range [8, 4096]", o_.stack_bytes));
    check_output_file("-o", o_.output);
  }

  void prepare() override {
    so_.cpus = sys::read_topology().online;
    if (so_.cpus.empty())
      for (int c = 0; c < static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)); ++c) so_.cpus.push_back(c);
    so_.stack_bytes = o_.stack_bytes;
    std::string why;
    sampler_ = sys::FlushSampler::open(so_, &why);
    if (!sampler_) throw RuntimeError("not permitted: " + why);
    target_ = o_.pid;
    if (target_ > 0) {
      if (auto m = sys::read_proc_maps(target_)) syms_.add_maps_text(target_, *m);
      command_ = proc_comm(target_);
    }
    irq0_ = sys::read_interrupts();
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
    irq1_ = sys::read_interrupts();
    child_.terminate();  // duration or signal: do not leave the command behind
  }

  void analyze() override {
    // The target and its descendants (PERF_RECORD_FORK, in time order).
    std::set<int> pids{target_};
    std::set<int> tids;
    std::stable_sort(data_.forks.begin(), data_.forks.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; });
    for (const auto& f : data_.forks) {
      if (!pids.count(f.ppid)) continue;
      if (f.pid != f.ppid) pids.insert(f.pid);
      tids.insert(f.tid);
    }
    for (const auto& m : data_.mmaps)
      if (pids.count(m.pid)) syms_.add_mapping(m);
    const sys::Kallsyms ksyms = sys::Kallsyms::load();

    in_.pid = target_;
    in_.command = command_;
    in_.start_ns = data_.start_ns;
    in_.end_ns = data_.stop_ns;
    in_.lost = data_.lost;
    in_.processes = static_cast<int>(pids.size());
    in_.has_csd = std::none_of(data_.missing.begin(), data_.missing.end(),
                               [](const std::string& m) { return m.rfind("csd:csd_queue_cpu", 0) == 0; });
    for (auto& m : data_.missing) in_.notes.push_back("missing: " + m);
    if (data_.dropped)
      in_.notes.push_back(fmt::format("{} flush samples over the in-memory limit were not kept", data_.dropped));
    if (ksyms.empty()) in_.notes.push_back("kernel symbols unavailable (/proc/kallsyms hidden): syscalls unknown");

    std::map<std::pair<int, std::uint64_t>, UserFrame> cache;
    auto frame = [&](int pid, std::uint64_t ip, bool ret) {
      auto key = std::make_pair(pid, ip * 2 + (ret ? 1 : 0));
      auto it = cache.find(key);
      if (it != cache.end()) return it->second;
      UserFrame f = syms_.symbolize(pid, ip, ret);
      cache.emplace(key, f);
      return f;
    };
    std::int64_t cut_stacks = 0;
    for (const auto& s : data_.flushes) {
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
      // Frames that are real code addresses (core user_frames: the walk ends
      // at the first address outside every executable mapping of the target;
      // the caller a frameless leaf hides comes from the stack copy).
      bool cut = false;
      const auto raw = user_frames(
          s.user_ips, s.has_sp_word ? &s.sp_word : nullptr,
          [&](std::uint64_t ip) { return syms_.executable(s.pid, ip); }, &cut);
      if (cut) ++cut_stacks;
      for (const RawFrame& r : raw) {
        UserFrame u = frame(s.pid, r.ip, r.return_address);
        u.recovered = r.recovered;
        f.user.push_back(std::move(u));
      }
      in_.flushes.push_back(std::move(f));
    }
    if (cut_stacks > 0)
      in_.notes.push_back(fmt::format(
          "{} of {} user stacks cut at a frame outside every executable mapping of the target (code without frame "
          "pointers: the walk read data as return addresses); the frames kept are real code addresses",
          cut_stacks, in_.flushes.size()));
    for (const auto& ipi : data_.ipis) {
      if (!pids.count(ipi.pid)) continue;
      IpiSend s;
      s.mono_ns = ipi.mono_ns;
      s.cpu = ipi.cpu;
      s.tid = ipi.tid;
      s.targets = ipi.targets;
      s.callback = ksyms.function(ipi.callback);
      s.queued = ipi.queued;
      s.tlb = s.callback == "flush_tlb_func";
      in_.ipis.push_back(s);
    }
    for (const auto& [key, n] : data_.received) {
      in_.received_all[key.first] += n;
      if (pids.count(key.second)) in_.received_by_target[key.first] += n;
    }
    if (irq0_ && irq1_)
      for (int cpu : irq1_->cpus) in_.interrupts_tlb[cpu] = sys::interrupts_delta(*irq0_, *irq1_, "TLB", cpu);
    in_.threads = static_cast<int>(tids.size());
    if (in_.threads == 0) in_.threads = 1;
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
    return signal_ ? sys::exit_code_for_signal(signal_) : kExitOk;
  }

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
  app->add_option("--duration", o->duration, "Stop after this long (e.g. 10s); default: Ctrl-C or target exit");
  app->add_flag("--json", o->json, "Print the report as JSON (docs/blame-probe.md, FIELDS)");
  app->add_flag("--folded", o->folded,
                "Print collapsed stacks (flamegraph.pl / speedscope input) instead of the report");
  app->add_option("--top", o->top, "Call sites shown on the console")->check(CLI::Range(1, 1000));
  app->add_option("--frames", o->frames, "User frames per call site")->check(CLI::Range(1, 64));
  app->add_option("--stack-bytes", o->stack_bytes,
                  "User stack bytes copied per sample (the hidden caller is at the top)");
  app->add_option("-o,--output", o->output,
                  "Write the report to FILE (atomically) instead of stdout: the command keeps its stdout");
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
  return tool_command<BlameTool>(app, o);
}

}  // namespace shootdown::cmd
