// SPDX-License-Identifier: Apache-2.0
// shootdown_storm: a TLB shootdown storm with a measured rate, for comparing
// observers (bench/observer_overhead.sh).
//
//   shootdown_storm [--culprit CPU] [--victim CPU] [--baseline MS] [--warmup MS] [--duration MS] [--pages N]
//
// The culprit thread, pinned to --culprit, loops mmap N pages (default 4),
// touch each, munmap; the victim thread, pinned to --victim, spins writing
// its own page so its CPU stays in this mm and receives one flush IPI per
// munmap. With --baseline MS it first settles for 500 ms, then counts its
// rate for MS alone (before an observer is started). After --warmup ms (time for an observer to
// attach) the culprit counts iterations for --duration ms and prints one line:
//   "storm iterations=N seconds=S rate=R/s culprit=C victim=V pid=P p90=Q/s
//    [baseline=B/s baseline_p90=BQ/s ratio=R/B p90_ratio=Q/BQ]"
// The ratio pairs the two windows of one process seconds apart, so host
// drift between runs does not enter it.
// Exit 1 when pinning or mmap fails, 2 on bad arguments.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

long arg(int argc, char** argv, const char* name, long def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) {
      char* end = nullptr;
      const long v = std::strtol(argv[i + 1], &end, 10);
      if (*end != '\0' || v < 0) {
        std::fprintf(stderr, "shootdown_storm: bad value for %s: %s\n", name, argv[i + 1]);
        std::exit(2);
      }
      return v;
    }
  return def;
}

std::atomic<bool> g_stop{false};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i += 2)
    if (std::strcmp(argv[i], "--culprit") != 0 && std::strcmp(argv[i], "--victim") != 0 &&
        std::strcmp(argv[i], "--warmup") != 0 && std::strcmp(argv[i], "--duration") != 0 &&
        std::strcmp(argv[i], "--baseline") != 0 && std::strcmp(argv[i], "--pages") != 0) {
      std::fprintf(
          stderr,
          "usage: shootdown_storm [--culprit CPU] [--victim CPU] [--baseline MS] [--warmup MS] [--duration MS] "
          "[--pages N]\n");
      return 2;
    }
  const int culprit = static_cast<int>(arg(argc, argv, "--culprit", 0));
  const int victim = static_cast<int>(arg(argc, argv, "--victim", 1));
  const long baseline_ms = arg(argc, argv, "--baseline", 0);
  const long warmup_ms = arg(argc, argv, "--warmup", 1000);
  const long duration_ms = arg(argc, argv, "--duration", 3000);
  const long pages = arg(argc, argv, "--pages", 4);
  if (pages < 1 || duration_ms < 1 || baseline_ms < 0) {
    std::fprintf(stderr, "shootdown_storm: --pages and --duration must be >= 1\n");
    return 2;
  }
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t len = page * static_cast<std::size_t>(pages);

  std::atomic<bool> victim_ok{true};
  std::thread v([&] {
    if (!pin(victim)) {
      victim_ok = false;
      return;
    }
    alignas(64) static volatile char mine[4096];
    unsigned long i = 0;
    while (!g_stop.load(std::memory_order_relaxed)) mine[(i++ * 64) % sizeof mine] = 1;
  });
  if (!pin(culprit)) {
    g_stop = true;
    v.join();
    std::fprintf(stderr, "shootdown_storm: cannot pin to CPU %d\n", culprit);
    return 1;
  }
  using clock = std::chrono::steady_clock;
  auto one = [&]() -> bool {
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    for (std::size_t off = 0; off < len; off += page) static_cast<volatile char*>(p)[off] = 1;
    return munmap(p, len) == 0;
  };
  // Iterations in [now, now + ms), in batches of 64 between clock reads,
  // and the 90th percentile of the rates of its 100 ms slices: a host that
  // preempts a vCPU only ever slows the storm (the IPI waits for the victim),
  // so the fast slices show what the observer itself costs.
  bool ok = true;
  auto window = [&](long ms, double* seconds, double* p90) -> unsigned long {
    const auto t0 = clock::now();
    const auto t_end = t0 + std::chrono::milliseconds(ms);
    auto slice_end = t0 + std::chrono::milliseconds(100);
    std::vector<double> slices;
    slices.reserve(static_cast<std::size_t>(ms / 100 + 1));
    unsigned long n = 0, slice_n = 0;
    auto slice_t0 = t0;
    while (ok) {
      for (int k = 0; k < 64 && ok; ++k, ++n, ++slice_n) ok = one();
      const auto now = clock::now();
      if (now >= slice_end) {
        slices.push_back(static_cast<double>(slice_n) / std::chrono::duration<double>(now - slice_t0).count());
        slice_n = 0;
        slice_t0 = now;
        slice_end = now + std::chrono::milliseconds(100);
      }
      if (now >= t_end) break;
    }
    *seconds = std::chrono::duration<double>(clock::now() - t0).count();
    std::sort(slices.begin(), slices.end());
    *p90 = slices.empty() ? 0 : slices[slices.size() * 9 / 10 < slices.size() ? slices.size() * 9 / 10 : 0];
    return n;
  };
  double bs = 0, s = 0, bp90 = 0, p90 = 0;
  if (baseline_ms > 0) window(500, &bs, &bp90);  // settle (the victim starting, first faults) before the baseline
  const unsigned long bn = baseline_ms > 0 ? window(baseline_ms, &bs, &bp90) : 0;
  const auto warm_end = clock::now() + std::chrono::milliseconds(warmup_ms);
  while (ok && clock::now() < warm_end) ok = one();
  const unsigned long n = ok ? window(duration_ms, &s, &p90) : 0;
  g_stop = true;
  v.join();
  if (!ok || !victim_ok) {
    std::fprintf(stderr, "shootdown_storm: %s\n", ok ? "cannot pin the victim" : "mmap/munmap failed");
    return 1;
  }
  const double rate = static_cast<double>(n) / s;
  std::printf("storm iterations=%lu seconds=%.3f rate=%.0f/s culprit=%d victim=%d pid=%d", n, s, rate, culprit, victim,
              static_cast<int>(getpid()));
  std::printf(" p90=%.0f/s", p90);
  if (bn > 0)
    std::printf(" baseline=%.0f/s baseline_p90=%.0f/s ratio=%.4f p90_ratio=%.4f", static_cast<double>(bn) / bs, bp90,
                rate * bs / static_cast<double>(bn), bp90 > 0 ? p90 / bp90 : 0.0);
  std::printf("\n");
  return 0;
}
