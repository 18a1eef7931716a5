// SPDX-License-Identifier: Apache-2.0
#include "sys/wallclock.hpp"

#include <ctime>
#include <fmt/format.h>
#include <random>

#include "sys/fs.hpp"

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

std::string iso_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string make_run_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

std::string read_cmdline_self() {
  auto s = read_file("/proc/self/cmdline");
  if (!s) return {};
  std::string out;
  for (char c : *s) out += c == '\0' ? ' ' : c;
  return trim(out);
}

}  // namespace shootdown::sys
