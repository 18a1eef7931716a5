// SPDX-License-Identifier: Apache-2.0
// shootdown compare: arms x trials, each trial a fresh experiment, arms
// interleaved in seeded random blocks; statistics in core/compare, outputs in
// sink/compare_out. Method and figures: docs/compare.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <random>
#include <unistd.h>

#include "cli/common_options.hpp"
#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/run_support.hpp"
#include "cmd/trace_session.hpp"
#include "core/attribution.hpp"
#include "core/compare.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "experiment/arena.hpp"
#include "experiment/experiment.hpp"
#include "experiment/finish.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/compare_out.hpp"
#include "sys/fs.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"
#include "sys/wallclock.hpp"

namespace shootdown::cmd {

namespace {

// compare --preset mitigations: every release arm of docs/mitigations.md
// against the reuse control (membarrier and mprotect are not releases).
constexpr const char* kMitigationsArms =
    "reuse,munmap,madvise-dontneed,madvise-free,madvise-ranges,process-madvise,paced,chunked,glibc-malloc,jemalloc,"
    "tcmalloc,mimalloc";

// Short per-trial durations: the release window is what compare measures;
// the baseline only needs enough samples for a stable median (~150 ms is
// ~300k batches here) and the after window only has to cover late effects.
constexpr const char* kCompareBaseline = "150ms";
constexpr const char* kCompareAfter = "100ms";

struct CompareCommand {
  cli::RunOptions run;
  std::string arms;
  std::string preset;  // --preset mitigations: the documented arm list
  int trials = 20;
  std::string sequential = "on";  // on|off: group-sequential early stopping
  int look_every = 5;
  std::string spending = "pocock";
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

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Victims' chunks B and sample rings, kept across trials (docs/compare.md
// "fresh chunks"):
// chunk A, the memory each arm releases, is allocated and pre-faulted fresh
// for every trial; B is only the victims' measuring instrument, and
// re-faulting 1 GiB of it per victim per trial would double the time a
// trial takes without changing what it measures.
class ChunkPool {
 public:
  exp::Chunk* get(int cpu, std::size_t size, PageMode mode, int node) {
    auto key = std::make_tuple(cpu, size, static_cast<int>(mode), node);
    auto it = pool_.find(key);
    if (it == pool_.end()) it = pool_.emplace(key, exp::Chunk(size, mode, exp::Allocator::kMmap, node)).first;
    return &it->second;
  }
  // The victims' sample rings too: each victim maps its ring into this slot
  // when the slot is smaller than it needs and reuses it otherwise. Mapping
  // and pre-faulting a fresh ~200 MB ring (the planned trial at the fastest
  // batch rate) took ~1 s of every trial here, more than the measurement.
  exp::Chunk* ring(int cpu, int node) { return &rings_[{cpu, node}]; }

 private:
  std::map<std::tuple<int, std::size_t, int, int>, exp::Chunk> pool_;
  std::map<std::pair<int, int>, exp::Chunk> rings_;
};

struct Arm {
  std::string name;   // as given
  std::string label;  // unique
  ReleaseStrategy strategy = ReleaseStrategy::kReuse;
  PageMode pages = PageMode::k4k;
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
  const Workload workload = c.workload == "journal" ? Workload::kJournal : Workload::kMemory;
  const Workload other = workload == Workload::kJournal ? Workload::kMemory : Workload::kJournal;
  const std::string accepted = workload == Workload::kJournal
                                   ? compare_arm_list(workload)
                                   : compare_arm_list(workload) + ", each optionally thp- prefixed (thp-munmap)";
  if (names.size() < 2)
    throw UsageError(
        fmt::format("--arms '{}': give at least two arms, the first is the control (accepted: {})", c.arms, accepted));
  std::vector<Arm> arms;
  for (const auto& n : names) {
    Arm a;
    a.name = n;
    std::string strategy = n;
    std::string pages = c.run.pages;
    if (workload == Workload::kMemory && n.rfind("thp-", 0) == 0) {
      strategy = n.substr(4);
      pages = std::string(page_mode_name(PageMode::kThp));
    }
    const auto found = find_strategy(strategy);
    if (n.empty() || !found || !is_compare_arm(*found, workload)) {
      std::string hint;
      if (auto as_is = find_strategy(n); as_is && is_compare_arm(*as_is, other))
        hint = workload == Workload::kMemory ? "; journal arms need --workload journal"
                                             : "; --workload journal takes journal arms only";
      throw UsageError(fmt::format("--arms '{}': unknown arm '{}' (accepted: {}){}", c.arms, n, accepted, hint));
    }
    a.strategy = *found;
    cli::RunOptions ro = c.run;
    // Journal strategies are set on the plan below (run --release does not take them).
    ro.release = std::string(strategy_name(workload == Workload::kJournal ? ReleaseStrategy::kReuse : a.strategy));
    ro.pages = pages;
    if (!is_paced(a.strategy)) ro.pace.clear();  // --pace is for the paced and chunked arms
    if (!is_allocator_arm(a.strategy)) {         // --allocator-* are for the allocator arms
      ro.allocator_conf.clear();
      ro.allocator_purge.clear();
    }
    std::vector<std::string> w;
    a.plan = cli::validate_run_options(ro, facts, &w);
    for (auto& x : w)
      if (std::find(warnings->begin(), warnings->end(), x) == warnings->end()) warnings->push_back(x);
    a.plan.release = a.strategy;
    a.pages = a.plan.pages;
    if (a.plan.trigger == Trigger::kEnter)
      throw UsageError("--trigger enter: compare runs unattended; use --trigger after=DURATION");
    arms.push_back(std::move(a));
  }
  if (!c.run.pace.empty() && std::none_of(arms.begin(), arms.end(), [](const Arm& a) { return is_paced(a.strategy); }))
    throw UsageError(
        fmt::format("--pace '{}': no paced or chunked arm in --arms '{}' (accepted with an arm paced or "
                    "chunked, e.g. --arms madvise-dontneed,paced)",
                    c.run.pace, c.arms));
  if ((!c.run.allocator_conf.empty() || !c.run.allocator_purge.empty()) &&
      std::none_of(arms.begin(), arms.end(), [](const Arm& a) { return is_allocator_arm(a.strategy); }))
    throw UsageError(
        fmt::format("--allocator-{} '{}': no allocator arm in --arms '{}' (accepted with an arm "
                    "glibc-malloc, jemalloc, tcmalloc or mimalloc)",
                    c.run.allocator_conf.empty() ? "purge" : "conf",
                    c.run.allocator_conf.empty() ? c.run.allocator_purge : c.run.allocator_conf, c.arms));
  std::vector<std::string> plain;
  for (const auto& a : arms) plain.push_back(a.name);
  const auto labels = compare::arm_labels(plain);
  for (std::size_t i = 0; i < arms.size(); ++i) arms[i].label = labels[i];
  return arms;
}

void progress_line(bool tty, bool quiet, std::size_t done, std::size_t total, const std::string& arm, double elapsed) {
  if (quiet) return;
  std::fputs(sink::compare_progress(tty, done, total, arm, elapsed).c_str(), stderr);
}

class CompareTool final : public Tool {
 public:
  explicit CompareTool(CompareCommand& c) : c_(c) {}

  void plan() override {
    CompareCommand& c = c_;
    if (c.workload != "memory" && c.workload != "journal")
      throw UsageError(fmt::format("--workload '{}': unknown workload (accepted: memory, journal)", c.workload));
    if (!c.preset.empty()) {
      if (c.preset != "mitigations")
        throw UsageError(fmt::format("--preset '{}': unknown preset (accepted: mitigations)", c.preset));
      if (!c.arms.empty())
        throw UsageError(
            fmt::format("--preset '{}': give either --preset or --arms '{}', not both (accepted: "
                        "--preset mitigations alone)",
                        c.preset, c.arms));
      if (c.workload != "memory")
        throw UsageError(
            fmt::format("--preset '{}': a memory-workload study, not --workload '{}' (accepted with --workload memory)",
                        c.preset, c.workload));
      c.arms = kMitigationsArms;
    }
    if (c.arms.empty()) c.arms = c.workload == "journal" ? "journal-recycle,journal-unmap" : "reuse,munmap";
    if (c.trials < 2 || c.trials > 1000) throw UsageError(fmt::format("--trials {}: out of range [2, 1000]", c.trials));
    if (c.sequential != "on" && c.sequential != "off")
      throw UsageError(fmt::format("--sequential '{}': unknown value (accepted: on, off)", c.sequential));
    if (c.look_every < 1 || c.look_every > 1000)
      throw UsageError(
          fmt::format("--look-every {}: out of range [1, 1000] (trials per arm between looks)", c.look_every));
    const auto spending = sequential::parse_spending(c.spending);
    if (!spending)
      throw UsageError(fmt::format("--spending '{}': unknown spending function (accepted: pocock, obf)", c.spending));
    seq_on_ = c.sequential == "on";
    // Alpha 0.05 two-sided: the same error rate as the 95% intervals of the
    // fixed design. Boundaries are computed once, before any trial.
    if (seq_on_) design_ = sequential::make_design(*spending, 0.05, c.look_every, c.trials);
    if (c.bootstrap < 2000 || c.bootstrap > 1000000)
      throw UsageError(fmt::format("--bootstrap {}: out of range [2000, 1000000]", c.bootstrap));
    if (c.seed.empty()) {
      std::random_device rd;
      seed_ = (static_cast<std::uint64_t>(rd()) << 32 | rd()) % 1000000000ULL;
    } else {
      auto s = parse_int(c.seed);
      if (!s || *s < 0)
        throw UsageError(fmt::format("--seed '{}': {} (accepted: a non-negative integer)", c.seed,
                                     s ? std::string("negative") : s.error()));
      seed_ = static_cast<std::uint64_t>(*s);
    }
    if (!c.max_regression.empty()) {
      std::string v = c.max_regression;
      if (!v.empty() && v.back() == '%') v.pop_back();
      std::size_t pos = 0;
      try {
        max_reg_ = std::stod(v, &pos);
      } catch (const std::exception&) {
        pos = 0;
      }
      if (pos == 0 || pos != v.size() || !(max_reg_ >= 0 && max_reg_ <= 100000))
        throw UsageError(
            fmt::format("--max-regression '{}': not a percentage (accepted: e.g. 10 or 10%)", c.max_regression));
    }
    {
      auto seg = parse_size(c.segment_size);
      if (!seg || *seg < 4096 || *seg % 4096 != 0)
        throw UsageError(fmt::format("--segment-size '{}': {} (accepted: a multiple of 4KiB like 16MiB)",
                                     c.segment_size,
                                     seg ? std::string("not a positive multiple of 4 KiB") : seg.error()));
    }
    if (c.workload == "journal" && !c.journal_dir.empty())
      if (const Status writable = sys::writable_directory(c.journal_dir); !writable)
        throw UsageError(fmt::format("--journal-dir '{}': {} (accepted: an existing writable directory)", c.journal_dir,
                                     writable.error()));

    const cli::MachineFacts facts = cli::read_machine_facts();
    arms_ = parse_arms(c, facts, &warnings_);
    for (const auto& a : arms_) labels_.push_back(a.label);
    for (const auto& g : c.fail_if) gates_.push_back(compare::parse_gate(g, labels_));
    if (c.workload == "journal") {
      auto seg = parse_size(c.segment_size);
      for (auto& a : arms_) {
        a.plan.segment_size = *seg;
        a.plan.journal_dir = c.journal_dir;
      }
    }
    if (!c.out.empty()) out_ = std::make_unique<sink::OutputDir>(c.out);  // UsageError when it cannot be made
  }

  void prepare() override {
    tty_ = ::isatty(STDERR_FILENO) == 1;
    total_ = arms_.size() * static_cast<std::size_t>(c_.trials);
    count_.assign(arms_.size(), 0);
    pairs_.assign(arms_.size(), sequential::PairState{});
    rep_.command_line = sys::read_cmdline_self();
    rep_.started_at = sys::iso_now();
    rep_.workload = c_.workload;
    for (const auto& a : arms_) rep_.arms.push_back({a.label, a.name, a.strategy, a.pages});
    rep_.trials_per_arm = c_.trials;
    rep_.sequential = seq_on_;
    rep_.design = design_;
    rep_.bootstrap_resamples = c_.bootstrap;
    rep_.seed = seed_;
    rep_.plan = arms_.front().plan;
    rep_.env = exp::environment_after(rep_.plan, Environment{}, warnings_);
    cli_warnings_ = warnings_.size();
  }

  // Each finished trial goes to disk at once (compare.json/.csv, marked
  // incomplete until the end): a signal or an error in trial k keeps 1..k-1.
  // Blocks run the control and every arm still undecided (all arms without
  // sequential stopping); after a block that completes a look, each running
  // pair is tested and a decided one leaves the next blocks.
  void run() override {
    const int pid = static_cast<int>(::getpid());
    compare::Rng rng(seed_);
    std::size_t pos = 0;
    bool stop = false;
    for (int block = 0; block < c_.trials && !stop; ++block) {
      std::vector<int> running{0};
      for (std::size_t k = 1; k < arms_.size(); ++k)
        if (!seq_on_ || pairs_[k].active(design_)) running.push_back(static_cast<int>(k));
      if (running.size() == 1) break;  // every pair decided
      for (int idx : compare::shuffled_block(running, rng)) {
        if (!run_trial(idx, pos, pid)) {
          stop = true;
          break;
        }
        ++pos;
        if (out_) write_partial(pos);
      }
      if (stop || !seq_on_) continue;
      const int look = sequential::look_index_at(design_, block + 1);
      if (look < 0) continue;
      const auto control = compare::arm_values(rep_.trials, labels_[0], compare::Metric::kStallUs);
      for (int idx : running)
        if (idx > 0)
          sequential::evaluate_look(
              design_, static_cast<std::size_t>(look),
              compare::arm_values(rep_.trials, labels_[static_cast<std::size_t>(idx)], compare::Metric::kStallUs),
              control, &pairs_[static_cast<std::size_t>(idx)]);
    }
    if (tty_ && !c_.run.quiet) std::fputs("\r\033[K", stderr);
  }

  // One trial of arm idx at run position pos; false when the compare must
  // end (a trial failed or a signal arrived).
  bool run_trial(int idx, std::size_t pos, int pid) {
    const Arm& arm = arms_[static_cast<std::size_t>(idx)];
    progress_line(tty_, c_.run.quiet, pos, total_, arm.label, now_s() - t0_);
    exp::Hooks hooks = make_run_hooks(false, true);
    hooks.open_trace = [this](const Plan& p) { return tracer_.open(p); };
    hooks.victim_chunk = [this](int cpu, std::size_t size, PageMode mode, int node) {
      return pool_.get(cpu, size, mode, node);
    };
    hooks.victim_ring = [this](int cpu, int node) { return pool_.ring(cpu, node); };
    Result r;
    try {
      r = exp::run_experiment(arm.plan, hooks);
    } catch (const std::exception& e) {
      trial_error_ = fmt::format("trial {} ({}): {}", pos + 1, arm.label, e.what());
      rep_.complete = false;
      rep_.incomplete_reason = trial_error_ + fmt::format(" (after {} of at most {} trials)", pos, total_);
      return false;
    }
    if (!r.complete && r.exit_signal != 0) {
      exit_signal_ = r.exit_signal;
      rep_.complete = false;
      rep_.incomplete_reason = r.incomplete_reason + fmt::format(" (after {} of at most {} trials)", pos, total_);
      return false;
    }
    if (trace_status_.empty()) trace_status_ = r.trace.status;
    Attribution at;
    if (r.trace.enabled) at = attribute_result(r);
    compare::TrialMetrics t = compare::trial_metrics(r, r.trace.enabled ? &at : nullptr, compare::TrialOptions{pid});
    t.arm = arm.label;
    t.arm_index = idx;
    t.trial = ++count_[static_cast<std::size_t>(idx)];
    t.order = static_cast<int>(pos) + 1;
    for (const auto& w : r.warnings) {
      const std::string x = "trial " + std::to_string(t.order) + " (" + arm.label + "): " + w;
      if (warnings_.size() < 50) warnings_.push_back(x);
    }
    rep_.trials.push_back(std::move(t));
    return true;
  }

  void analyze() override {
    compare::CompareOptions co;
    co.bootstrap.resamples = c_.bootstrap;
    co.bootstrap.seed = seed_;
    rep_.env.warnings.insert(rep_.env.warnings.end(), warnings_.begin() + static_cast<std::ptrdiff_t>(cli_warnings_),
                             warnings_.end());
    bool traced = !rep_.trials.empty();
    for (const auto& t : rep_.trials) traced = traced && t.shootdown_source == "trace";
    if (traced)
      rep_.notes.push_back(
          "shootdowns: kernel trace, tlb_flush reason 1 on victim CPUs in the release window, this process only");
    else
      rep_.notes.push_back("shootdowns: /proc/interrupts TLB delta of victim CPUs over each trial (no kernel trace: " +
                           (trace_status_.empty() ? std::string("none") : trace_status_) +
                           "); includes other processes'");
    rep_.notes.push_back(
        fmt::format("per trial: baseline {}, release window = call + {} settle, after {}; chunk A fresh per trial",
                    format_duration_ns(rep_.plan.baseline_ns), format_duration_ns(rep_.plan.settle_ns),
                    format_duration_ns(rep_.plan.after_ns)));
    for (const auto& a : arms_)
      if (is_paced(a.strategy))
        rep_.notes.push_back(fmt::format("{}: {} (release_us spans the whole spread release)", a.label,
                                         released_what(a.strategy, a.plan.chunk_size, a.plan.pace())));
    if (seq_on_) {
      co.design = &design_;
      co.pairs = &pairs_;
      std::string b;
      for (double x : design_.boundaries) b += fmt::format("{}{:.2f}", b.empty() ? "" : " ", x);
      std::string looks;
      for (int n : design_.looks) looks += fmt::format("{}{}", looks.empty() ? "" : ",", n);
      rep_.notes.push_back(
          fmt::format("sequential: {}-type spending of alpha 0.05, looks at {} trials/arm, |z| >= {}; "
                      "CIs and p are naive after an early stop",
                      sequential::spending_name(design_.spending), looks, b));
    }
    rep_.summary = compare::summarize_arms(rep_.trials, labels_, co);
    for (const auto& g : gates_)
      rep_.gates.push_back(compare::evaluate_gate(g, rep_.trials, co.bootstrap, &rep_.summary));
    if (max_reg_ >= 0)
      for (auto& g : compare::evaluate_max_regression(max_reg_, rep_.summary)) rep_.gates.push_back(std::move(g));
    for (const auto& g : rep_.gates) rep_.gate_failed = rep_.gate_failed || g.failed;
    rep_.duration_s = now_s() - t0_;
  }

  int report() override {
    std::string file_error;
    if (out_) {
      try {
        write_files();
      } catch (const std::exception& e) {
        file_error = e.what();
      }
    }
    std::fputs(c_.json ? sink::compare_json(rep_).c_str() : sink::compare_console(rep_).c_str(), stdout);
    if (!c_.json && out_ && file_error.empty()) std::printf("results: %s/\n", out_->path().c_str());
    std::fflush(stdout);
    if (!c_.run.quiet)
      for (const auto& w : rep_.env.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    if (!file_error.empty()) throw RuntimeError("writing results: " + file_error);
    if (!trial_error_.empty()) throw RuntimeError(trial_error_ + " (completed trials kept)");
    if (rep_.gate_failed) return kExitGateFailed;
    return kExitOk;
  }
  int interrupted_by() const override { return exit_signal_; }

 private:
  void write_files() {
    out_->write("compare.json", sink::compare_json(rep_));
    out_->write("compare.csv", sink::compare_csv(rep_));
    out_->write("compare.html", sink::compare_html(rep_));
  }

  // The trials so far, marked incomplete; the final report overwrites them.
  void write_partial(std::size_t done) {
    sink::CompareReport partial = rep_;
    partial.complete = false;
    partial.incomplete_reason = fmt::format("in progress: {} of at most {} trials", done, total_);
    partial.duration_s = now_s() - t0_;
    try {
      out_->write("compare.json", sink::compare_json(partial));
      out_->write("compare.csv", sink::compare_csv(partial));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shootdown compare: warning: writing trial %zu: %s\n", done, e.what());
    }
  }

  CompareCommand& c_;
  const double t0_ = now_s();
  std::vector<Arm> arms_;
  std::vector<std::string> labels_;
  std::vector<compare::GateExpr> gates_;
  std::vector<std::string> warnings_;
  std::size_t cli_warnings_ = 0;  // warnings_ already in rep_.env (from validation)
  std::uint64_t seed_ = 0;
  double max_reg_ = -1;
  std::unique_ptr<sink::OutputDir> out_;
  bool tty_ = false;
  std::size_t total_ = 0;  // trials if no pair stops early
  std::vector<int> count_;
  bool seq_on_ = true;
  sequential::Design design_;
  std::vector<sequential::PairState> pairs_;  // per arm; [0] (control) unused
  ChunkPool pool_;
  SharedTracer tracer_;
  sink::CompareReport rep_;
  std::string trace_status_;
  std::string trial_error_;
  int exit_signal_ = 0;
};

}  // namespace

Command add_compare(CLI::App& root) {
  auto cmd = std::make_shared<CompareCommand>();  // owned by the returned callback
  cmd->run.baseline = kCompareBaseline;
  cmd->run.after = kCompareAfter;
  cmd->run.trigger = std::string("after=") + kCompareBaseline;
  CLI::App* app = root.add_subcommand("compare", "Compare release strategies over repeated trials with a verdict");
  app->add_option("--arms", cmd->arms,
                  "Comma-separated arms, first = control: " + compare_arm_list(Workload::kMemory) +
                      ", thp-<strategy>; " + compare_arm_list(Workload::kJournal) +
                      " with --workload journal (default reuse,munmap)");
  std::string preset_arms = kMitigationsArms;
  for (std::size_t at = 0; (at = preset_arms.find(',', at)) != std::string::npos; at += 2)
    preset_arms.insert(at + 1, " ");
  app->add_option(
      "--preset", cmd->preset,
      "mitigations: the study of docs/mitigations.md, every release arm against the control: " + preset_arms);
  app->add_option("--trials", cmd->trials,
                  "Trials per arm, each a fresh experiment; the maximum with --sequential on (default 20)");
  app->add_option("--sequential", cmd->sequential,
                  "on: stop an arm once its stall_us verdict is settled (group-sequential Mann-Whitney, "
                  "alpha 0.05 spent over --trials); off: always run --trials (default on)");
  app->add_option("--look-every", cmd->look_every, "Trials per arm between sequential looks (default 5)");
  app->add_option("--spending", cmd->spending,
                  "Alpha spending of the sequential looks: pocock (early stops) or obf (O'Brien-Fleming type) "
                  "(default pocock)");
  app->add_option("--seed", cmd->seed, "Seed for the trial order and the bootstrap (default: random, printed)");
  app->add_option("--bootstrap", cmd->bootstrap, "Bootstrap resamples (default 2000)");
  app->add_option("--fail-if", cmd->fail_if,
                  "Gate, repeatable: 'ARM.METRIC OP ARM.METRIC|NUMBER', OP > >= < <=; exit 3 when it holds")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--max-regression", cmd->max_regression,
                  "Exit 3 when an arm's stall_us is detectably more than PCT % above the control's");
  cli::add_out_dir(*app, cmd->out, "compare.json, compare.csv and compare.html");
  // compare's own flag: repeated, refused (only the run options it shares
  // take the last occurrence; CLI11 gives bool flags TakeLast).
  cli::add_json_flag(*app, cmd->json, "the comparison (compare.json)", "the table")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  app->add_option("--workload", cmd->workload,
                  "memory (release chunk A) or journal (mmap-ed segment files) (default memory)");
  app->add_option("--segment-size", cmd->segment_size, "Journal segment file size (default 16MiB)");
  app->add_option("--journal-dir", cmd->journal_dir, "Directory for journal segments (default /dev/shm, else /tmp)");
  cli::add_run_options(*app, cmd->run, /*for_compare=*/true);
  return tool_command<CompareTool>(
      app, cmd,
      {.notes =
           "Per trial defaults differ from run: --baseline 150ms --after 100ms --trigger after=150ms.\n"
           "SEQUENTIAL (default): after every --look-every trials per arm, each arm's stall_us is tested against the\n"
           "control (Mann-Whitney z vs Lan-DeMets boundaries, overall alpha 0.05 however early it stops); a decided\n"
           "arm stops. CIs and p-values are fixed-sample ones (naive after an early stop). docs/compare.md.\n"
           "METRICS (per release, averaged over victims): stall_us p99_us p999_us max_us shootdowns release_us "
           "ipi_stall_us unexplained_us",
       .examples =
           {"shootdown compare --arms reuse,munmap --trials 20 --chunk-size 1GiB",
            "                                stops after 5 trials per arm when the difference is clear",
            "shootdown compare --arms reuse,munmap --trials 20 --sequential off",
            "                                always 20 trials per arm (the fixed design)",
            "shootdown compare --arms reuse,munmap,madvise-dontneed,thp-munmap --out out/cmp",
            "shootdown compare --arms reuse,reuse --seed 7          A/A: expect no detectable difference",
            "shootdown compare --preset mitigations --chunk-size 1GiB --out out/mitigations",
            "                                every release arm, allocators included, against reuse",
            "shootdown compare --arms reuse,munmap --trials 40 --look-every 4 --spending obf",
            "shootdown compare --arms madvise-dontneed,paced,chunked --pace 2MiB/1ms",
            "                                the same release at once, spread in 2 MiB steps (1 ms pauses) and chunked",
            "shootdown compare --arms reuse,munmap --fail-if 'munmap.stall_us > reuse.stall_us'",
            "shootdown compare --workload journal --segment-size 16MiB --chunk-size 256MiB"},
       .exit_status = "0 ok, 1 error, 2 bad input, 3 gate failed, 130/143 interrupted."});
}

}  // namespace shootdown::cmd
