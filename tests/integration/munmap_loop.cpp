// SPDX-License-Identifier: Apache-2.0
// Helper workload for the monitor integration test: a known number of TLB
// shootdowns on a known CPU.
//
//   munmap_loop ITERATIONS [munmap|control] [CULPRIT_CPU VICTIM_CPU [MIN_MS]]
//
// The victim thread, pinned to VICTIM_CPU, spins writing to its own page so
// the CPU stays in this mm (not lazy, not idle): every munmap of a touched
// region by the culprit (pinned to CULPRIT_CPU) then sends it one flush IPI.
// "control" does the same work (map, touch) but keeps the mapping, so the
// difference between the two arms is the munmaps alone; MIN_MS keeps the
// control running (touching) at least that long, to match the munmap arm's
// window. A victim that is off its CPU (preempted by a build, RT-throttled)
// is not in the mm's CPU set and gets no IPI, which would make the count
// depend on the machine's load; so the victim runs SCHED_FIFO when permitted
// (root) and the culprit unmaps only right after seeing the victim make
// progress. Prints one line:
// "mode=munmap iterations=N munmaps=N elapsed_ms=X victim=fifo|other".
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace {

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

std::atomic<bool> g_victim_ready{false};
std::atomic<bool> g_done{false};
std::atomic<bool> g_fifo{false};
std::atomic<unsigned long> g_victim_seq{0};  // victim progress: proves it is on its CPU

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: munmap_loop ITERATIONS [munmap|control] [CULPRIT_CPU VICTIM_CPU [MIN_MS]]\n");
    return 2;
  }
  char* end = nullptr;
  const long iterations = std::strtol(argv[1], &end, 10);
  if (*end != '\0' || iterations < 1 || iterations > 10000000) {
    std::fprintf(stderr, "munmap_loop: ITERATIONS must be 1..10000000\n");
    return 2;
  }
  const std::string mode = argc > 2 ? argv[2] : "munmap";
  if (mode != "munmap" && mode != "control") {
    std::fprintf(stderr, "munmap_loop: mode must be munmap or control\n");
    return 2;
  }
  const int culprit = argc > 4 ? std::atoi(argv[3]) : 0;
  const int victim = argc > 4 ? std::atoi(argv[4]) : 1;
  const double min_ms = argc > 5 ? std::atof(argv[5]) : 0;
  const long page = sysconf(_SC_PAGESIZE);
  constexpr int kPages = 4;  // small region: one flush IPI per munmap (no mmu_gather batching)
  const std::size_t len = static_cast<std::size_t>(page) * kPages;

  std::thread v([&] {
    if (!pin(victim)) {
      std::fprintf(stderr, "munmap_loop: cannot pin victim to cpu %d\n", victim);
      std::_Exit(1);
    }
    sched_param sp{};
    sp.sched_priority = 1;
    g_fifo.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0);
    volatile char buf[64] = {};
    g_victim_ready.store(true);
    unsigned i = 0;
    while (!g_done.load(std::memory_order_relaxed)) {
      buf[i % sizeof buf] = static_cast<char>(i);
      ++i;
      g_victim_seq.store(i, std::memory_order_relaxed);
    }
  });
  if (!pin(culprit)) {
    std::fprintf(stderr, "munmap_loop: cannot pin culprit to cpu %d\n", culprit);
    g_done.store(true);
    v.join();
    return 1;
  }
  while (!g_victim_ready.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // victim is spinning

  const auto t0 = std::chrono::steady_clock::now();
  long munmaps = 0;
  char* keep = nullptr;
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (long it = 0; it < iterations || (mode == "control" && elapsed_ms() < min_ms); ++it) {
    char* p = keep;
    if (!p) {
      void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) {
        std::perror("mmap");
        break;
      }
      p = static_cast<char*>(m);
    }
    for (int pg = 0; pg < kPages; ++pg) p[static_cast<long>(pg) * page] = static_cast<char>(it);
    // Unmap only right after seeing the victim make progress: a victim that
    // is off its CPU (preempted, RT-throttled) is not in the mm's CPU set
    // and gets no IPI, so the count would depend on the machine's load.
    const unsigned long seen = g_victim_seq.load(std::memory_order_relaxed);
    while (g_victim_seq.load(std::memory_order_relaxed) == seen) {}
    if (mode == "munmap") {
      munmap(p, len);
      ++munmaps;
    } else {
      keep = p;
    }
  }
  const double ms = elapsed_ms();
  g_done.store(true);
  v.join();
  if (keep) munmap(keep, len);  // after the victim stopped
  std::printf("mode=%s iterations=%ld munmaps=%ld elapsed_ms=%.1f victim=%s\n", mode.c_str(), iterations, munmaps, ms,
              g_fifo.load() ? "fifo" : "other");
  return 0;
}
