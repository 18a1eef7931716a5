// SPDX-License-Identifier: Apache-2.0
// shootdown run: plan → prepare → run → report → restore.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>
#include <unistd.h>

#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/influx_out.hpp"
#include "cmd/run_support.hpp"
#include "core/analysis.hpp"
#include "experiment/experiment.hpp"
#include "experiment/finish.hpp"
#include "sink/atomic_writer.hpp"
#include "sys/signals.hpp"
#include "sys/wallclock.hpp"

namespace shootdown::cmd {

namespace {

class RunTool final : public Tool {
 public:
  explicit RunTool(const cli::RunOptions& o) : o_(o) {}

  void plan() override {
    plan_ = cli::validate_run_options(o_, cli::read_machine_facts(), &plan_warnings_);
    if (!o_.out.empty()) out_ = std::make_unique<sink::OutputDir>(o_.out);  // UsageError when it cannot be made
    if (!o_.influx.empty()) influx_ = parse_influx_option(o_.influx);
  }

  void run() override {
    progress_ = !o_.quiet && ::isatty(STDERR_FILENO) == 1;
    const exp::Hooks hooks = make_run_hooks(progress_, o_.quiet);
    // Wall clock of the run (InfluxDB, .hlog StartTime): read once, next to the start.
    const std::int64_t realtime_offset = sys::realtime_offset_ns();
    r_ = exp::run_experiment(plan_, hooks);
    if (progress_) std::fputs("\r\033[K", stderr);
    r_.realtime_offset_ns = realtime_offset;
  }

  void analyze() override {
    // The doctor's checklist for the CPUs used: every finding is recorded; the
    // ones that undermine the numbers are printed with the result.
    exp::FinishOptions fo;
    fo.warnings = plan_warnings_;
    exp::finish_result(r_, fo);
    a_ = shootdown::analyze(r_);
  }

  int report() override {
    finish_run_outputs(r_, a_, out_.get(), o_.json, influx_, o_.quiet, o_.verbose);
    if (o_.open && out_) std::fprintf(o_.json ? stderr : stdout, "report: %s\n", report_file_url(out_->path()).c_str());
    if (!r_.complete) return kExitError;
    return kExitOk;
  }
  // A signal after the measurement completed changes nothing.
  int interrupted_by() const override { return r_.complete ? 0 : r_.exit_signal; }

 private:
  const cli::RunOptions& o_;
  Plan plan_;
  std::vector<std::string> plan_warnings_;
  std::unique_ptr<sink::OutputDir> out_;
  std::optional<influx::Url> influx_;
  bool progress_ = false;
  Result r_;
  Analysis a_;
};

}  // namespace

Command add_run(CLI::App& root) {
  auto opts = std::make_shared<cli::RunOptions>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand(
      "run", "The culprit/victim experiment: one thread releases memory, victims measure the stall");
  cli::add_run_options(*app, *opts);
  return tool_command<RunTool>(
      app, opts,
      {.notes = "",
       .examples =
           {"shootdown run                                  defaults: free of a 4 GiB chunk",
            "shootdown run --release munmap --chunk-size 1GiB --out out/munmap",
            "shootdown run --release reuse                   the control arm: no shootdowns expected",
            "shootdown run --pages thp --release munmap      huge pages: far fewer IPIs",
            "shootdown run --release paced --chunk-size 1GiB  the same release spread: 64 KiB steps, 100 us pauses",
            "shootdown run --release chunked --pace 2MiB/1ms  spread in 2 MiB steps with 1 ms pauses (G1-like: "
            "64MiB/10ms)",
            "shootdown run --repeat 10 --every 200ms --trigger after=1s",
            "shootdown run --trigger enter --out out/live        wait as long as you like: memory stays within",
            "                                                --memory-limit (512MiB), raw kept around the release",
            "shootdown run --culprit-cpu 0 --victim-cpus 1 --json > result.json"},
       .exit_status =
           "0 done, 1 runtime failure, 2 bad input, 130/143 interrupted (partial result written with --out)."});
}

}  // namespace shootdown::cmd
