// shootdown compare: arms x trials, each trial a fresh experiment, arms
// interleaved in seeded random blocks; statistics in core/compare, outputs in
// sink/compare_out. Method and figures: docs/compare.md.
#include <memory>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>
#include <map>
#include <random>
#include <unistd.h>

#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/run_support.hpp"
#include "core/attribution.hpp"
#include "core/compare.hpp"
#include "core/units.hpp"
#include "experiment/arena.hpp"
#include "experiment/experiment.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/compare_out.hpp"
#include "sys/environment.hpp"
#include "sys/fs.hpp"
#include "sys/perf_trace.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

namespace shootdown::cmd {

namespace {

// Short per-trial durations: the release window is what compare measures;
// the baseline only needs enough samples for a stable median (~150 ms is
// ~300k batches here) and the after window only has to cover late effects.
constexpr const char* kCompareBaseline = "150ms";
constexpr const char* kCompareAfter = "100ms";

const std::vector<std::string> kMemoryStrategies = {"reuse",        "munmap",  "free", "madvise-dontneed",
                                                    "madvise-free", "mprotect"};
const std::vector<std::string> kJournalStrategies = {"journal-recycle", "journal-unmap"};

struct CompareCommand {
  cli::RunOptions run;
  std::string arms;
  int trials = 20;
  std::string seed;
  int bootstrap = 2000;
  std::vector<std::string> fail_if;
  std::string max_regression;
  std::string out;
  bool json = false;
  std::string workload = "memory";
  std::string segment_size = "16MiB";
  std::string journal_dir;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Victims' chunks B, kept across trials (docs/compare.md "fresh chunks"):
// chunk A, the memory each arm releases, is allocated and pre-faulted fresh
// for every trial; B is only the victims' measuring instrument, and
// re-faulting 1 GiB of it per victim per trial would double the time a
// trial takes without changing what it measures.
class ChunkPool {
 public:
  exp::Chunk* get(int cpu, std::size_t size, exp::PageMode mode, int node) {
    auto key = std::make_tuple(cpu, size, static_cast<int>(mode), node);
    auto it = pool_.find(key);
    if (it == pool_.end()) it = pool_.emplace(key, exp::Chunk(size, mode, exp::Allocator::kMmap, node)).first;
    return &it->second;
  }

 private:
  std::map<std::tuple<int, std::size_t, int, int>, exp::Chunk> pool_;
};

// One kernel tracer for the whole compare, opened and enabled once before
// the first trial; each trial's TraceSession is a time window on it. Opening
// a Tracer per trial (tracefs formats, kallsyms, ~57 IPIs to enable) cost
// ~1 s per trial here, as much as the experiment itself. No callchains:
// compare needs counts and spans, not call sites. The rings are drained on
// the culprit thread at the window's start and end (a trial's events fit a
// 1 MiB ring many times over; losses are counted and recorded).
class SharedTracer {
 public:
  std::unique_ptr<exp::TraceSession> open(const Plan& plan, std::string* why) {
    if (!tried_) {
      tried_ = true;
      sys::TracerOptions o;
      o.cpus.push_back(plan.culprit_cpu);
      for (int v : plan.victim_cpus) o.cpus.push_back(v);
      o.culprit_cpu = plan.culprit_cpu;
      o.reader_cpu = plan.culprit_cpu;
      o.callchains = false;
      tracer_ = sys::Tracer::open(o, &why_);
    }
    if (!tracer_) {
      if (why) *why = why_;
      return nullptr;
    }
    return std::make_unique<Window>(*tracer_);
  }

 private:
  class Window final : public exp::TraceSession {
   public:
    explicit Window(sys::Tracer& t) : t_(t) {}
    void start() override {
      t_.drain();
      (void)t_.take_events();  // between trials: not ours to analyse
      lost0_ = t_.lost_events();
      start_ns_ = sys::mono_now_ns();
    }
    KernelTrace stop() override {
      KernelTrace kt;
      kt.stop_ns = sys::mono_now_ns();
      t_.drain();
      kt.enabled = true;
      kt.status = "on (one tracer for all trials)";
      kt.tracepoints = t_.tracepoints();
      kt.missing = t_.missing();
      kt.start_ns = start_ns_;
      kt.lost_events = t_.lost_events() - lost0_;
      for (auto& e : t_.take_events())
        if (e.mono_ns >= start_ns_) kt.events.push_back(e);
      std::stable_sort(kt.events.begin(), kt.events.end(),
                       [](const KernelEvent& a, const KernelEvent& b) { return a.mono_ns < b.mono_ns; });
      for (const auto& e : kt.events)
        if (e.type == EventType::kCsdFunctionEntry || e.type == EventType::kCsdFunctionExit) {
          const auto addr = static_cast<std::uint64_t>(e.b);
          if (addr && !kt.symbols.count(addr)) kt.symbols.emplace(addr, t_.symbolize(addr));
        }
      return kt;
    }

   private:
    sys::Tracer& t_;
    std::int64_t start_ns_ = 0;
    std::int64_t lost0_ = 0;
  };
  bool tried_ = false;
  std::string why_;
  std::unique_ptr<sys::Tracer> tracer_;
};

struct Arm {
  std::string name;   // as given
  std::string label;  // unique
  std::string strategy;
  std::string pages;
  Plan plan;
};

std::vector<Arm> parse_arms(const CompareCommand& c, const cli::MachineFacts& facts,
                            std::vector<std::string>* warnings) {
  std::vector<std::string> names;
  std::string cur;
  for (char ch : c.arms + ",") {
    if (ch == ',') {
      const auto b = cur.find_first_not_of(' ');
      const auto e = cur.find_last_not_of(' ');
      names.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  const bool journal = c.workload == "journal";
  const auto& allowed = journal ? kJournalStrategies : kMemoryStrategies;
  const std::string accepted =
      journal ? join(kJournalStrategies) : join(kMemoryStrategies) + ", each optionally thp- prefixed (thp-munmap)";
  if (names.size() < 2)
    throw UsageError(
        fmt::format("--arms '{}': give at least two arms, the first is the control (accepted: {})", c.arms, accepted));
  std::vector<Arm> arms;
  for (const auto& n : names) {
    Arm a;
    a.name = n;
    a.strategy = n;
    a.pages = c.run.pages;
    if (!journal && n.rfind("thp-", 0) == 0) {
      a.strategy = n.substr(4);
      a.pages = "thp";
    }
    if (n.empty() || std::find(allowed.begin(), allowed.end(), a.strategy) == allowed.end()) {
      std::string hint;
      if (!journal && std::find(kJournalStrategies.begin(), kJournalStrategies.end(), n) != kJournalStrategies.end())
        hint = "; journal arms need --workload journal";
      if (journal && std::find(kMemoryStrategies.begin(), kMemoryStrategies.end(), n) != kMemoryStrategies.end())
        hint = "; --workload journal takes journal arms only";
      throw UsageError(fmt::format("--arms '{}': unknown arm '{}' (accepted: {}){}", c.arms, n, accepted, hint));
    }
    cli::RunOptions ro = c.run;
    ro.release = journal ? "reuse" : a.strategy;  // journal strategies are set on the plan below
    ro.pages = a.pages;
    try {
      std::vector<std::string> w;
      a.plan = cli::validate_run_options(ro, facts, &w);
      for (auto& x : w)
        if (std::find(warnings->begin(), warnings->end(), x) == warnings->end()) warnings->push_back(x);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (journal) a.plan.release = a.strategy;
    if (a.plan.trigger == "enter")
      throw UsageError("--trigger enter: compare runs unattended; use --trigger after=DURATION");
    arms.push_back(std::move(a));
  }
  std::vector<std::string> plain;
  for (const auto& a : arms) plain.push_back(a.name);
  const auto labels = compare::arm_labels(plain);
  for (std::size_t i = 0; i < arms.size(); ++i) arms[i].label = labels[i];
  return arms;
}

// Seeded randomized complete blocks: every block runs each arm once, in an
// order shuffled (Fisher–Yates) by the seeded generator, so slow drift of
// the machine hits every arm alike and no arm always runs after another.
std::vector<int> trial_order(std::size_t arms, int trials, std::uint64_t seed) {
  compare::Rng rng(seed);
  std::vector<int> out;
  for (int t = 0; t < trials; ++t) {
    std::vector<int> block(arms);
    for (std::size_t i = 0; i < arms; ++i) block[i] = static_cast<int>(i);
    for (std::size_t i = arms; i > 1; --i) std::swap(block[i - 1], block[rng.below(i)]);
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

void progress_line(bool tty, bool quiet, std::size_t done, std::size_t total, const std::string& arm, double elapsed) {
  if (quiet) return;
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  if (tty) {
    const int width = 24;
    const int filled =
        static_cast<int>(static_cast<double>(width) * static_cast<double>(done) / static_cast<double>(total));
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar += std::string(static_cast<std::size_t>(width - filled), '.');
    std::fprintf(stderr, "\r\033[K[%s] %zu/%zu %-18s %4.0f s, ETA %s", bar.c_str(), done, total, arm.c_str(), elapsed,
                 done > 0 ? fmt::format("{:.0f} s", eta).c_str() : "?");
  } else {
    std::fprintf(stderr, "shootdown compare: trial %zu/%zu %s (%.0f s elapsed%s)\n", done + 1, total, arm.c_str(),
                 elapsed, done > 0 ? fmt::format(", ETA {:.0f} s", eta).c_str() : "");
  }
}

int execute_compare(CompareCommand& c) {
  const double t0 = now_s();
  if (c.workload != "memory" && c.workload != "journal")
    throw UsageError(fmt::format("--workload '{}': unknown workload (accepted: memory, journal)", c.workload));
  if (c.arms.empty()) c.arms = c.workload == "journal" ? "journal-recycle,journal-unmap" : "reuse,munmap";
  if (c.trials < 2 || c.trials > 1000) throw UsageError(fmt::format("--trials {}: out of range [2, 1000]", c.trials));
  if (c.bootstrap < 2000 || c.bootstrap > 1000000)
    throw UsageError(fmt::format("--bootstrap {}: out of range [2000, 1000000]", c.bootstrap));
  std::uint64_t seed = 0;
  if (c.seed.empty()) {
    std::random_device rd;
    seed = (static_cast<std::uint64_t>(rd()) << 32 | rd()) % 1000000000ULL;
  } else {
    std::string why;
    auto s = parse_int(c.seed, &why);
    if (!s || *s < 0)
      throw UsageError(
          fmt::format("--seed '{}': {} (accepted: a non-negative integer)", c.seed, why.empty() ? "negative" : why));
    seed = static_cast<std::uint64_t>(*s);
  }
  double max_reg = -1;
  if (!c.max_regression.empty()) {
    std::string v = c.max_regression;
    if (!v.empty() && v.back() == '%') v.pop_back();
    std::size_t pos = 0;
    try {
      max_reg = std::stod(v, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos == 0 || pos != v.size() || !(max_reg >= 0 && max_reg <= 100000))
      throw UsageError(
          fmt::format("--max-regression '{}': not a percentage (accepted: e.g. 10 or 10%)", c.max_regression));
  }
  {
    std::string why;
    auto seg = parse_size(c.segment_size, &why);
    if (!seg || *seg < 4096 || *seg % 4096 != 0)
      throw UsageError(fmt::format("--segment-size '{}': {} (accepted: a multiple of 4KiB like 16MiB)", c.segment_size,
                                   why.empty() ? "not a positive multiple of 4 KiB" : why));
  }
  if (std::string why;
      c.workload == "journal" && !c.journal_dir.empty() && !sys::writable_directory(c.journal_dir, &why))
    throw UsageError(
        fmt::format("--journal-dir '{}': {} (accepted: an existing writable directory)", c.journal_dir, why));

  std::vector<std::string> warnings;
  const cli::MachineFacts facts = cli::read_machine_facts();
  std::vector<Arm> arms = parse_arms(c, facts, &warnings);
  std::vector<std::string> labels;
  for (const auto& a : arms) labels.push_back(a.label);
  std::vector<compare::GateExpr> gates;
  for (const auto& g : c.fail_if) {
    try {
      gates.push_back(compare::parse_gate(g, labels));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }
  if (c.workload == "journal") {
    auto seg = parse_size(c.segment_size);
    for (auto& a : arms) {
      a.plan.segment_size = *seg;
      a.plan.journal_dir = c.journal_dir;
    }
  }
  std::unique_ptr<sink::OutputDir> out;
  if (!c.out.empty()) {
    try {
      out = std::make_unique<sink::OutputDir>(c.out);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }

  sys::StopSignals signals;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const std::vector<int> order = trial_order(arms.size(), c.trials, seed);
  ChunkPool pool;
  SharedTracer tracer;
  std::vector<compare::TrialMetrics> trials;
  std::vector<int> count(arms.size(), 0);
  sink::CompareReport rep;
  std::string trace_status;
  int exit_signal = 0;
  const int pid = static_cast<int>(::getpid());
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    const Arm& arm = arms[static_cast<std::size_t>(order[pos])];
    progress_line(tty, c.run.quiet, pos, order.size(), arm.label, now_s() - t0);
    exp::Hooks hooks = make_run_hooks(arm.plan, false, true);
    hooks.open_trace = [&tracer](const Plan& p, std::string* why) { return tracer.open(p, why); };
    hooks.victim_chunk = [&pool](int cpu, std::size_t size, exp::PageMode mode, int node) {
      return pool.get(cpu, size, mode, node);
    };
    Result r;
    try {
      r = exp::run_experiment(arm.plan, hooks);
    } catch (const std::runtime_error& e) {
      if (tty && !c.run.quiet) std::fputs("\r\033[K", stderr);
      throw RuntimeError(fmt::format("trial {} ({}): {}", pos + 1, arm.label, e.what()));
    }
    if (!r.complete && r.exit_signal != 0) {
      exit_signal = r.exit_signal;
      rep.complete = false;
      rep.incomplete_reason = r.incomplete_reason + fmt::format(" (after {} of {} trials)", pos, order.size());
      break;
    }
    if (trace_status.empty()) trace_status = r.trace.status;
    Attribution at;
    if (r.trace.enabled) {
      AttributionOptions ao;
      ao.stall_factor = arm.plan.stall_factor;
      ao.stall_threshold_ns = arm.plan.stall_threshold_ns;
      ao.culprit_cpu = arm.plan.culprit_cpu;
      if (!r.releases.empty()) ao.baseline_end_ns = r.releases.front().before_ns;
      at = attribute(r.victims, r.trace, ao);
    }
    compare::TrialMetrics t = compare::trial_metrics(r, r.trace.enabled ? &at : nullptr, compare::TrialOptions{pid});
    t.arm = arm.label;
    t.arm_index = order[pos];
    t.trial = ++count[static_cast<std::size_t>(order[pos])];
    t.order = static_cast<int>(pos) + 1;
    for (const auto& w : r.warnings) {
      const std::string x = "trial " + std::to_string(t.order) + " (" + arm.label + "): " + w;
      if (warnings.size() < 50) warnings.push_back(x);
    }
    trials.push_back(std::move(t));
  }
  if (tty && !c.run.quiet) std::fputs("\r\033[K", stderr);

  compare::CompareOptions co;
  co.bootstrap.resamples = c.bootstrap;
  co.bootstrap.seed = seed;
  rep.command_line = read_cmdline_self();
  rep.started_at = iso_now();
  rep.workload = c.workload;
  for (const auto& a : arms) rep.arms.push_back({a.label, a.name, a.strategy, a.pages});
  rep.trials_per_arm = c.trials;
  rep.bootstrap_resamples = c.bootstrap;
  rep.seed = seed;
  rep.plan = arms.front().plan;
  rep.env = sys::read_environment();
  for (auto& w : sys::plan_warnings(rep.env, rep.plan)) rep.env.warnings.push_back(w);
  for (auto& w : warnings) rep.env.warnings.push_back(w);
  bool traced = !trials.empty();
  for (const auto& t : trials) traced = traced && t.shootdown_source == "trace";
  if (traced)
    rep.notes.push_back(
        "shootdowns: kernel trace, tlb_flush reason 1 on victim CPUs in the release window, this process only");
  else
    rep.notes.push_back("shootdowns: /proc/interrupts TLB delta of victim CPUs over each trial (no kernel trace: " +
                        (trace_status.empty() ? std::string("none") : trace_status) + "); includes other processes'");
  rep.notes.push_back(
      fmt::format("per trial: baseline {}, release window = call + {} settle, after {}; chunk A fresh per trial",
                  format_duration_ns(rep.plan.baseline_ns), format_duration_ns(rep.plan.settle_ns),
                  format_duration_ns(rep.plan.after_ns)));
  rep.trials = trials;
  rep.summary = compare::summarize_arms(trials, labels, co);
  for (const auto& g : gates) rep.gates.push_back(compare::evaluate_gate(g, trials, co.bootstrap));
  if (max_reg >= 0)
    for (auto& g : compare::evaluate_max_regression(max_reg, rep.summary)) rep.gates.push_back(std::move(g));
  for (const auto& g : rep.gates) rep.gate_failed = rep.gate_failed || g.failed;
  rep.duration_s = now_s() - t0;

  std::string file_error;
  if (out) {
    try {
      out->write("compare.json", sink::compare_json(rep));
      out->write("compare.csv", sink::compare_csv(rep));
      out->write("compare.html", sink::compare_html(rep));
    } catch (const std::exception& e) {
      file_error = e.what();
    }
  }
  std::fputs(c.json ? sink::compare_json(rep).c_str() : sink::compare_console(rep).c_str(), stdout);
  if (!c.json && out && file_error.empty()) std::printf("results: %s/\n", out->path().c_str());
  std::fflush(stdout);
  if (!c.run.quiet)
    for (const auto& w : rep.env.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (!file_error.empty()) throw RuntimeError("writing results: " + file_error);
  if (exit_signal) return sys::exit_code_for_signal(exit_signal);
  if (rep.gate_failed) return kExitGateFailed;
  return kExitOk;
}

}  // namespace

Command add_compare(CLI::App& root) {
  auto cmd = std::make_shared<CompareCommand>();  // owned by the returned callback
  cmd->run.baseline = kCompareBaseline;
  cmd->run.after = kCompareAfter;
  cmd->run.trigger = std::string("after=") + kCompareBaseline;
  CLI::App* app = root.add_subcommand("compare", "Compare release strategies over repeated trials with a verdict");
  app->add_option(
      "--arms", cmd->arms,
      "Comma-separated arms, first = control: reuse, munmap, free, madvise-dontneed, madvise-free, mprotect, "
      "thp-<strategy>; journal-recycle, journal-unmap with --workload journal (default reuse,munmap)");
  app->add_option("--trials", cmd->trials, "Trials per arm, each a fresh experiment (default 20)");
  app->add_option("--seed", cmd->seed, "Seed for the trial order and the bootstrap (default: random, printed)");
  app->add_option("--bootstrap", cmd->bootstrap, "Bootstrap resamples (default 2000)");
  app->add_option("--fail-if", cmd->fail_if,
                  "Gate, repeatable: 'ARM.METRIC OP ARM.METRIC|NUMBER', OP > >= < <=; exit 3 when it holds")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--max-regression", cmd->max_regression,
                  "Exit 3 when an arm's stall_us is detectably more than PCT % above the control's");
  app->add_option("--out", cmd->out, "Write compare.json, compare.csv and compare.html to this directory");
  app->add_flag("--json", cmd->json, "Print compare.json on stdout instead of the table");
  app->add_option("--workload", cmd->workload,
                  "memory (release chunk A) or journal (mmap-ed segment files) (default memory)");
  app->add_option("--segment-size", cmd->segment_size, "Journal segment file size (default 16MiB)");
  app->add_option("--journal-dir", cmd->journal_dir, "Directory for journal segments (default /dev/shm, else /tmp)");
  cli::add_run_options(*app, cmd->run, /*for_compare=*/true);
  app->footer(
      "Per trial defaults differ from run: --baseline 150ms --after 100ms --trigger after=150ms.\n"
      "METRICS (per release, averaged over victims): stall_us p99_us p999_us max_us shootdowns release_us "
      "ipi_stall_us unexplained_us\n\n"
      "EXAMPLES:\n"
      "  shootdown compare --arms reuse,munmap --trials 20 --chunk-size 1GiB\n"
      "  shootdown compare --arms reuse,munmap,madvise-dontneed,thp-munmap --out out/cmp\n"
      "  shootdown compare --arms reuse,reuse --seed 7          A/A: expect no detectable difference\n"
      "  shootdown compare --arms reuse,munmap --fail-if 'munmap.stall_us > reuse.stall_us'\n"
      "  shootdown compare --workload journal --segment-size 16MiB --chunk-size 256MiB\n\n"
      "EXIT STATUS: 0 ok, 1 error, 2 bad input, 3 gate failed, 130/143 interrupted.");
  return {app, [cmd]() { return execute_compare(*cmd); }};
}

}  // namespace shootdown::cmd
