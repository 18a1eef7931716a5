// shootdown run: plan → prepare → run → report → restore.
#include <memory>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fmt/format.h>
#include <random>
#include <unistd.h>

#include "cli/run_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/influx_out.hpp"
#include "cmd/run_support.hpp"
#include "core/analysis.hpp"
#include "experiment/experiment.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/console.hpp"
#include "sink/json.hpp"
#include "core/doctor.hpp"
#include "sys/environment.hpp"
#include "sys/facts.hpp"
#include "sys/signals.hpp"
#include "sys/wallclock.hpp"

namespace shootdown::cmd {

namespace {

struct RunCommand {
  cli::RunOptions opts;
  std::vector<std::string> argv;
};

}  // namespace

static std::string current_command_line() {
  std::string s = read_cmdline_self();
  return s;
}

Command add_run(CLI::App& root) {
  auto cmd = std::make_shared<RunCommand>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand(
      "run", "The culprit/victim experiment: one thread releases memory, victims measure the stall");
  cli::add_run_options(*app, cmd->opts);
  app->footer(
      "EXAMPLES:\n"
      "  shootdown run                                  defaults: free of a 4 GiB chunk\n"
      "  shootdown run --release munmap --chunk-size 1GiB --out out/munmap\n"
      "  shootdown run --release reuse                   the control arm: no shootdowns expected\n"
      "  shootdown run --pages thp --release munmap      huge pages: far fewer IPIs\n"
      "  shootdown run --repeat 10 --every 200ms --trigger after=1s\n"
      "  shootdown run --culprit-cpu 0 --victim-cpus 1 --json > result.json\n\n"
      "EXIT STATUS: 0 done, 1 runtime failure, 2 bad input, 130/143 interrupted (partial result written with --out).");
  return {app, [cmd]() { return execute_run(cmd->opts); }};
}

int execute_run(const cli::RunOptions& opts) {
  std::vector<std::string> plan_warn;
  const cli::MachineFacts facts = cli::read_machine_facts();
  Plan plan;
  try {
    plan = cli::validate_run_options(opts, facts, &plan_warn);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::unique_ptr<sink::OutputDir> out;
  if (!opts.out.empty()) {
    try {
      out = std::make_unique<sink::OutputDir>(opts.out);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
  }

  std::optional<influx::Url> influx;
  if (!opts.influx.empty()) influx = parse_influx_option(opts.influx);

  sys::StopSignals signals;
  Result r;
  const bool progress = !opts.quiet && ::isatty(STDERR_FILENO) == 1;
  exp::Hooks hooks = make_run_hooks(plan, progress, opts.quiet);
  // Wall clock of the run (InfluxDB, .hlog StartTime): read once, next to the start.
  const std::int64_t realtime_offset = sys::realtime_offset_ns();
  try {
    r = exp::run_experiment(plan, hooks);
  } catch (const std::runtime_error& e) {
    throw RuntimeError(e.what());
  }
  if (progress) std::fputs("\r\033[K", stderr);
  r.realtime_offset_ns = realtime_offset;
  r.run_id = make_run_id();
  r.started_at = iso_now();
  r.command_line = current_command_line();
  const Environment measured = r.env;
  r.env = sys::read_environment();
  r.env.tsc_hz = measured.tsc_hz;
  r.env.tsc_hz_pre = measured.tsc_hz_pre;
  r.env.tsc_drift_ppm = measured.tsc_drift_ppm;
  r.env.warnings = sys::plan_warnings(r.env, plan);
  for (auto& w : plan_warn) r.env.warnings.push_back(w);
  // The doctor's checklist for the CPUs used: every finding is recorded; the
  // ones that undermine the numbers are printed with the result.
  std::vector<int> cpus{plan.culprit_cpu};
  cpus.insert(cpus.end(), plan.victim_cpus.begin(), plan.victim_cpus.end());
  r.doctor = run_doctor_checks(sys::read_doctor_facts(), cpus);
  for (const auto& f : r.doctor)
    if (f.undermines_numbers && f.status != DoctorStatus::kPass)
      r.env.warnings.push_back(f.name + ": " + f.found + " (see shootdown doctor)");

  const Analysis a = analyze(r);
  finish_run_outputs(r, a, out.get(), opts.json, influx, opts.quiet);
  if (opts.open && out) std::fprintf(opts.json ? stderr : stdout, "report: %s\n", report_file_url(out->path()).c_str());
  if (!r.complete && r.exit_signal != 0) return sys::exit_code_for_signal(r.exit_signal);
  if (!r.complete) return kExitError;
  return kExitOk;
}

}  // namespace shootdown::cmd
