// SPDX-License-Identifier: Apache-2.0
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
// v7rt-munmap under TCG: a victim on an isolated nohz_full vCPU
// ran 30x faster than those on housekeeping vCPUs and filled a 0.5 s ring of
// 3.4 M samples, then a 2 s ring of 2.0 M, while CPU 0's remote tick was
// seconds late; the run ended early). The whole 51 s span of that run was
// 4.7 M samples on the fastest victim.
constexpr std::int64_t kRingMinNs = 2'000'000'000;
constexpr double kRingMinSamples = 8.0 * 1024 * 1024;
constexpr std::int64_t kRingMaxNs = 5'000'000'000;
// A fold slice (one interval of the timeline where samples were summarized)
// spans about this much, doubling as the slice table fills.
constexpr std::int64_t kSliceNs = 1'000'000'000;
// Raw samples kept around an IPI the run marked (its stall and the
// neighbours that give its baseline): the block holding it stays raw.
constexpr std::int64_t kMarkKeepNs = 10'000'000;
}  // namespace

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
  if (!pin()) return false;
  if (!prepare_chunk_b()) return false;
  fill_tlb_from_a();
  const double fastest_ns = warm_up();
  const std::size_t store_max = store_limit(fastest_ns);
  return prepare_store(store_max) && prepare_ring(fastest_ns, store_max);
}

// Pinned to its CPU, and SCHED_FIFO with --rt.
bool Victim::pin() {
  std::string why;
  if (const Status pinned = sys::pin_this_thread(cfg_.cpu); !pinned) {
    out_.error = "cannot pin victim to CPU " + std::to_string(cfg_.cpu) + ": " + pinned.error();
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
  return true;
}

// Chunk B (its own or the borrowed one) pre-faulted and mlocked; false when
// it cannot be mapped or the run aborted the prefault.
bool Victim::prepare_chunk_b() {
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
  if (cfg_.mlock)
    if (const Status locked = bp_->lock(); !locked)
      out_.warnings.push_back("mlock of chunk B failed (" + locked.error() + "): page faults may disturb the samples");
  return true;
}

// Fill the TLB with A's translations, as the article's victim does.
void Victim::fill_tlb_from_a() {
  if (cfg_.chunk_a && cfg_.chunk_a->mapped()) {
    volatile char* a = cfg_.chunk_a->data();
    for (std::size_t off = 0; off < cfg_.chunk_a->size(); off += kTouchStride) a[off] = a[off];
  }
}

// Warm-up pass over B (untimed samples) to size the ring: the fastest batch,
// in ns. A mean is inflated by any preemption during the pass and would
// leave the ring too small.
double Victim::warm_up() {
  const std::size_t per_batch = cfg_.batch / kTouchStride;
  const std::size_t batches = cfg_.chunk_size / cfg_.batch;
  volatile char* b = bp_->data();
  std::uint64_t fastest = UINT64_MAX;
  std::uint64_t prev = sys::rdtsc_fenced();
  for (std::size_t i = 0; i < batches; ++i) {
    for (std::size_t k = 0; k < per_batch; ++k) b[i * cfg_.batch + k * kTouchStride] = 2;
    const std::uint64_t now = sys::rdtsc_fenced();
    fastest = std::min(fastest, now - prev);
    prev = now;
  }
  return std::max(1.0, static_cast<double>(fastest) * cfg_.ns_per_tick);
}

// The store holds the whole run, up to its limit (memory, not time): the
// samples it may hold.
std::size_t Victim::store_limit(double fastest_ns) {
  std::size_t store_max = cfg_.max_ring_samples;
  if (const std::size_t budget = cfg_.ring_budget_bytes / sizeof(std::uint32_t);
      cfg_.ring_budget_bytes > 0 && budget < store_max) {
    store_max = std::max<std::size_t>(budget, 4096);
    // A store that folds (core/compaction) says after the run what it
    // summarized; one that cannot says now that the run may end early.
    const double planned_samples = static_cast<double>(cfg_.planned_ns) / fastest_ns;
    const bool folds = cfg_.compact && store_max >= 2 * SampleStore::kBlockSamples;
    if (!folds && static_cast<double>(store_max) < planned_samples)
      out_.warnings.push_back(fmt::format(
          "sample store capped to {} ({} of samples at the fastest batch rate instead of the planned {}): {}; a longer "
          "run ends early when it is full",
          format_size(static_cast<std::int64_t>(store_max * sizeof(std::uint32_t))),
          format_duration_ns(static_cast<std::int64_t>(static_cast<double>(store_max) * fastest_ns)),
          format_duration_ns(cfg_.planned_ns), cfg_.ring_budget_why));
  }
  return store_max;
}

// The store and every container the drainer uses, reserved now: the
// drainer never allocates or frees.
bool Victim::prepare_store(std::size_t store_max) {
  try {
    store_ = SampleStore(store_max, cfg_.numa_node, cfg_.compact);
    const std::size_t slots = store_.slots();
    slot_from_.assign(slots, 0);
    slot_to_.assign(slots, 0);
    if (store_.recycling()) {
      // Raw around each release: cfg_.keep_ns, but at most a quarter of the
      // store at the rate the held blocks measured (choose()).
      keep_ticks_ = static_cast<std::uint64_t>(static_cast<double>(cfg_.keep_ns) / cfg_.ns_per_tick);
      slice_ticks_ = static_cast<std::uint64_t>(static_cast<double>(kSliceNs) / cfg_.ns_per_tick);
      blocks_scratch_.reserve(slots);
      windows_scratch_.reserve(Control::kWindows);
      marks_scratch_.reserve(Control::kMarks);
      mark_margin_ticks_ = static_cast<std::uint64_t>(static_cast<double>(kMarkKeepNs) / cfg_.ns_per_tick);
      fold_hist_.emplace(make_latency_histogram());
      // The slices' sparse counts: an eighth of the store's bytes, at least
      // 4 MiB, plus one whole histogram so the last slice always fits.
      const std::size_t entries = std::max<std::size_t>(store_max * sizeof(std::uint32_t) / 8, 4u << 20) /
                                  sizeof(std::pair<std::int32_t, std::int64_t>);
      counts_.reserve(entries + static_cast<std::size_t>(fold_hist_->counts_length()));
      slices_.reserve(entries / 16 + 1);
    }
    spans_.reserve(slots);
  } catch (const std::exception& e) {
    out_.error = e.what();
    return false;
  }
  return true;
}

// The ring bridges the drainer's pauses (it wakes every 2 ms, but can be
// starved): the planned span +25 %, at least 2 s and at most 5 s, at the
// fastest warm-up rate, +64k, and never under kRingMinSamples; the store's
// budget caps both. Under emulation (the lab's TCG) a victim later ran up
// to 30x faster than its warm-up, so the margin is wide on purpose.
bool Victim::prepare_ring(double fastest_ns, std::size_t store_max) {
  const double span_ns = std::clamp(static_cast<double>(cfg_.planned_ns) * 1.25, static_cast<double>(kRingMinNs),
                                    static_cast<double>(kRingMaxNs));
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
  if (cfg_.mlock) (void)rp_->lock();  // a failure leaves the pre-faulted ring unlocked
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
  constexpr std::size_t B = SampleStore::kBlockSamples;
  const std::size_t pub = published_.load(std::memory_order_acquire);
  std::size_t c = consumed_.load(std::memory_order_relaxed);
  if (c == pub) return;
  const auto* ring = reinterpret_cast<const std::uint32_t*>(rp_->data());
  // Entries up to the capacity are written before the victim publishes their sample.
  const std::size_t of_known = overflow_.size();
  while (c < pub) {
    const std::size_t pos = c % ring_cap_;
    const bool new_block = (store_.size() & (B - 1)) == 0;
    const std::size_t len = std::min({pub - c, ring_cap_ - pos, B - (store_.size() & (B - 1))});
    const std::size_t got = store_.append(ring + pos, len);
    if (got == 0) {
      if (make_room()) continue;
      store_full_.store(true, std::memory_order_release);
      break;
    }
    if (new_block) {  // a block begins: the one before it ends here
      if (cur_slot_ != SIZE_MAX) slot_to_[cur_slot_] = ticks_;
      cur_slot_ = store_.held_blocks().back().slot;
      slot_from_[cur_slot_] = ticks_;
    }
    for (std::size_t j = 0; j < got; ++j) {
      const std::uint32_t d = ring[pos + j];
      if (d != UINT32_MAX) {
        ticks_ += d;
      } else {  // its length is in the overflow list, written before the victim published it
        ticks_ +=
            of_cursor_ < of_known && overflow_[of_cursor_].index == c + j ? overflow_[of_cursor_].ticks : UINT32_MAX;
        ++of_cursor_;
      }
    }
    slot_to_[cur_slot_] = ticks_;
    c += got;
  }
  consumed_.store(c, std::memory_order_release);
  publish_spans();
}

std::uint64_t Victim::overflow_ticks(std::size_t i) const noexcept {
  const std::size_t known = std::min(overflow_.size(), of_cursor_);  // the ones the drainer has passed
  const auto end = overflow_.begin() + static_cast<std::ptrdiff_t>(known);
  const auto it =
      std::lower_bound(overflow_.begin(), end, i, [](const Overflow& o, std::size_t x) { return o.index < x; });
  return it != end && it->index == i ? it->ticks : UINT32_MAX;
}

bool Victim::make_room() noexcept {
  if (!store_.can_drop() || !fold_hist_) return false;
  const auto k = choose(false);
  if (!k) return false;
  fold_block(*k);
  return true;
}

std::optional<std::size_t> Victim::choose(bool final) noexcept {
  blocks_scratch_.clear();
  for (const auto& h : store_.held_blocks()) blocks_scratch_.push_back(block_ticks(h));
  // The raw margin: keep_ticks_, capped at a quarter of the store at the
  // mean rate of the full blocks held (all but the newest), so the start of
  // an open window (its margin both sides) takes about half of the store.
  // Measured, not the warm-up's rate: a warm-up ran up to 3x slower than the
  // steady state here (pre-faulting), and a margin from it held 6 of 8
  // blocks for the first baseline, leaving a --repeat no room for windows.
  std::uint64_t full_ticks = 0;
  for (std::size_t i = 0; i + 1 < blocks_scratch_.size(); ++i)
    full_ticks += blocks_scratch_[i].to - blocks_scratch_[i].from;
  const std::size_t full = blocks_scratch_.size() > 1 ? blocks_scratch_.size() - 1 : 0;
  const std::uint64_t quarter = full ? full_ticks / full * std::max<std::size_t>(1, store_.slots() / 4) : keep_ticks_;
  KeepRules rules;
  rules.now = ticks_;
  rules.margin = std::min(keep_ticks_, quarter);
  rules.final = final;
  rules.window_margin = std::min(rules.margin, mark_margin_ticks_ * 5);  // 50 ms: a --repeat keeps many windows raw
  read_windows(rules);
  return choose_fold(blocks_scratch_, rules);
}

void Victim::read_windows(KeepRules& rules) noexcept {
  const std::uint64_t t0 = out_.start_tsc;
  auto rel = [t0](std::uint64_t tsc) { return tsc > t0 ? tsc - t0 : 0; };
  // Read after the samples drained: an open_from of 0 here means no release
  // began before the newest of them ended (Control::open_window).
  if (const std::uint64_t open = ctl_.open_from.load(std::memory_order_seq_cst); open != 0) rules.open = rel(open);
  if (const std::uint64_t first = ctl_.first_from.load(std::memory_order_relaxed); first != 0) rules.first = rel(first);
  const std::size_t n = ctl_.windows_n.load(std::memory_order_acquire);
  windows_scratch_.clear();
  for (std::size_t i = n > Control::kWindows ? n - Control::kWindows : 0; i < n; ++i) {
    const std::size_t at = 2 * (i % Control::kWindows);
    windows_scratch_.push_back(TickRange{rel(ctl_.windows[at].load(std::memory_order_relaxed)),
                                         rel(ctl_.windows[at + 1].load(std::memory_order_relaxed))});
  }
  rules.windows = windows_scratch_;
  const std::size_t m = ctl_.marks_n.load(std::memory_order_acquire);
  marks_scratch_.clear();
  for (std::size_t i = m > Control::kMarks ? m - Control::kMarks : 0; i < m; ++i)
    if (ctl_.mark_cpu[i % Control::kMarks].load(std::memory_order_relaxed) == cfg_.cpu)
      marks_scratch_.push_back(rel(ctl_.marks[i % Control::kMarks].load(std::memory_order_relaxed)));
  rules.marks = marks_scratch_;
  rules.mark_margin = mark_margin_ticks_;
}

void Victim::fold_block(std::size_t k) noexcept {
  constexpr std::size_t B = SampleStore::kBlockSamples;
  const SampleStore::Held h = store_.held_blocks()[k];
  const TickRange span = block_ticks(h);
  // A slice is consecutive blocks over at most slice_ticks_; when the table
  // is full the open slice takes whatever comes (coarse_).
  if (slice_open_ && (h.block != slice_last_block_ + 1 || span.to - slice_.from_tick > slice_ticks_)) {
    if (!close_slice(false)) coarse_ = coarse_ || h.block != slice_last_block_ + 1;
  }
  if (!slice_open_) {
    slice_ = FoldSlice{};
    slice_.first_sample = h.block << SampleStore::kBlockShift;
    slice_.from_tick = span.from;
    fold_hist_->reset();
    slice_open_ = true;
  }
  const std::uint32_t* blk = store_.data(h);
  const std::size_t base = h.block << SampleStore::kBlockShift;
  for (std::size_t j = 0; j < B; ++j) {
    const std::uint64_t d = blk[j] != UINT32_MAX ? blk[j] : overflow_ticks(base + j);
    fold_hist_->record(std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(d) * cfg_.ns_per_tick)));
  }
  slice_.samples += B;
  slice_.from_tick = std::min(slice_.from_tick, span.from);
  slice_.to_tick = std::max(slice_.to_tick, span.to);
  slice_last_block_ = h.block;
  folded_samples_ += B;
  store_.drop_block(k);
}

bool Victim::close_slice(bool last) noexcept {
  if (!slice_open_) return true;
  const hdr::Histogram& hist = *fold_hist_;
  std::size_t nz = 0;
  for (std::int32_t i = 0; i < hist.counts_length(); ++i) nz += hist.count_at_index(i) != 0;
  // The last counts_length() entries are the final slice's: it always fits.
  const std::size_t room = counts_.capacity() - counts_.size();
  const std::size_t reserve = last ? 0 : static_cast<std::size_t>(hist.counts_length());
  if (slices_.size() == slices_.capacity() || nz + reserve > room) return false;
  slice_.counts_at = counts_.size();
  for (std::int32_t i = 0; i < hist.counts_length(); ++i)
    if (const std::int64_t n = hist.count_at_index(i); n != 0) counts_.emplace_back(i, n);
  slice_.counts_n = nz;
  slices_.push_back(slice_);
  slice_open_ = false;
  // As the table fills, slices get longer: each halving of the room left
  // doubles them, so the table covers ever longer runs.
  const double used =
      static_cast<double>(counts_.size()) / static_cast<double>(counts_.capacity() - hist.counts_length());
  if (used > 1.0 - std::ldexp(1.0, -(slice_doublings_ + 1))) {
    slice_ticks_ *= 2;
    ++slice_doublings_;
  }
  return true;
}

void Victim::finish_folds() noexcept {
  // A run that folded keeps raw only what core/compaction keeps (the
  // windows around releases): the blocks that were still raw because the
  // store had room fold now, so what is analysed raw does not depend on
  // when the store filled (and costs post-processing in proportion to the
  // releases, not the store).
  if (folded_samples_ > 0 && fold_hist_) {
    while (store_.can_drop()) {
      const auto k = choose(true);
      if (!k) break;
      fold_block(*k);
    }
  }
  (void)close_slice(true);
}

void Victim::publish_spans() {
  const std::uint64_t t0 = out_.start_tsc;
  std::lock_guard<std::mutex> lk(spans_mu_);
  spans_.clear();
  for (const auto& h : store_.held_blocks()) {
    const TickRange r = block_ticks(h);
    spans_.push_back(TickRange{t0 + r.from, t0 + r.to});
  }
  spans_now_ = t0 + ticks_;
}

std::uint64_t Victim::held_spans(std::vector<TickRange>& out) const {
  std::lock_guard<std::mutex> lk(spans_mu_);
  out.insert(out.end(), spans_.begin(), spans_.end());
  return spans_now_;
}

std::string Victim::full_reason() const {
  if (store_.full()) return "sample store full: " + store_.why();
  if (ring_full_.load(std::memory_order_acquire))
    return fmt::format("sample ring full: the drainer fell behind by more than the ring's {} samples", ring_cap_);
  return {};
}

}  // namespace shootdown::exp
