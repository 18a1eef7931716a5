// SPDX-License-Identifier: Apache-2.0
#include "sys/signals.hpp"

namespace shootdown::sys {

namespace {
std::atomic<int> g_pending{0};
extern "C" void on_stop_signal(int sig) {
  g_pending.store(sig, std::memory_order_relaxed);
}
}  // namespace

StopSignals::StopSignals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking reads (Enter trigger) return EINTR
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::pending() noexcept {
  return g_pending.load(std::memory_order_relaxed);
}
void StopSignals::reset() noexcept {
  g_pending.store(0, std::memory_order_relaxed);
}

}  // namespace shootdown::sys
