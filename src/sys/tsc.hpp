// SPDX-License-Identifier: Apache-2.0
// TSC timestamps for the victim's hot loop and their conversion to
// CLOCK_MONOTONIC. The loop reads the TSC only (no syscall, no vDSO call);
// the conversion is a linear map fitted from (tsc, mono) pairs taken before
// and after the measurement. x86-64 only (constant/nonstop TSC assumed and
// recorded in the environment).
#pragma once

#include <cstdint>
#include <x86intrin.h>

namespace shootdown::sys {

// RDTSCP waits until every earlier instruction has executed (and earlier
// loads are globally visible) before reading the TSC, so a batch's work is
// inside its timestamp; later instructions may start early, which only moves
// work between consecutive gapless samples, never out of the measurement.
// It costs ~19 ns on our KVM guest against ~33 ns for lfence;rdtsc;lfence
// (bench/bench_victim, docs/methodology.md).
inline std::uint64_t rdtsc_fenced() noexcept {
  unsigned aux = 0;
  return __rdtscp(&aux);
}

std::int64_t mono_now_ns() noexcept;

struct TscPoint {
  std::uint64_t tsc = 0;
  std::int64_t mono_ns = 0;
  std::int64_t uncertainty_ns = 0;  // half the bracketing window
};

// Best of n bracketed reads: rdtsc, clock_gettime, rdtsc, keep the narrowest.
TscPoint tsc_point(int tries = 64) noexcept;

// Linear map tsc -> mono ns through two points.
struct TscClock {
  TscPoint a, b;
  double ns_per_tick = 0;  // (b.mono - a.mono) / (b.tsc - a.tsc)

  static TscClock from(TscPoint first, TscPoint last);
  double hz() const { return ns_per_tick > 0 ? 1e9 / ns_per_tick : 0; }
  std::int64_t to_mono(std::uint64_t tsc) const noexcept {
    return a.mono_ns +
           static_cast<std::int64_t>(static_cast<double>(static_cast<std::int64_t>(tsc - a.tsc)) * ns_per_tick);
  }
  std::uint64_t to_tsc(std::int64_t mono_ns) const noexcept {
    return a.tsc + static_cast<std::uint64_t>(
                       static_cast<std::int64_t>(static_cast<double>(mono_ns - a.mono_ns) / ns_per_tick));
  }
  std::int64_t ticks_to_ns(std::uint64_t ticks) const noexcept {
    return static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick);
  }
};

// Calibrate over `window_ns` (spinning): used before the run to get the
// scale that sizes the victim's ring (the run's fit replaces it afterwards).
TscClock calibrate(std::int64_t window_ns);

}  // namespace shootdown::sys
