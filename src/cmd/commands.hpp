// SPDX-License-Identifier: Apache-2.0
// Subcommand registry. Each src/cmd/cmd_*.cpp defines one add_* function that
// adds its CLI11 subcommand and returns the callback to run when selected.
// Callbacks return the process exit code; they throw UsageError (exit 2) for
// bad input and RuntimeError (exit 1) for failures, never call exit().
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace CLI {
class App;
}

namespace shootdown::cmd {

// Exit codes (docs/exit-codes.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitGateFailed = 3;

using shootdown::RuntimeError;
using shootdown::UsageError;

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_run(CLI::App& root);
Command add_trace(CLI::App& root);
Command add_report(CLI::App& root);
Command add_compare(CLI::App& root);
Command add_monitor(CLI::App& root);
Command add_doctor(CLI::App& root);
Command add_blame(CLI::App& root);
Command add_probe(CLI::App& root);

int main_entry(int argc, char** argv);

}  // namespace shootdown::cmd
