// SPDX-License-Identifier: Apache-2.0
// SIGINT/SIGTERM become a flag the experiment polls; the handler only stores
// the signal number (async-signal-safe). Restores the previous handlers on
// destruction.
#pragma once

#include <atomic>
#include <csignal>

namespace shootdown::sys {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static int pending() noexcept;  // 0 or the signal number
  static bool stop_requested() noexcept { return pending() != 0; }
  static void reset() noexcept;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Exit code for a signal: 128 + signo (130 SIGINT, 143 SIGTERM).
inline int exit_code_for_signal(int sig) {
  return 128 + sig;
}

}  // namespace shootdown::sys
