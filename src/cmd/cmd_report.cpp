// SPDX-License-Identifier: Apache-2.0
// shootdown report DIR: re-render every output of a saved result from
// DIR/result.json (timeline.csv, victim.hlog/.hgrm and whatever else
// write_result_files() writes), print the summary, optionally send it to
// InfluxDB. result.json itself is the source and is left untouched: it holds
// what a loaded Result cannot (callchain frames, events beyond the cap). The
// saved analysis is used as is: result.json keeps only the raw windows of the
// samples, so it cannot be recomputed; the stall attribution comes from the
// saved one (Result::saved_attribution), chart 2's ticks from the saved
// kernel events (trace.events_table).
#include <memory>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <sys/stat.h>

#include "cli/common_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "cmd/influx_out.hpp"
#include "cmd/run_support.hpp"
#include "core/analysis.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/console.hpp"
#include "sink/json_read.hpp"
#include "sys/fs.hpp"

namespace shootdown::cmd {

namespace {

struct ReportOptions {
  std::string dir;
  std::string influx;
  bool json = false;
  bool quiet = false;
  bool verbose = false;
};

class ReportTool final : public Tool {
 public:
  explicit ReportTool(const ReportOptions& o) : o_(o) {}

  void plan() override {
    if (!o_.influx.empty()) influx_ = parse_influx_option(o_.influx);
    dir_ = o_.dir;
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
    struct stat st {};
    if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw UsageError("DIR '" + dir_ + "': not a directory (give the --out directory of a run)");
    const std::string file = dir_ + "/result.json";
    text_ = sys::read_file(file);
    if (!text_)
      throw UsageError(
          file + (sys::path_exists(file) ? ": cannot read" : ": missing") +
          " (a run writes it whole at its end, or marked incomplete on SIGINT/SIGTERM; none means the run"
          " was killed before, e.g. by SIGKILL, or DIR is not a run's --out; accepted: a run's --out DIR)");
    try {
      loaded_ = sink::result_from_json(*text_);
      complete_loaded_analysis(loaded_.result, loaded_.analysis);
    } catch (const sink::JsonReadError& e) {
      throw UsageError(file + ": " + e.what() +
                       " (DIR: accepted: the --out directory of a complete or interrupted run)");
    }
    try {
      out_ = std::make_unique<sink::OutputDir>(dir_);
    } catch (const UsageError&) {  // OutputDir's --out wording: say it for DIR
      throw UsageError("DIR '" + dir_ + "': not writable, cannot re-render the files");
    }
  }

  int report() override {
    // Same order as run: files, stdout, then the database.
    try {
      write_result_files(loaded_.result, loaded_.analysis, *out_, /*with_result_json=*/false);
    } catch (const std::runtime_error& e) {
      throw RuntimeError(std::string("re-rendering: ") + e.what());
    }
    const Result& r = loaded_.result;
    if (o_.json)
      std::fputs(text_->c_str(), stdout);  // the source, complete
    else if (r.plan.release == ReleaseStrategy::kProbe)
    // A probe's result has its own presentation (no culprit, no release).
    {
      // The target: what followed " -- " on the probe's command line.
      const auto dd = r.command_line.find(" -- ");
      const std::string target = dd == std::string::npos ? r.command_line : r.command_line.substr(dd + 4);
      std::fputs(
          (sink::probe_summary(r, loaded_.analysis, target) + "who sent them: shootdown blame -- " + target + "\n")
              .c_str(),
          stdout);
    } else
      std::fputs(sink::console_summary(r, loaded_.analysis, o_.verbose).c_str(), stdout);
    std::fflush(stdout);
    if (influx_) send_to_influx_or_warn(loaded_.result, loaded_.analysis, *influx_, dir_, o_.quiet);
    return kExitOk;
  }

 private:
  const ReportOptions& o_;
  std::string dir_;
  std::optional<std::string> text_;
  std::optional<influx::Url> influx_;
  sink::LoadedResult loaded_;
  std::unique_ptr<sink::OutputDir> out_;
};

}  // namespace

Command add_report(CLI::App& root) {
  auto o = std::make_shared<ReportOptions>();  // owned by the returned callback
  CLI::App* app = root.add_subcommand("report", "Re-render every output from a saved result directory");
  app->add_option("DIR", o->dir, "Directory written by 'shootdown run --out DIR' (reads DIR/result.json)")->required();
  app->add_option("--influx", o->influx,
                  "Also send the result to InfluxDB: http://HOST:PORT/write?db=NAME or udp://HOST:PORT");
  cli::add_json_flag(*app, o->json, "the result", "the table");
  app->add_flag("-q,--quiet", o->quiet, "No notes on stderr");
  app->add_flag("-v,--verbose", o->verbose, "List every tuning warning (default: one line counting them)");
  return tool_command<ReportTool>(
      app, o,
      {.notes = "Rewrites DIR/result.json, timeline.csv, victim.hlog, victim.hgrm (and the other files of a run)\n"
                "from DIR/result.json, atomically, then prints the console summary.",
       .examples = {"shootdown report out/munmap                    re-render and print the table",
                    "shootdown report out/munmap --json | jq .releases",
                    "shootdown report out/munmap --influx http://127.0.0.1:8086/write?db=shootdown"},
       .exit_status = "0 done (an InfluxDB failure is a warning), 1 cannot write, 2 bad DIR or result.json."});
}

}  // namespace shootdown::cmd
