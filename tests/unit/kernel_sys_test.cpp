// SPDX-License-Identifier: Apache-2.0
// kallsyms and tracefs parsers (pure), and a live Tracer smoke test that
// skips without root/tracefs.
#include <gtest/gtest.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "sys/affinity.hpp"
#include "sys/bpf_flush_counter.hpp"
#include "sys/kallsyms.hpp"
#include "sys/perf_trace.hpp"
#include "sys/tracefs.hpp"
#include "sys/tsc.hpp"

namespace shootdown::sys {
namespace {

TEST(Kallsyms, SymbolizesTextSymbolsWithOffsetsAndModules) {
  const auto k = Kallsyms::parse(
      "ffffffff81000000 T _stext\n"
      "ffffffff8134aec0 t flush_tlb_func\n"
      "ffffffff8134b100 T flush_tlb_mm_range\n"
      "ffffffff8134c000 D some_data\n"
      "ffffffffc0001000 t vmx_vcpu_run\t[kvm_intel]\n");
  ASSERT_FALSE(k.empty());
  EXPECT_EQ(k.symbolize(0xffffffff8134aec0ULL), "flush_tlb_func+0x0");
  EXPECT_EQ(k.symbolize(0xffffffff8134aedfULL), "flush_tlb_func+0x1f");
  EXPECT_EQ(k.function(0xffffffff8134b180ULL), "flush_tlb_mm_range");
  EXPECT_EQ(k.symbolize(0xffffffffc0001010ULL), "vmx_vcpu_run+0x10 [kvm_intel]");
  EXPECT_EQ(k.function(0xffffffffc0001010ULL), "vmx_vcpu_run");
  EXPECT_EQ(k.symbolize(0x1000), "");  // below every symbol
}

TEST(Kallsyms, HiddenAddressesGiveAnEmptyTable) {
  const auto k = Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t flush_tlb_func\n");
  EXPECT_TRUE(k.empty());
  EXPECT_EQ(k.symbolize(0xffffffff8134aec0ULL), "");
}

TEST(Tracefs, FindsTheMountPreferringTheCanonicalPath) {
  EXPECT_EQ(find_tracefs_mount("sysfs /sys sysfs rw 0 0\nproc /proc proc rw 0 0\n"), "");
  EXPECT_EQ(find_tracefs_mount("tracefs /sys/kernel/debug/tracing tracefs rw 0 0\n"), "/sys/kernel/debug/tracing");
  EXPECT_EQ(find_tracefs_mount("tracefs /sys/kernel/debug/tracing tracefs rw 0 0\n"
                               "nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n"),
            "/sys/kernel/tracing");
}

// Live: membarrier IPIs from this thread to a spinning thread on another CPU
// are seen as csd_function_entry(ipi_mb) on that CPU, with CLOCK_MONOTONIC
// timestamps inside the window we measured.
TEST(TracerLive, SeesMembarrierIpisWithMonotonicTimestamps) {
  if (const auto permitted = tracing_permitted(); !permitted)
    GTEST_SKIP() << "tracing not permitted: " << permitted.error();
  const int ncpu = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (ncpu < 2) GTEST_SKIP() << "needs 2 CPUs";
  if (::syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) GTEST_SKIP() << "no membarrier";
  TracerOptions o;
  o.cpus = {0, 1};
  o.culprit_cpu = 0;
  o.reader_cpu = 0;
  auto opened = Tracer::open(o);
  ASSERT_TRUE(opened) << opened.error();
  auto t = std::move(*opened);
  EXPECT_FALSE(t->tracepoints().empty());
  t->start_reader();
  std::atomic<bool> stop{false}, ready{false};
  std::thread spinner([&] {
    (void)pin_this_thread(1);
    // SCHED_FIFO: membarrier only IPIs CPUs currently running this mm, and a
    // loaded machine would otherwise preempt the spinner (short: < 1 s).
    sched_param sp{};
    sp.sched_priority = 10;
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    ready = true;
    while (!stop.load(std::memory_order_relaxed)) {}
  });
  (void)pin_this_thread(0);
  while (!ready) std::this_thread::yield();
  usleep(20000);
  const std::int64_t t0 = mono_now_ns();
  for (int i = 0; i < 20; ++i) {
    ::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    usleep(100);
  }
  const std::int64_t t1 = mono_now_ns();
  usleep(5000);
  stop = true;
  spinner.join();
  KernelTrace kt = t->stop();
  EXPECT_TRUE(kt.enabled);
  EXPECT_EQ(kt.lost_events, 0);
  EXPECT_TRUE(
      std::is_sorted(kt.events.begin(), kt.events.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; }));
  int ipi_mb = 0;
  for (const auto& e : kt.events)
    if (e.cpu == 1 && e.type == EventType::kCsdFunctionEntry &&
        kt.symbol(static_cast<std::uint64_t>(e.b)).rfind("ipi_mb", 0) == 0 && e.mono_ns >= t0 &&
        e.mono_ns <= t1 + 5'000'000)
      ++ipi_mb;
  // A loaded machine can preempt the spinner (membarrier then skips its CPU).
  EXPECT_GE(ipi_mb, 1);
  EXPECT_LE(ipi_mb, 20);
  EXPECT_TRUE(t->stop().events.empty());  // idempotent
}

}  // namespace
}  // namespace shootdown::sys

TEST(BpfFlushCounter, TaskTableMemoryBoundedByCpuCount) {
  EXPECT_EQ(shootdown::sys::task_slots(2), 8192u);
  EXPECT_EQ(shootdown::sys::task_slots(64), 8192u);   // 8192 x (64 + 1024) bytes = 8.5 MiB
  EXPECT_EQ(shootdown::sys::task_slots(512), 2032u);  // 2032 x (64 + 8192) bytes < 16 MiB
  EXPECT_EQ(shootdown::sys::task_slots(8192), 256u);  // the floor
  for (int n : {1, 8, 72, 128, 256, 512, 1024})
    EXPECT_LE(static_cast<std::uint64_t>(shootdown::sys::task_slots(n)) * (64 + 16 * static_cast<std::uint64_t>(n)),
              16ULL << 20)
        << n;
}

TEST(Kallsyms, AddressOfAFunctionOrItsCompilerClone) {
  const auto k = shootdown::sys::Kallsyms::parse(
      "ffffffff81001000 t flush_tlb_func_common\n"
      "ffffffff81002000 t flush_tlb_func.constprop.0\n"
      "ffffffff81003000 T native_flush_tlb_multi\n"
      "ffffffffc0001000 t flush_tlb_func.cold\t[kvm]\n");
  EXPECT_EQ(k.address_of("flush_tlb_func"), 0xffffffff81002000ULL);  // the clone, not a longer name
  EXPECT_EQ(k.address_of("native_flush_tlb_multi"), 0xffffffff81003000ULL);
  EXPECT_EQ(k.address_of("do_kernel_range_flush"), 0u);
  const auto exact = shootdown::sys::Kallsyms::parse(
      "ffffffff81002000 t flush_tlb_func.constprop.0\nffffffff81004000 t flush_tlb_func\n");
  EXPECT_EQ(exact.address_of("flush_tlb_func"), 0xffffffff81004000ULL);  // the exact name wins
}
