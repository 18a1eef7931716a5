// SPDX-License-Identifier: Apache-2.0
#include "sys/perf_count.hpp"

#include <fmt/core.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys/perf_ring.hpp"
#include "sys/tracefs.hpp"

namespace shootdown::sys {

Expected<std::unique_ptr<TlbFlushCounter>> TlbFlushCounter::open(const std::vector<int>& cpus) {
  auto tfs = Tracefs::acquire();  // released (unmounted if ours) when this returns: the ids are all we need
  if (!tfs) return Error{"tracefs: " + tfs.error()};
  const auto id = (*tfs)->event_id("tlb", "tlb_flush");
  if (!id) return Error{"tracepoint tlb:tlb_flush not found"};
  std::unique_ptr<TlbFlushCounter> c(new TlbFlushCounter());
  for (int cpu : cpus) {
    Cpu k;
    k.cpu = cpu;
    k.fd.fill(-1);
    c->cpus_.push_back(k);
    for (int r = 0; r < kTlbFlushReasons; ++r) {
      perf_event_attr a{};
      a.size = sizeof a;
      a.type = PERF_TYPE_TRACEPOINT;
      a.config = static_cast<std::uint64_t>(*id);
      a.disabled = 1;
      const long fd = open_cpu_event(&a, cpu);
      if (fd < 0) return Error{fmt::format("cpu{}: perf_event_open(tlb:tlb_flush): {}", cpu, std::strerror(errno))};
      c->cpus_.back().fd[static_cast<std::size_t>(r)] = static_cast<int>(fd);
      const std::string filter = fmt::format("reason == {}", r);
      if (::ioctl(static_cast<int>(fd), PERF_EVENT_IOC_SET_FILTER, filter.c_str()) != 0)
        return Error{fmt::format("cpu{}: filter '{}': {}", cpu, filter, std::strerror(errno))};
    }
  }
  for (const auto& k : c->cpus_)
    for (int fd : k.fd) ::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  return c;
}

TlbFlushCounter::~TlbFlushCounter() {
  for (const auto& k : cpus_)
    for (int fd : k.fd)
      if (fd >= 0) ::close(fd);
}

std::array<std::int64_t, kTlbFlushReasons> TlbFlushCounter::read(int cpu) const {
  std::array<std::int64_t, kTlbFlushReasons> out{};
  for (const auto& k : cpus_) {
    if (k.cpu != cpu) continue;
    for (std::size_t r = 0; r < out.size(); ++r) {
      std::uint64_t v = 0;
      if (::read(k.fd[r], &v, sizeof v) == static_cast<ssize_t>(sizeof v)) out[r] = static_cast<std::int64_t>(v);
    }
  }
  return out;
}

}  // namespace shootdown::sys
