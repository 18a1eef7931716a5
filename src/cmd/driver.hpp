// SPDX-License-Identifier: Apache-2.0
// One lifecycle for every subcommand, in the spirit of rtla's tool_ops:
//
//   plan → prepare → run → analyze → report, restore on every exit path
//
// A subcommand is a Tool: it fills the steps it needs and owns what it
// acquires as RAII members (sys::ChildProcess, sys::Tracer, servers, output
// directories), so "restore" is the Tool's destructor, run whether report()
// returns or any step throws. drive() holds the SIGINT/SIGTERM handlers
// (sys::StopSignals) from prepare to report and puts the old ones back.
//
// Errors: plan() throws UsageError (exit 2, nothing acquired yet); later
// steps throw RuntimeError or any std::exception (exit 1). report() returns
// the exit code, unless interrupted_by() names a signal (docs/exit-codes.md).
// This file is the one place that maps failures and signals to exit codes:
// drive() the signals, run_command() the exceptions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cmd/commands.hpp"

namespace shootdown::sys {
class ChildProcess;
}

namespace shootdown::cmd {

class Tool {
 public:
  virtual ~Tool() = default;
  virtual void plan() = 0;   // validate options; no side effects
  virtual void prepare() {}  // acquire: tracers, memory, servers, output dirs
  virtual void run() {}      // measure
  virtual void analyze() {}  // pure core computations over what was measured
  virtual int report() = 0;  // sinks; returns the exit code
  // The signal (SIGINT, SIGTERM) that cut the measurement short, 0 for none:
  // drive() then exits 128 + signal whatever report() returned (the one
  // signal-to-exit-code mapping, docs/exit-codes.md).
  virtual int interrupted_by() const { return 0; }
};

int drive(Tool& tool);

// Runs one subcommand (its option checks and drive()) and returns its exit
// code: body's value, or for an exception that ends it 2 (UsageError) or 1
// (RuntimeError, any other std::exception) after one line on stderr,
// "shootdown COMMAND: MESSAGE" or "shootdown COMMAND: error: MESSAGE".
int run_command(const std::string& command, const std::function<int()>& body);

// The end of a subcommand's --help: what it does, its examples and its exit
// status, laid out the same way for every subcommand.
struct HelpFooter {
  std::string notes;                  // paragraphs before EXAMPLES ("" = none)
  std::vector<std::string> examples;  // one line each, indented under EXAMPLES
  std::string exit_status;            // after "EXIT STATUS: " ("" = no such line)
};
void set_help_footer(CLI::App* app, const HelpFooter& f);

// A Command whose callback builds T from the parsed options and drives it;
// app's --help ends with the footer.
template <typename T, typename Options>
Command tool_command(CLI::App* app, std::shared_ptr<Options> opts, const HelpFooter& footer) {
  set_help_footer(app, footer);
  return {app, [opts]() {
            T tool(*opts);
            return drive(tool);
          }};
}

// Waiting while something else measures: until a signal, the child exits,
// the watched process is gone, the duration passes or tick() says stop.
enum class StopCause { kSignal, kChildExited, kTargetGone, kDuration, kTick };

struct Watch {
  sys::ChildProcess* child = nullptr;  // stop when it exits
  int pid = 0;                         // stop when this process is gone (blame -p)
  std::int64_t start_ns = 0;           // for duration_ns (0 = now)
  std::int64_t duration_ns = 0;        // 0 = no limit
  int period_ms = 20;
  std::function<bool()> tick;  // called every period; true = stop
};

StopCause watch(const Watch& w);

}  // namespace shootdown::cmd
