// SPDX-License-Identifier: Apache-2.0
#include "experiment/culprit.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <linux/membarrier.h>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sys/signals.hpp"

namespace shootdown::exp {

namespace {
int membarrier(int cmd) {
  return static_cast<int>(syscall(__NR_membarrier, cmd, 0, 0));
}

// PIDFD_SELF (linux/pidfd.h, Linux 6.14+): this thread group without a pidfd.
constexpr int kPidfdSelfThreadGroup = -20000;
constexpr std::size_t kIovMax = 1024;  // UIO_MAXIOV: vectors longer than this are refused

long process_madvise(int pidfd, const struct iovec* iov, std::size_t n, int advice) {
  return syscall(SYS_process_madvise, pidfd, iov, n, advice, 0U);
}

// The gap after a paced step: an absolute CLOCK_MONOTONIC deadline (a signal
// handler's EINTR resumes toward the same instant). False when a stop signal
// is pending before or after it (*sig = the signal). Allocates nothing.
bool pace_gap(std::int64_t gap_ns, int* sig) {
  if ((*sig = sys::StopSignals::pending()) != 0) return false;
  if (gap_ns > 0) {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    const std::int64_t ns = static_cast<std::int64_t>(t.tv_nsec) + gap_ns % 1000000000LL;
    t.tv_sec += static_cast<time_t>(gap_ns / 1000000000LL + ns / 1000000000LL);
    t.tv_nsec = static_cast<long>(ns % 1000000000LL);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR)
      if ((*sig = sys::StopSignals::pending()) != 0) return false;
  }
  return (*sig = sys::StopSignals::pending()) == 0;
}
}  // namespace

ReleaseContext::~ReleaseContext() {
  if (own_fd_ && pidfd_ >= 0) ::close(pidfd_);
  if (old_slack_ns_ > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(old_slack_ns_), 0, 0, 0);
}

Status ReleaseContext::prepare(ReleaseStrategy s, const Chunk& a, Pace pace) {
  if (is_paced(s)) {
    if (pace.step <= 0 || pace.gap_ns < 0)
      return Error{"no pace (step " + std::to_string(pace.step) + " bytes, gap " + std::to_string(pace.gap_ns) +
                   " ns)"};
    pace_ = pace;
    // The gaps are short (100 us by default): without this the kernel may
    // stretch each sleep by the thread's timer slack (50 us by default).
    if (old_slack_ns_ == 0) {
      const int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
      if (old > 0 && prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) == 0) old_slack_ns_ = old;
    }
    return Ok{};
  }
  if (s != ReleaseStrategy::kMadviseRanges && s != ReleaseStrategy::kProcessMadvise) return Ok{};
  extents_.clear();
  for (std::size_t off = 0; off < a.size(); off += 2 * kExtentBytes)
    extents_.push_back({a.data() + off, std::min(kExtentBytes, a.size() - off)});
  if (s != ReleaseStrategy::kProcessMadvise || pidfd_ >= 0 || !pidfd_kind_.empty()) return Ok{};
  // An empty vector checks the advice without touching memory: a kernel that
  // refuses MADV_DONTNEED through process_madvise says EINVAL here.
  if (process_madvise(kPidfdSelfThreadGroup, nullptr, 0, MADV_DONTNEED) == 0) {
    pidfd_ = kPidfdSelfThreadGroup;
    pidfd_kind_ = "PIDFD_SELF";
    return Ok{};
  }
  const int self_errno = errno;
  if (self_errno != EBADF && self_errno != EINVAL)
    return Error{std::string("process_madvise(PIDFD_SELF): ") + std::strerror(self_errno)};
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, ::getpid(), 0U));
  if (fd < 0) return Error{std::string("pidfd_open(getpid()): ") + std::strerror(errno)};
  if (process_madvise(fd, nullptr, 0, MADV_DONTNEED) != 0) {
    const int e = errno;
    ::close(fd);
    return Error{std::string("this kernel refuses process_madvise(MADV_DONTNEED) on the calling process (") +
                 std::strerror(e) + "): the process-madvise path is unavailable here; madvise-ranges is"};
  }
  pidfd_ = fd;
  own_fd_ = true;
  pidfd_kind_ = "pidfd_open(getpid())";
  return Ok{};
}

Allocator allocator_for(ReleaseStrategy s) {
  return s == ReleaseStrategy::kFree ? Allocator::kMalloc : Allocator::kMmap;
}

Status prepare_strategy(ReleaseStrategy s) {
  if (s != ReleaseStrategy::kMembarrier) return Ok{};
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
    return Error{std::string("membarrier register failed: ") + std::strerror(errno)};
  return Ok{};
}

Status release_chunk(ReleaseStrategy s, Chunk& a, ReleaseContext& ctx) {
  auto fail = [](const char* what) -> Status { return Error{std::string(what) + ": " + std::strerror(errno)}; };
  switch (s) {
    case ReleaseStrategy::kFree:
    case ReleaseStrategy::kMunmap:
      // Chunk::release() does free() for malloc'd chunks and munmap otherwise.
      a.release();
      return Ok{};
    case ReleaseStrategy::kMadviseDontneed:
      if (madvise(a.data(), a.size(), MADV_DONTNEED) != 0) return fail("madvise(MADV_DONTNEED)");
      return Ok{};
    case ReleaseStrategy::kMadviseFree:
      if (madvise(a.data(), a.size(), MADV_FREE) != 0) return fail("madvise(MADV_FREE)");
      return Ok{};
    case ReleaseStrategy::kMprotect:
      if (mprotect(a.data(), a.size(), PROT_READ) != 0) return fail("mprotect(PROT_READ)");
      return Ok{};
    case ReleaseStrategy::kMadviseRanges:
      for (const auto& e : ctx.extents_)
        if (madvise(e.iov_base, e.iov_len, MADV_DONTNEED) != 0) return fail("madvise(MADV_DONTNEED) of an extent");
      return Ok{};
    case ReleaseStrategy::kProcessMadvise:
      for (std::size_t i = 0; i < ctx.extents_.size();) {
        const std::size_t n = std::min(kIovMax, ctx.extents_.size() - i);
        std::size_t want = 0;
        for (std::size_t k = i; k < i + n; ++k) want += ctx.extents_[k].iov_len;
        const long done = process_madvise(ctx.pidfd_, &ctx.extents_[i], n, MADV_DONTNEED);
        if (done < 0) return fail("process_madvise(MADV_DONTNEED)");
        if (static_cast<std::size_t>(done) != want)
          return Error{"process_madvise advised " + std::to_string(done) + " of " + std::to_string(want) + " bytes"};
        i += n;
      }
      return Ok{};
    case ReleaseStrategy::kPaced:
    case ReleaseStrategy::kChunked: {
      // One madvise(MADV_DONTNEED) per step, the gap after each but the
      // last; stop signals are checked between steps, and what was released
      // before a stop or a failed step is kept in paced_bytes().
      ctx.paced_bytes_ = 0;
      ctx.stopped_by_ = 0;
      const auto step = static_cast<std::size_t>(ctx.pace_.step);
      if (step == 0) return Error{"no pace prepared"};
      for (std::size_t off = 0; off < a.size();) {
        const std::size_t n = std::min(step, a.size() - off);
        if (madvise(a.data() + off, n, MADV_DONTNEED) != 0) return fail("madvise(MADV_DONTNEED) of a step");
        off += n;
        ctx.paced_bytes_ = static_cast<std::int64_t>(off);
        // Short enough to allocate nothing: the caller reads stopped_by().
        if (off < a.size() && !pace_gap(ctx.pace_.gap_ns, &ctx.stopped_by_)) return Error{"stopped"};
      }
      return Ok{};
    }
    case ReleaseStrategy::kReuse: {
      volatile char* p = a.data();
      for (std::size_t off = 0; off < a.size(); off += kTouchStride) p[off] = static_cast<char>(p[off] + 1);
      return Ok{};
    }
    case ReleaseStrategy::kMembarrier:
      if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) return fail("membarrier(PRIVATE_EXPEDITED)");
      return Ok{};
    case ReleaseStrategy::kJournalUnmap:
    case ReleaseStrategy::kJournalRecycle:
    case ReleaseStrategy::kGlibcMalloc:
    case ReleaseStrategy::kJemalloc:
    case ReleaseStrategy::kTcmalloc:
    case ReleaseStrategy::kMimalloc:
    case ReleaseStrategy::kProbe:
      return Error{std::string(strategy_name(s)) + " releases no chunk A"};
  }
  return Ok{};
}

Status rearm_chunk(ReleaseStrategy s, Chunk& a, std::size_t size, PageMode mode, int node) {
  try {
    switch (strategy_info(s).rearm) {
      case Rearm::kReallocate:
        a = Chunk(size, mode, allocator_for(s), node);
        a.prefault();
        return Ok{};
      case Rearm::kRefault:
        a.prefault();
        return Ok{};
      case Rearm::kRestoreProtection:
        if (mprotect(a.data(), a.size(), PROT_READ | PROT_WRITE) != 0)
          return Error{std::string("mprotect(PROT_READ|PROT_WRITE): ") + std::strerror(errno)};
        return Ok{};
      case Rearm::kNothing:
        return Ok{};
    }
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
  return Ok{};
}

}  // namespace shootdown::exp
