// shootdown_storm: a TLB shootdown storm with a measured rate, for comparing
// observers (bench/observer_overhead.sh).
//
//   shootdown_storm [--culprit CPU] [--victim CPU] [--warmup MS] [--duration MS] [--pages N]
//
// The culprit thread, pinned to --culprit, loops mmap N pages (default 4),
// touch each, munmap; the victim thread, pinned to --victim, spins writing
// its own page so its CPU stays in this mm and receives one flush IPI per
// munmap. After --warmup ms (time for an observer to attach) the culprit
// counts iterations for --duration ms and prints one line:
//   "storm iterations=N seconds=S rate=R/s culprit=C victim=V pid=P"
// Exit 1 when pinning or mmap fails, 2 on bad arguments.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

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
        std::strcmp(argv[i], "--pages") != 0) {
      std::fprintf(stderr,
                   "usage: shootdown_storm [--culprit CPU] [--victim CPU] [--warmup MS] [--duration MS] [--pages N]\n");
      return 2;
    }
  const int culprit = static_cast<int>(arg(argc, argv, "--culprit", 0));
  const int victim = static_cast<int>(arg(argc, argv, "--victim", 1));
  const long warmup_ms = arg(argc, argv, "--warmup", 1000);
  const long duration_ms = arg(argc, argv, "--duration", 3000);
  const long pages = arg(argc, argv, "--pages", 4);
  if (pages < 1 || duration_ms < 1) {
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
  const auto warm_end = clock::now() + std::chrono::milliseconds(warmup_ms);
  while (clock::now() < warm_end)
    if (!one()) break;
  const auto t0 = clock::now();
  const auto t_end = t0 + std::chrono::milliseconds(duration_ms);
  unsigned long n = 0;
  bool ok = true;
  while (ok) {
    for (int k = 0; k < 64 && ok; ++k, ++n) ok = one();
    if (clock::now() >= t_end) break;
  }
  const double s = std::chrono::duration<double>(clock::now() - t0).count();
  g_stop = true;
  v.join();
  if (!ok || !victim_ok) {
    std::fprintf(stderr, "shootdown_storm: %s\n", ok ? "cannot pin the victim" : "mmap/munmap failed");
    return 1;
  }
  std::printf("storm iterations=%lu seconds=%.3f rate=%.0f/s culprit=%d victim=%d pid=%d\n", n, s,
              static_cast<double>(n) / s, culprit, victim, static_cast<int>(getpid()));
  return 0;
}
