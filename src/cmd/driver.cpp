// SPDX-License-Identifier: Apache-2.0
#include "cmd/driver.hpp"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <thread>

#include "sys/child.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

namespace shootdown::cmd {

int drive(Tool& tool) {
  tool.plan();
  sys::StopSignals signals;
  tool.prepare();
  tool.run();
  tool.analyze();
  const int code = tool.report();
  if (const int sig = tool.interrupted_by()) return sys::exit_code_for_signal(sig);
  return code;
}

int run_command(const std::string& command, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "shootdown %s: %s\n", command.c_str(), e.what());
    return kExitUsage;
  } catch (const std::exception& e) {  // RuntimeError and any other failure
    std::fprintf(stderr, "shootdown %s: error: %s\n", command.c_str(), e.what());
    return kExitError;
  }
}

void set_help_footer(CLI::App* app, const HelpFooter& f) {
  std::string text = f.notes.empty() ? "" : f.notes + "\n\n";
  text += "EXAMPLES:";
  for (const std::string& e : f.examples) text += "\n  " + e;
  if (!f.exit_status.empty()) text += "\n\nEXIT STATUS: " + f.exit_status;
  app->footer(text);
}

StopCause watch(const Watch& w) {
  const std::int64_t t0 = w.start_ns ? w.start_ns : sys::mono_now_ns();
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(w.period_ms));
    if (w.tick && w.tick()) return StopCause::kTick;
    if (sys::StopSignals::stop_requested()) return StopCause::kSignal;
    if (w.child && w.child->poll()) return StopCause::kChildExited;
    if (w.pid > 0 && ::kill(w.pid, 0) != 0 && errno != EPERM) return StopCause::kTargetGone;
    if (w.duration_ns && sys::mono_now_ns() - t0 >= w.duration_ns) return StopCause::kDuration;
  }
}

}  // namespace shootdown::cmd
