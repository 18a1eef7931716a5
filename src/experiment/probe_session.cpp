// SPDX-License-Identifier: Apache-2.0
#include "experiment/probe_session.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/analysis.hpp"
#include "core/compaction.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "experiment/event_folding.hpp"
#include "sys/child.hpp"

namespace shootdown::exp {

ProbeShm::ProbeShm(std::uint32_t ncpus, std::uint32_t nslots, std::uint64_t capacity)
    : len_(sd_probe_layout(nullptr, ncpus, nslots, capacity)) {
  if (len_ == 0) throw RuntimeError(fmt::format("probe region for {} CPUs and {} slots: too large", ncpus, nslots));
  // Anonymous (no name anyone can open), mode 0600, size sealed after sizing:
  // the library refuses any fd that is not exactly this (probe.c).
  fd_ = ::memfd_create("shootdown-probe", MFD_ALLOW_SEALING);
  if (fd_ < 0) throw RuntimeError(fmt::format("memfd_create: {}", std::strerror(errno)));
  if (::fchmod(fd_, 0600) != 0 || ::ftruncate(fd_, static_cast<off_t>(len_)) != 0 ||
      ::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int err = errno;
    ::close(fd_);
    throw RuntimeError(fmt::format("sizing the probe ring: {}", std::strerror(err)));
  }
  void* base = ::mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::close(fd_);
    throw RuntimeError(fmt::format("mapping the probe ring: {}", std::strerror(err)));
  }
  shm_ = static_cast<sd_probe_shm*>(base);
  shm_->ncpus = ncpus;
  shm_->nslots = nslots;
  shm_->capacity = capacity;
  sd_probe_layout(shm_, ncpus, nslots, capacity);
}

ProbeShm::~ProbeShm() {
  if (shm_) ::munmap(shm_, len_);
  if (fd_ >= 0) ::close(fd_);
}

ProbeSession::ProbeSession(ProbeConfig cfg)
    : cfg_(std::move(cfg)),
      nslots_(static_cast<int>(cfg_.cpus.size()) + SD_PROBE_SPARE_SLOTS),
      shm_(static_cast<std::uint32_t>(cfg_.cpus.size()), static_cast<std::uint32_t>(nslots_), cfg_.capacity),
      series_(static_cast<std::size_t>(nslots_)),
      exited_(static_cast<std::size_t>(nslots_), false) {
  sd_probe_shm* shm = shm_.get();
  shm->magic = SD_PROBE_MAGIC;
  shm->version = SD_PROBE_VERSION;
  shm->batch_pages = cfg_.batch_pages;
  shm->arena_bytes = cfg_.arena_bytes;
  shm->sched_fifo = cfg_.sched_fifo ? 1u : 0u;
  for (std::size_t k = 0; k < cfg_.cpus.size(); ++k) {
    sd_probe_cpus(shm)[k] = cfg_.cpus[k];
    sd_probe_holders(shm)[k] = -1;
  }
  for (int k = 0; k < nslots_; ++k) {
    shm_.slot(k).successor = -1;
    shm_.slot(k).cpu = -1;
  }
}

void ProbeSession::attach(const sys::TscClock& pre, sys::Tracer* tracer, std::int64_t start_ns) {
  pre_ = pre;
  tracer_ = tracer;
  events_folded_until_ = start_ns;
}

void ProbeSession::drain() {
  sd_probe_shm* shm = shm_.get();
  for (int k = 0; k < nslots_; ++k) {
    sd_probe_slot& sl = shm_.slot(k);
    if (__atomic_load_n(&sl.pid, __ATOMIC_ACQUIRE) == 0) continue;
    const std::uint64_t* ring = sd_probe_ring(shm, k);
    const std::uint64_t count = __atomic_load_n(&sl.count, __ATOMIC_ACQUIRE);
    const std::uint64_t c = sl.consumed;
    if (c < count) append(k, ring, c, count);
    __atomic_store_n(&sl.consumed, count, __ATOMIC_RELEASE);
  }
  bound();
}

// Ring entries [from, to) of slot k (batch-end TSC) into its store as ticks
// per batch; a full store folds its oldest block to make room.
void ProbeSession::append(int k, const std::uint64_t* ring, std::uint64_t from, std::uint64_t to) {
  Series& se = series_[k];
  if (!se.store) {
    se.store.emplace(cfg_.max_samples, -1, true);
    se.first_tsc = se.last_tsc = shm_.slot(k).start_tsc;
  }
  std::vector<std::uint32_t> ticks;
  ticks.reserve(static_cast<std::size_t>(to - from));
  for (std::uint64_t c = from; c < to; ++c) {
    const std::uint64_t t = ring[c % cfg_.capacity];
    const std::uint64_t d = t - se.last_tsc;
    if (d >= UINT32_MAX) se.overflow.emplace_back(se.store->size() + ticks.size(), d);
    ticks.push_back(d >= UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(d));
    se.last_tsc = t;
  }
  for (std::size_t done = 0; done < ticks.size();) {
    const std::size_t got = se.store->append(ticks.data() + done, ticks.size() - done);
    done += got;
    if (got == 0) {
      if (!se.store->can_drop() || !fold(k)) break;  // cannot happen: a recycling store of two blocks at least
    }
  }
}

std::vector<std::uint64_t> ProbeSession::Series::held_ends(std::size_t most) const {
  std::vector<std::uint64_t> ends;
  if (!store) return ends;
  ends.reserve(std::min(most, store->held()));
  std::uint64_t t = first_tsc;
  auto of =
      std::lower_bound(overflow.begin(), overflow.end(), std::pair<std::size_t, std::uint64_t>{store->first(), 0});
  for (const SampleStore::Held& h : store->held_blocks()) {
    const std::uint32_t* d = store->data(h);
    const std::size_t base = h.block << SampleStore::kBlockShift;
    const std::size_t n = std::min(SampleStore::kBlockSamples, store->size() - base);
    for (std::size_t j = 0; j < n && ends.size() < most; ++j) {
      std::uint64_t ticks = d[j];
      if (ticks == UINT32_MAX) {
        while (of != overflow.end() && of->first < base + j) ++of;
        if (of != overflow.end() && of->first == base + j) ticks = of->second;
      }
      t += ticks;
      ends.push_back(t);
    }
  }
  return ends;
}

// Past the budget: the largest slot folds its oldest block, then
// the kernel events no raw sample needs any more are counted, not kept.
void ProbeSession::bound() {
  for (;;) {
    std::size_t held = 0;
    int largest = -1;
    for (int k = 0; k < nslots_; ++k) {
      held += series_[k].held() + series_[k].kept_index.size();
      if (largest < 0 || series_[k].held() > series_[largest].held()) largest = k;
    }
    if (held <= cfg_.max_samples || largest < 0 || !series_[largest].store || !series_[largest].store->can_drop() ||
        !fold(largest))
      break;
  }
  fold_unheld_events();
}

bool ProbeSession::fold(int k) {
  Series& se = series_[k];
  SampleStore& store = *se.store;
  // The block to fold: core/compaction's choice, with no release windows to
  // keep (a probe has none) and every sample held raw so far.
  std::vector<TickRange> blocks;
  for (const SampleStore::Held& h : store.held_blocks())
    blocks.push_back(
        {h.block << SampleStore::kBlockShift, std::min(store.size(), (h.block + 1) << SampleStore::kBlockShift)});
  KeepRules rules;
  rules.now = store.size();
  const std::optional<std::size_t> pick = choose_fold(blocks, rules);
  if (!pick || *pick != 0) return false;  // the oldest block, or none: samples stay contiguous
  const std::size_t n = SampleStore::kBlockSamples;
  const std::vector<std::uint64_t> tsc = se.held_ends(n);
  const int cpu = shm_.slot(k).cpu;
  const std::int64_t start = pre_.to_mono(se.first_tsc);
  std::vector<std::int64_t> end(n);
  for (std::size_t i = 0; i < n; ++i) end[i] = pre_.to_mono(tsc[i]);
  std::vector<std::int64_t> ipis;
  if (tracer_) tracer_->event_times(cpu, start - cfg_.keep_ns, end.back() + cfg_.keep_ns, is_ipi_arrival, ipis);
  std::vector<bool> keep;
  mark_near(start, end, ipis, cfg_.keep_ns, keep);
  se.ipis += static_cast<std::size_t>(
      std::count_if(ipis.begin(), ipis.end(), [&](std::int64_t t) { return t >= start && t < end.back(); }));
  hdr::Histogram h = make_latency_histogram();
  const std::size_t first = store.first();
  std::uint64_t from = se.first_tsc;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t to = tsc[i];
    // Raw windows take at most half the budget; beyond it they fold too.
    if (keep[i] && se.kept_index.size() < cfg_.max_samples / (2 * static_cast<std::size_t>(nslots_))) {
      se.kept_index.push_back(first + i);
      se.kept_start.push_back(from);
      se.kept_end.push_back(to);
    } else {
      if (keep[i]) ++se.ipis_dropped;
      h.record(std::max<std::int64_t>(1, end[i] - (i ? end[i - 1] : start)));
    }
    from = to;
  }
  Interval iv;
  iv.victim_cpu = cpu;
  iv.start_ns = start;
  iv.end_ns = end.back();
  iv.phase = Phase::kBaseline;
  iv.folded = true;
  iv.set_histogram(h);
  se.folded_samples += static_cast<std::size_t>(h.total_count());
  se.folded.push_back(std::move(iv));
  se.first_tsc = tsc[n - 1];
  store.drop_front_block();
  std::erase_if(se.overflow, [&](const auto& o) { return o.first < store.first(); });
  return true;
}

// Once a probe folded samples, the kernel events farther than the margin
// from every raw sample (each probe's raw tail and the windows kept around
// IPIs) are counted and dropped, up to the newest sample of the probes
// still running.
void ProbeSession::fold_unheld_events() {
  if (!tracer_) return;
  bool folded_any = false;
  std::int64_t hi = INT64_MAX, newest = INT64_MIN;
  std::vector<std::pair<std::int64_t, std::int64_t>> kept, gaps;
  for (int k = 0; k < nslots_; ++k) {
    const Series& se = series_[k];
    if (se.samples() == 0) continue;
    folded_any = folded_any || !se.folded.empty();
    const std::int64_t a = pre_.to_mono(se.first_tsc), b = pre_.to_mono(se.last_tsc);
    kept.emplace_back(a, b);
    newest = std::max(newest, b);
    const auto st = __atomic_load_n(&shm_.slot(k).state, __ATOMIC_ACQUIRE);
    if (st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING) hi = std::min(hi, b);
    for (std::size_t i = 0; i < se.kept_index.size(); ++i) {
      const std::int64_t x = pre_.to_mono(se.kept_start[i]), y = pre_.to_mono(se.kept_end[i]);
      if (y + cfg_.event_margin_ns > events_folded_until_) kept.emplace_back(x, y);
    }
  }
  if (!folded_any) return;  // a probe that fits keeps every event
  hi = (hi == INT64_MAX ? newest : hi) - cfg_.event_margin_ns;
  if (hi <= events_folded_until_) return;
  fold_gaps(kept, events_folded_until_, hi, cfg_.event_margin_ns, gaps);
  fold_ranges(*tracer_, gaps, folded_events_);
  events_folded_until_ = hi;
}

int ProbeSession::running() const {
  int n = 0;
  for (int k = 0; k < nslots_; ++k) {
    const auto st = __atomic_load_n(&shm_.slot(k).state, __ATOMIC_ACQUIRE);
    n += st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING;
  }
  return n;
}

// Probe threads that vanished without saying so (the process was killed,
// called _exit, or exec'd into a program that ignores LD_PRELOAD) are
// marked gone, and the CPU they held is free for the next process.
void ProbeSession::sweep() {
  sd_probe_shm* shm = shm_.get();
  for (int k = 0; k < nslots_; ++k) {
    sd_probe_slot& sl = shm_.slot(k);
    const int pid = __atomic_load_n(&sl.pid, __ATOMIC_ACQUIRE);
    if (pid == 0) continue;
    auto st = __atomic_load_n(&sl.state, __ATOMIC_ACQUIRE);
    if (st == SD_PROBE_DONE && !stopping_ && !exited_[k] &&
        __atomic_load_n(&sl.stop, __ATOMIC_ACQUIRE) != SD_PROBE_STOP_HANDOVER)
      exited_[k] = true;  // it stopped before the tool asked: the process exited
    if (st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING) {
      const int tid = __atomic_load_n(&sl.tid, __ATOMIC_ACQUIRE);
      const bool gone = tid > 0 ? !sys::thread_alive(pid, tid) : !sys::process_alive(pid);
      if (gone) {
        exited_[k] = !sys::process_alive(pid);  // else: alive, exec'd into a program without the probe
        std::uint32_t expect = st;
        __atomic_compare_exchange_n(&sl.state, &expect, std::uint32_t{SD_PROBE_GONE}, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        st = __atomic_load_n(&sl.state, __ATOMIC_ACQUIRE);
      }
    }
    if (st == SD_PROBE_RUNNING || st == SD_PROBE_PREPARING || st == SD_PROBE_INIT) continue;
    for (std::uint32_t c = 0; c < shm->ncpus; ++c) {
      std::int32_t h = k;
      __atomic_compare_exchange_n(&sd_probe_holders(shm)[c], &h, std::int32_t{-1}, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE);
    }
  }
}

void ProbeSession::stop_all() {
  stopping_ = true;
  for (int k = 0; k < nslots_; ++k) {
    sd_probe_slot& sl = shm_.slot(k);
    std::uint32_t none = SD_PROBE_STOP_NONE;
    __atomic_compare_exchange_n(&sl.stop, &none, std::uint32_t{SD_PROBE_STOP_TOOL}, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
  }
  for (int i = 0; i < 100 && running() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    sweep();
  }
  drain();
}

std::vector<int> ProbeSession::claim_order() const {
  std::vector<int> order;
  for (int k = 0; k < nslots_; ++k)
    if (shm_.slot(k).pid != 0) order.push_back(k);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return shm_.slot(x).seq < shm_.slot(y).seq; });
  return order;
}

ProbeFate ProbeSession::fate(int k) const {
  const sd_probe_slot& sl = shm_.slot(k);
  switch (sl.state) {
    case SD_PROBE_EXECED:
      return ProbeFate::kExeced;
    case SD_PROBE_OVERRUN:
      return ProbeFate::kOverrun;
    case SD_PROBE_FAILED:
      return ProbeFate::kFailed;
    case SD_PROBE_NO_CPU:
      return ProbeFate::kNoCpu;
    case SD_PROBE_GONE:
      return exited_[k] ? ProbeFate::kExited : ProbeFate::kGone;
    case SD_PROBE_DONE:
      if (sl.stop == SD_PROBE_STOP_HANDOVER) return ProbeFate::kHandedOver;
      return exited_[k] ? ProbeFate::kExited : ProbeFate::kUntilEnd;
    default:
      return ProbeFate::kGone;
  }
}

ProbeProcess ProbeSession::process(int k, const sys::TscClock& clock) const {
  const sd_probe_slot& sl = shm_.slot(k);
  ProbeProcess p;
  p.pid = sl.pid;
  p.ppid = sl.ppid;
  p.comm = std::string(sl.comm, strnlen(sl.comm, sizeof sl.comm));
  p.image = static_cast<int>(sl.seq);
  p.cpu = sl.cpu;
  const Series& se = series_[k];
  p.samples = static_cast<std::int64_t>(se.samples());
  if (se.held() > 0) p.probed_ns = clock.to_mono(se.last_tsc) - clock.to_mono(sl.start_tsc);
  if (sl.successor >= 0 && sl.successor < nslots_) {
    const sd_probe_slot& next = shm_.slot(sl.successor);
    p.successor_pid = next.pid;
    p.successor_comm = std::string(next.comm, strnlen(next.comm, sizeof next.comm));
  }
  p.fate = fate(k);
  if (p.fate == ProbeFate::kFailed) p.error = std::string(sl.error, strnlen(sl.error, sizeof sl.error));
  return p;
}

std::string ProbeSession::starved(const sys::TscClock& clock) const {
  // A probe that ran for a while and completed no batch was kept off its
  // CPU (another real-time thread spinning there, CPU isolation, ...).
  std::string out;
  for (int k : claim_order()) {
    const sd_probe_slot& sl = shm_.slot(k);
    const std::int64_t ran = clock.to_mono(sl.end_tsc) - clock.to_mono(sl.start_tsc);
    if (sl.cpu >= 0 && sl.start_tsc != 0 && sl.end_tsc > sl.start_tsc && ran > 10'000'000)
      out = fmt::format(
          "; the probe of pid {} ran {} on cpu{} without completing a batch: is a real-time "
          "thread spinning there (ps -eLo cls,rtprio,psr,comm)?",
          sl.pid, format_duration_ns(ran), sl.cpu);
  }
  return out;
}

// A probe past its --memory-limit: the raw windows kept around IPIs, then
// the raw tail (partial: index[] numbers the samples).
VictimSamples ProbeSession::victim_samples(int k, const sys::TscClock& clock) {
  Series& se = series_[k];
  const sd_probe_slot& sl = shm_.slot(k);
  VictimSamples v;
  v.cpu = sl.cpu;
  v.tid = sl.tid;
  v.pages_per_batch = static_cast<int>(cfg_.batch_pages);
  const bool partial = !se.folded.empty();
  v.start_ns = clock.to_mono(partial && !se.kept_index.empty() ? se.kept_start.front() : se.first_tsc);
  const std::vector<std::uint64_t> tail = se.held_ends();
  const std::size_t n = se.kept_index.size() + tail.size();
  v.end_ns.reserve(n);
  v.lat_ns.reserve(n);
  if (partial) v.index.reserve(n);
  for (std::size_t j = 0; j < se.kept_index.size(); ++j) {
    const std::int64_t e = clock.to_mono(se.kept_end[j]);
    v.end_ns.push_back(e);
    v.lat_ns.push_back(e - clock.to_mono(se.kept_start[j]));
    v.index.push_back(static_cast<std::int64_t>(se.kept_index[j]));
  }
  std::int64_t prev = clock.to_mono(se.first_tsc);
  const std::size_t tail_first = se.store ? se.store->first() : 0;
  for (std::size_t j = 0; j < tail.size(); ++j) {
    const std::int64_t e = clock.to_mono(tail[j]);
    v.end_ns.push_back(e);
    v.lat_ns.push_back(e - prev);
    if (partial) v.index.push_back(static_cast<std::int64_t>(tail_first + j));
    prev = e;
  }
  return v;
}

void ProbeSession::fill_result(int k, const sys::TscClock& clock, Result& r) {
  Series& se = series_[k];
  VictimSamples v = victim_samples(k, clock);
  // The raw tail's end, before it is released: the folded warning says how
  // much of the end stayed raw.
  const std::int64_t tail_from = clock.to_mono(se.first_tsc);
  se.store.reset();
  se.overflow = {};
  r.measure_start_ns = clock.to_mono(shm_.slot(k).start_tsc);
  r.measure_end_ns = v.end_ns.back();
  r.victims.push_back(std::move(v));
  build_intervals(r);
  if (se.folded.empty()) return;
  hdr::Histogram all = make_latency_histogram();
  for (const Interval& iv : se.folded) iv.add_to(all);
  const Summary sum = summarize(all);
  r.warnings.push_back(fmt::format(
      "the probe's samples passed --memory-limit ({} raw samples at most): {} of them ({}) are kept only as {} "
      "interval histograms (p50 {}, max {}); raw samples are kept for the last {} and within {} of each of "
      "the {} IPIs on cpu{} in the folded stretch{}, and the attribution covers those",
      cfg_.max_samples, se.folded_samples, format_duration_ns(se.folded.back().end_ns - se.folded.front().start_ns),
      se.folded.size(), format_duration_ns(std::llround(sum.p50)), format_duration_ns(std::llround(sum.max)),
      format_duration_ns(r.measure_end_ns - tail_from), format_duration_ns(cfg_.keep_ns), se.ipis, shm_.slot(k).cpu,
      se.ipis_dropped
          ? fmt::format(" ({} samples near IPIs folded too: the raw windows took half the budget)", se.ipis_dropped)
          : ""));
  r.intervals.insert(r.intervals.begin(), se.folded.begin(), se.folded.end());
  std::stable_sort(r.intervals.begin(), r.intervals.end(),
                   [](const Interval& x, const Interval& y) { return x.start_ns < y.start_ns; });
}

}  // namespace shootdown::exp
