// SPDX-License-Identifier: Apache-2.0
#include "sys/tsc.hpp"

#include <ctime>

namespace shootdown::sys {

std::int64_t mono_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

TscPoint tsc_point(int tries) noexcept {
  TscPoint best{};
  std::uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < tries; ++i) {
    const std::uint64_t t0 = rdtsc_fenced();
    const std::int64_t m = mono_now_ns();
    const std::uint64_t t1 = rdtsc_fenced();
    if (t1 - t0 < best_width) {
      best_width = t1 - t0;
      best.tsc = t0 + (t1 - t0) / 2;
      best.mono_ns = m;
      best.uncertainty_ns = static_cast<std::int64_t>(best_width / 2);  // ticks; rescaled below
    }
  }
  return best;
}

TscClock TscClock::from(TscPoint first, TscPoint last) {
  TscClock c;
  c.a = first;
  c.b = last;
  const double dt = static_cast<double>(last.tsc - first.tsc);
  c.ns_per_tick = dt > 0 ? static_cast<double>(last.mono_ns - first.mono_ns) / dt : 0.0;
  return c;
}

TscClock calibrate(std::int64_t window_ns) {
  const TscPoint a = tsc_point();
  const std::int64_t end = a.mono_ns + window_ns;
  while (mono_now_ns() < end) {}
  const TscPoint b = tsc_point();
  return TscClock::from(a, b);
}

}  // namespace shootdown::sys
