#include "experiment/victim.hpp"

#include "core/units.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include "core/stats.hpp"
#include "sys/affinity.hpp"
#include "sys/tsc.hpp"

namespace shootdown::exp {

namespace {
// At least 2 s and at least 8 Mi samples (32 MiB), within the store's
// budget: the drainer shares the culprit's CPU, and the lab saw that CPU
// starved far longer than the warm-up rate predicts (6.12 smt-numa8
// v7rt-munmap under TCG, 2026-12-05: a victim on an isolated nohz_full vCPU
// ran 30x faster than those on housekeeping vCPUs and filled a 0.5 s ring of
// 3.4 M samples, then a 2 s ring of 2.0 M, while CPU 0's remote tick was
// seconds late; the run ended early). The whole 51 s span of that run was
// 4.7 M samples on the fastest victim.
constexpr std::int64_t kRingMinNs = 2'000'000'000;
constexpr double kRingMinSamples = 8.0 * 1024 * 1024;
constexpr std::int64_t kRingMaxNs = 5'000'000'000;
}

Victim::Victim(VictimConfig cfg, Control& ctl) : cfg_(std::move(cfg)), ctl_(ctl) {}

void Victim::run() {
  if (!prepare()) {
    ready_.store(true, std::memory_order_release);
    return;
  }
  out_.ok = true;
  ready_.store(true, std::memory_order_release);
  // Spin barrier: no futex wake-up latency, no syscall.
  while (!ctl_.go.load(std::memory_order_acquire)) {
    if (ctl_.abort.load(std::memory_order_relaxed) || ctl_.stop.load(std::memory_order_relaxed)) return;
    __builtin_ia32_pause();
  }
  measure();
}

bool Victim::prepare() {
  std::string why;
  if (!sys::pin_this_thread(cfg_.cpu, &why)) {
    out_.error = "cannot pin victim to CPU " + std::to_string(cfg_.cpu) + ": " + why;
    return false;
  }
  out_.tid = static_cast<std::int32_t>(::gettid());
  if (cfg_.rt) {
    // A preempted thread is not running the mm, so the kernel sends it no
    // shootdown IPI (and membarrier skips it): --rt keeps the victim on CPU.
    sched_param sp{};
    sp.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
      out_.warnings.push_back(std::string("--rt: SCHED_FIFO refused (") + std::strerror(errno) +
                              "), running SCHED_OTHER");
  }
  if (cfg_.chunk_b && cfg_.chunk_b->mapped() && cfg_.chunk_b->size() == cfg_.chunk_size) {
    bp_ = cfg_.chunk_b;  // already faulted in by an earlier trial: prefault below is a cheap pass
  } else {
    try {
      b_ = Chunk(cfg_.chunk_size, cfg_.mode, Allocator::kMmap, cfg_.numa_node);
    } catch (const std::exception& e) {
      out_.error = std::string("chunk B: ") + e.what();
      return false;
    }
  }
  const auto* abort_flag = reinterpret_cast<const volatile int*>(&ctl_.abort);
  const std::int64_t t0 = sys::mono_now_ns();
  if (!bp_->prefault(abort_flag)) return false;
  out_.prefault_ns = sys::mono_now_ns() - t0;
  if (cfg_.mlock && !bp_->lock(&why))
    out_.warnings.push_back("mlock of chunk B failed (" + why + "): page faults may disturb the samples");

  // Fill the TLB with A's translations, as the article's victim does.
  if (cfg_.chunk_a && cfg_.chunk_a->mapped()) {
    volatile char* a = cfg_.chunk_a->data();
    for (std::size_t off = 0; off < cfg_.chunk_a->size(); off += kTouchStride) a[off] = a[off];
  }

  // Warm-up pass over B (untimed samples) to size the ring.
  const std::size_t per_batch = cfg_.batch / kTouchStride;
  const std::size_t batches = cfg_.chunk_size / cfg_.batch;
  // The fastest warm-up batch sizes the ring: a mean is inflated by any
  // preemption during the pass and would leave the ring too small.
  const std::int64_t w0 = sys::mono_now_ns();
  volatile char* b = bp_->data();
  std::uint64_t fastest = UINT64_MAX;
  std::uint64_t prev = sys::rdtsc_fenced();
  for (std::size_t i = 0; i < batches; ++i) {
    for (std::size_t k = 0; k < per_batch; ++k) b[i * cfg_.batch + k * kTouchStride] = 2;
    const std::uint64_t now = sys::rdtsc_fenced();
    fastest = std::min(fastest, now - prev);
    prev = now;
  }
  const std::int64_t wdur = sys::mono_now_ns() - w0;
  out_.warmup_batch_ns = std::max<std::int64_t>(1, wdur / static_cast<std::int64_t>(std::max<std::size_t>(1, batches)));
  const double fastest_ns = std::max(1.0, static_cast<double>(fastest) * cfg_.ns_per_tick);

  // The store holds the whole run, up to its limit (memory, not time).
  std::size_t store_max = cfg_.max_ring_samples;
  if (const std::size_t budget = cfg_.ring_budget_bytes / sizeof(std::uint32_t);
      cfg_.ring_budget_bytes > 0 && budget < store_max) {
    store_max = std::max<std::size_t>(budget, 4096);
    const double planned_samples = static_cast<double>(cfg_.planned_ns) / fastest_ns;
    if (static_cast<double>(store_max) < planned_samples)
      out_.warnings.push_back(fmt::format(
          "sample store capped to {} ({} of samples at the fastest batch rate instead of the planned {}): {}; {}",
          format_size(static_cast<std::int64_t>(store_max * sizeof(std::uint32_t))),
          format_duration_ns(static_cast<std::int64_t>(static_cast<double>(store_max) * fastest_ns)),
          format_duration_ns(cfg_.planned_ns), cfg_.ring_budget_why,
          cfg_.compact && store_max >= 2 * SampleStore::kBlockSamples ? "a longer baseline keeps its oldest samples only as a histogram, and a run whose releases "
                         "and after phase do not fit ends early"
                       : "a longer run ends early when it is full"));
  }
  try {
    store_ = SampleStore(store_max, cfg_.numa_node, cfg_.compact);
    if (store_.recycling()) {
      dropped_hist_.emplace(make_latency_histogram());
      // Room for the releases and the after phase at the fastest rate, kept
      // free while the baseline runs (drain() folds ahead of need), so a
      // compacted baseline does not leave the tail without space; but at
      // least one block of the baseline is always kept raw (a drop needs
      // two held, so folding stops between one and two blocks held).
      const std::size_t B = SampleStore::kBlockSamples;
      reserve_ = static_cast<std::size_t>(std::min(static_cast<double>(cfg_.tail_ns) / fastest_ns,
                                                   static_cast<double>(store_max >= 2 * B ? store_max - 2 * B : 0)));
    }
  } catch (const std::exception& e) {
    out_.error = e.what();
    return false;
  }
  // The ring bridges the drainer's pauses (it wakes every 2 ms, but can be
  // starved): the planned span +25 %, at least 2 s and at most 5 s, at the
  // fastest warm-up rate, +64k, and never under kRingMinSamples; the store's
  // budget caps both. Under emulation (the lab's TCG) a victim later ran up
  // to 30x faster than its warm-up, so the margin is wide on purpose.
  const double span_ns =
      std::clamp(static_cast<double>(cfg_.planned_ns) * 1.25, static_cast<double>(kRingMinNs), static_cast<double>(kRingMaxNs));
  ring_cap_ = static_cast<std::size_t>(
      std::min(std::max(span_ns / fastest_ns + 65536.0, kRingMinSamples), static_cast<double>(store_max)));
  // A borrowed slot large enough keeps its pages (already faulted and
  // locked: the prefault and lock below are cheap passes); a smaller one is
  // replaced by a ring of this size.
  if (cfg_.ring_slot) rp_ = cfg_.ring_slot;
  const std::size_t ring_bytes = ring_cap_ * sizeof(std::uint32_t);
  if (!rp_->mapped() || rp_->size() < ring_bytes) {
    rp_->release();  // before mapping the larger one: not both at once
    try {
      *rp_ = Chunk(ring_bytes, PageMode::k4k, Allocator::kMmap, cfg_.numa_node);
    } catch (const std::exception& e) {
      out_.error = std::string("sample ring: ") + e.what();
      return false;
    }
  }
  rp_->prefault();
  if (cfg_.mlock) rp_->lock(&why);
  overflow_.assign(4096, Overflow{0, 0});
  return true;
}

void Victim::measure() {
  const std::size_t per_batch = cfg_.batch / kTouchStride;
  const std::size_t batches = cfg_.chunk_size / cfg_.batch;
  const std::size_t stride = cfg_.batch;
  volatile char* b = bp_->data();
  BatchRecorder rec{reinterpret_cast<std::uint32_t*>(rp_->data()),
                    ring_cap_,
                    overflow_.data(),
                    overflow_.size(),
                    &published_,
                    &consumed_,
                    &ctl_.stop};
  char val = 3;

  rec.prev = sys::rdtsc_fenced();
  out_.start_tsc = rec.prev;
  for (;;) {
    for (std::size_t i = 0; i < batches; ++i) {
      volatile char* p = b + i * stride;
      for (std::size_t k = 0; k < per_batch; ++k) p[k * kTouchStride] = val;
      if (rec.end_batch()) [[unlikely]] {
        out_.samples = rec.n;
        overflow_n_ = rec.overflow_n;
        if (ctl_.stop.load(std::memory_order_relaxed)) return;
        // Full: the drainer fell behind or the store reached its limit.
        // The thread stays until the run stops: its exit (glibc frees the
        // stack with madvise) would flush the other victims' TLBs inside
        // the counted span.
        out_.ring_full = true;
        ring_full_.store(true, std::memory_order_release);
        while (!ctl_.stop.load(std::memory_order_relaxed)) __builtin_ia32_pause();
        return;
      }
    }
    ++val;
  }
}

void Victim::drain() noexcept {
  const std::size_t pub = published_.load(std::memory_order_acquire);
  std::size_t c = consumed_.load(std::memory_order_relaxed);
  const auto* ring = reinterpret_cast<const std::uint32_t*>(rp_->data());
  while (c < pub) {
    const std::size_t pos = c % ring_cap_;
    const std::size_t len = std::min(pub - c, ring_cap_ - pos);
    const std::size_t got = store_.append(ring + pos, len);
    c += got;
    // Fold ahead of need: while the baseline runs, keep reserve_ free for
    // the releases and the after phase (CI stop 24: folding only when full
    // left the tail whatever the last fold happened to leave, 0.8 Mi
    // samples of a 2-block store, and the after phase filled it).
    // Everything in the store ended before this load: while it reads true,
    // no release has begun (Control::compactable).
    if (store_.can_drop() && (got < len || store_.held() + reserve_ > store_.max_samples()) &&
        ctl_.compactable.load(std::memory_order_seq_cst)) {
      do fold_front_block();
      while (store_.can_drop() && store_.held() + reserve_ > store_.max_samples());
      continue;
    }
    if (got < len) {
      store_full_.store(true, std::memory_order_release);
      break;
    }
  }
  consumed_.store(c, std::memory_order_release);
}

void Victim::fold_front_block() noexcept {
  // Samples of >= 2^32 ticks (UINT32_MAX here) are skipped: their lengths
  // sit in overflow_, which the victim thread is still writing;
  // settle_dropped() adds them after the join.
  const std::uint32_t* blk = store_.front_block();
  for (std::size_t k = 0; k < SampleStore::kBlockSamples; ++k) {
    const std::uint32_t d = blk[k];
    if (d == UINT32_MAX) {
      ++dropped_.overflow_samples;
      continue;
    }
    dropped_.ticks += d;
    dropped_hist_->record(std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(d) * cfg_.ns_per_tick)));
  }
  dropped_.samples += SampleStore::kBlockSamples;
  dropped_ticks_pub_.store(dropped_.ticks, std::memory_order_release);
  store_.drop_front_block();
}

void Victim::settle_dropped() {
  if (dropped_.samples == 0 || dropped_settled_) return;
  dropped_settled_ = true;
  const std::size_t known = std::min(overflow_n_, overflow_.size());
  std::size_t found = 0;
  for (std::size_t j = 0; j < known && overflow_[j].index < dropped_.samples; ++j, ++found) {
    dropped_.ticks += overflow_[j].ticks;
    dropped_hist_->record(static_cast<std::int64_t>(static_cast<double>(overflow_[j].ticks) * cfg_.ns_per_tick));
  }
  // Beyond the list's capacity a length is lost: counted as 2^32 ticks.
  for (std::size_t j = found; j < dropped_.overflow_samples; ++j) {
    dropped_.ticks += UINT32_MAX;
    dropped_hist_->record(static_cast<std::int64_t>(static_cast<double>(UINT32_MAX) * cfg_.ns_per_tick));
  }
}

std::string Victim::full_reason() const {
  if (store_.full()) return "sample store full: " + store_.why();
  if (ring_full_.load(std::memory_order_acquire))
    return fmt::format("sample ring full: the drainer fell behind by more than the ring's {} samples", ring_cap_);
  return {};
}

}  // namespace shootdown::exp
