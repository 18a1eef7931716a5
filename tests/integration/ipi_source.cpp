// SPDX-License-Identifier: Apache-2.0
// A controlled IPI source for tests/integration/kernel_trace.sh.
//
//   ipi_source [--culprit-cpu 0] [--victim-cpu 1] [--membarriers K] [--unmap-mib 256]
//
// Pins a victim thread (spins writing memory, so its CPU is never idle or in
// lazy-TLB mode and always runs our mm) and a culprit thread. The culprit
// (a) calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) K times: each sends
// exactly one function-call IPI (ipi_mb) to every other CPU currently running
// this mm, i.e. the victim; then (b) munmaps a region both threads touched,
// which sends TLB-shootdown IPIs to the victim. Prints what it did, with
// CLOCK_MONOTONIC markers, as "key=value" lines.
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

namespace {

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// Column of `cpu` in /proc/interrupts row `row` ("TLB", "CAL"); -1 if absent.
long long interrupts(const char* row, int cpu) {
  std::FILE* f = std::fopen("/proc/interrupts", "r");
  if (!f) return -1;
  char line[8192];
  long long out = -1;
  int col = -1;
  int ncpu = 0;
  bool header = true;
  while (std::fgets(line, sizeof line, f)) {
    if (header) {  // "           CPU0       CPU1"
      header = false;
      for (char* p = line; (p = std::strstr(p, "CPU")); p += 3, ++ncpu)
        if (std::atoi(p + 3) == cpu) col = ncpu;
      continue;
    }
    char* p = line;
    while (*p == ' ') ++p;
    const std::size_t n = std::strlen(row);
    if (std::strncmp(p, row, n) != 0 || p[n] != ':') continue;
    p += n + 1;
    for (int i = 0; i <= col && col >= 0; ++i) {
      char* end = nullptr;
      const long long v = std::strtoll(p, &end, 10);
      if (end == p) break;
      if (i == col) out = v;
      p = end;
    }
  }
  std::fclose(f);
  return out;
}

int membarrier(int cmd) {
  return static_cast<int>(syscall(__NR_membarrier, cmd, 0, 0));
}

std::atomic<int> g_phase{0};  // 0 start, 1 victim ready, 2 region touched by victim, 3 stop
std::atomic<std::uint64_t> g_sink{0};
std::atomic<bool> g_fifo{false};

}  // namespace

int main(int argc, char** argv) {
  int culprit = 0, victim = 1, k = 100;
  long unmap_mib = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (a == "--culprit-cpu")
      culprit = static_cast<int>(v);
    else if (a == "--victim-cpu")
      victim = static_cast<int>(v);
    else if (a == "--membarriers")
      k = static_cast<int>(v);
    else if (a == "--unmap-mib")
      unmap_mib = v;
    else {
      std::fprintf(stderr, "ipi_source: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const std::size_t bytes = static_cast<std::size_t>(unmap_mib) << 20;
  const long page = sysconf(_SC_PAGESIZE);
  auto* region =
      static_cast<unsigned char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (region == MAP_FAILED) {
    std::perror("ipi_source: mmap");
    return 1;
  }
  // 4 KiB pages: THP would turn the unmap into a handful of flushes.
  madvise(region, bytes, MADV_NOHUGEPAGE);
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    std::fprintf(stderr, "ipi_source: membarrier register: %s\n", std::strerror(errno));
    return 1;
  }

  std::thread v([&] {
    if (!pin(victim)) std::fprintf(stderr, "ipi_source: cannot pin victim to cpu%d\n", victim);
    for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(page)) region[off] = 1;
    // SCHED_FIFO keeps the victim on its CPU even on a loaded machine: a
    // membarrier or TLB IPI is only sent to (and only does its work on) a CPU
    // that is running this mm. The spin lasts well under the RT throttle's
    // 950 ms budget (sched_rt_runtime_us). Best effort when not permitted.
    sched_param sp{};
    sp.sched_priority = 10;
    g_fifo.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0);
    g_phase.store(2);
    // Spin writing a private buffer: always running, never lazy TLB.
    static unsigned char buf[1 << 16];
    std::uint64_t n = 0;
    while (g_phase.load(std::memory_order_relaxed) != 3) {
      for (std::size_t i = 0; i < sizeof buf; i += 64) buf[i] = static_cast<unsigned char>(n++);
    }
    g_sink.store(n);
  });
  if (!pin(culprit)) std::fprintf(stderr, "ipi_source: cannot pin culprit to cpu%d\n", culprit);
  for (std::size_t off = 0; off < bytes; off += static_cast<std::size_t>(page)) region[off] = 2;
  while (g_phase.load() != 2) std::this_thread::yield();
  usleep(50000);  // victim now spinning

  const std::int64_t mb0 = mono_ns();
  int failed = 0;
  for (int i = 0; i < k; ++i) {
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) ++failed;
    usleep(200);  // one IPI at a time: keeps each one separately visible
  }
  const std::int64_t mb1 = mono_ns();
  usleep(20000);
  // The window the TLB counter is compared over: after the first read of
  // /proc/interrupts completed, before the second one starts.
  const long long tlb0 = interrupts("TLB", victim);
  const std::int64_t un0 = mono_ns();
  munmap(region, bytes);
  const std::int64_t un1 = mono_ns();
  const long long tlb1 = interrupts("TLB", victim);
  usleep(20000);
  g_phase.store(3);
  v.join();
  std::printf("membarriers=%d failed=%d mb_start_ns=%lld mb_end_ns=%lld\n", k, failed, static_cast<long long>(mb0),
              static_cast<long long>(mb1));
  std::printf("victim_fifo=%d\n", g_fifo.load() ? 1 : 0);
  std::printf("victim_tlb_before=%lld victim_tlb_after=%lld victim_tlb_delta=%lld\n", tlb0, tlb1, tlb1 - tlb0);
  std::printf("unmap_mib=%ld unmap_start_ns=%lld unmap_end_ns=%lld culprit_cpu=%d victim_cpu=%d\n", unmap_mib,
              static_cast<long long>(un0), static_cast<long long>(un1), culprit, victim);
  return failed ? 1 : 0;
}
