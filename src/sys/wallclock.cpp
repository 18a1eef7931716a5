#include "sys/wallclock.hpp"

#include <ctime>

namespace shootdown::sys {

namespace {
std::int64_t now(clockid_t c) noexcept {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
}  // namespace

std::int64_t realtime_offset_ns() noexcept {
  std::int64_t best_width = INT64_MAX, best = 0;
  for (int i = 0; i < 16; ++i) {
    const std::int64_t m0 = now(CLOCK_MONOTONIC);
    const std::int64_t rt = now(CLOCK_REALTIME);
    const std::int64_t m1 = now(CLOCK_MONOTONIC);
    if (m1 - m0 < best_width) {
      best_width = m1 - m0;
      best = rt - (m0 + (m1 - m0) / 2);
    }
  }
  return best;
}

}  // namespace shootdown::sys
