// SPDX-License-Identifier: Apache-2.0
#include "experiment/tlb_delivery.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

#include "sys/affinity.hpp"
#include "sys/interrupts.hpp"

namespace shootdown::exp {

Expected<DoctorFacts::TlbDelivery> measure_tlb_delivery(int from_cpu, int to_cpu, int requests) {
  if (from_cpu == to_cpu || requests <= 0) return Error{"needs two CPUs"};
  const long page = ::sysconf(_SC_PAGESIZE);
  std::atomic<int> spinner{0};  // 0 starting, 1 spinning on to_cpu, -1 could not pin
  std::atomic<bool> stop{false};
  std::string pin_why;
  std::thread spin([&] {
    if (const Status pinned = sys::pin_this_thread(to_cpu); !pinned) {
      pin_why = pinned.error();
      spinner.store(-1);
      return;
    }
    spinner.store(1);
    while (!stop.load(std::memory_order_relaxed)) {}
  });
  while (spinner.load() == 0) std::this_thread::yield();
  std::optional<DoctorFacts::TlbDelivery> out;
  std::string err;
  if (spinner.load() < 0) {
    err = "cpu " + std::to_string(to_cpu) + ": " + pin_why;
  } else {
    std::thread work([&] {
      if (const Status pinned = sys::pin_this_thread(from_cpu); !pinned) {
        err = "cpu " + std::to_string(from_cpu) + ": " + pinned.error();
        return;
      }
      sys::InterruptsCapture before, after;
      if (!before.capture()) {
        err = before.error();
        return;
      }
      int done = 0;
      for (; done < requests; ++done) {
        void* p =
            ::mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) break;
        static_cast<volatile char*>(p)[0] = 1;  // a TLB entry to flush
        ::munmap(p, static_cast<std::size_t>(page));
      }
      if (!after.capture()) {
        err = after.error();
        return;
      }
      const auto b = before.snapshot(), a = after.snapshot();
      if (!b || !a) {
        err = a ? b.error() : a.error();
        return;
      }
      if (!a->get("TLB", to_cpu)) {
        err = "no TLB row for cpu " + std::to_string(to_cpu) + " in /proc/interrupts";
        return;
      }
      out = DoctorFacts::TlbDelivery{from_cpu, to_cpu, done, sys::interrupts_delta(*b, *a, "TLB", to_cpu)};
    });
    work.join();
  }
  stop.store(true);
  spin.join();
  if (!out) return Error{err.empty() ? std::string("not measured") : err};
  return *out;
}

}  // namespace shootdown::exp
