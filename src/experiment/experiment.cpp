// SPDX-License-Identifier: Apache-2.0
#include "experiment/experiment.hpp"

#include "core/errors.hpp"
#include "experiment/finish.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <csignal>
#include <limits>
#include <optional>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <span>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include "core/analysis.hpp"
#include "core/expected.hpp"
#include "core/units.hpp"
#include "experiment/arena.hpp"
#include "experiment/allocator_arm.hpp"
#include "sys/dl.hpp"
#include "experiment/culprit.hpp"
#include "experiment/journal.hpp"
#include "experiment/victim.hpp"
#include "sys/affinity.hpp"
#include "sys/interrupts.hpp"
#include "sys/meminfo.hpp"
#include "sys/signals.hpp"
#include "sys/tsc.hpp"

namespace shootdown::exp {

namespace {

constexpr std::int64_t kMs = 1000000;

// /proc/interrupts brackets the counted span. The kernel generates it CPU by
// CPU, so a reader that loses its CPU mid-read (the lab: a TCG vCPU starved
// 400 ms) stamps the read long after some columns were taken, and an
// interrupt in between is traced inside the window but not counted (6.12
// smt-numa8: CAL 3, traced 4). A read slower than kSlowReadNs is taken again,
// 3 tries in all; the last one's duration is returned.
constexpr std::int64_t kSlowReadNs = 10 * kMs;
// Events kept around the raw samples when a run past its memory limit folds
// the rest: attribution looks back at most this far (a sched_switch that
// took a victim off its CPU, an IPI entry whose exit it kept).
constexpr std::int64_t kFoldMarginNs = 1000 * kMs;
std::int64_t capture_interrupts(sys::InterruptsCapture& c) {
  for (int i = 0; i < 3; ++i)
    if (!c.capture() || c.read_ns() <= kSlowReadNs) break;
  return c.read_ns();
}
std::string slow_read_warning(const char* end, std::int64_t ns) {
  return "/proc/interrupts: the read at the " + std::string(end) + " of the span took " + std::to_string(ns / kMs) +
         " ms in each of 3 tries: interrupts within that time of the edge may be traced but not counted";
}

void sleep_ns(std::int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
  nanosleep(&ts, nullptr);
}

struct Waiter {
  const Hooks& hooks;
  const std::vector<std::unique_ptr<Victim>>& victims;
  std::int64_t start_ns;
  std::int64_t last_tick = 0;
  std::string stop_reason;
  // Kernel events follow the samples: the events of the counted span
  // farther than kFoldMarginNs from every sample the victims still hold raw
  // (the look-back of attribution: a sched_switch that took a victim off its
  // CPU, an IPI entry whose exit it kept) are counted, not kept.
  TraceSession* trace = nullptr;
  const sys::TscClock* clock = nullptr;  // the pre-run calibration
  std::int64_t fold_from_ns = 0;         // the counted span's start
  // IPIs on the victims' CPUs are marked in Control as the tracer delivers
  // them, so a full store keeps their samples raw (core/compaction).
  Control* ctl = nullptr;
  std::span<const int> victim_cpus;
  std::int64_t marked_until_ns = 0;

  bool folding = false;  // a victim's store may fold (marks matter only then)

  void mark_ipis() {
    if (!trace || !clock || !ctl || !folding) return;
    // Marking starts once a store is half full (a run that fits never
    // folds: no scan of its events); the first pass takes every event so
    // far, none of which has been folded yet.
    if (marked_until_ns == fold_from_ns) {
      bool half = false;
      for (const auto& v : victims)
        half = half || (v->samples().recycling() && v->published_samples() >= v->samples().max_samples() / 2);
      if (!half) return;
    }
    // The tracer's reader delivers events some ms late: marks stop 50 ms
    // short of now and resume there (the store keeps ~0.5 s behind the newest).
    const std::int64_t until = sys::mono_now_ns() - 50 * kMs;
    if (until <= marked_until_ns) return;
    trace->ipis(victim_cpus, marked_until_ns, until,
                [this](int cpu, std::int64_t t) { ctl->mark(cpu, clock->to_tsc(t)); });
    marked_until_ns = until;
  }
  // Reserved before the counted span: folding allocates nothing.
  std::vector<TickRange> spans;
  std::vector<std::pair<std::int64_t, std::int64_t>> kept, gaps;

  void reserve_folding() {
    std::size_t n = 2;
    for (const auto& v : victims) {
      n += v->samples().slots();
      folding = folding || v->samples().recycling();
    }
    spans.reserve(n);
    kept.reserve(n);
    gaps.reserve(n + 1);
  }
  void fold_unheld_events() {
    if (!trace || !clock || victims.empty()) return;
    spans.clear();
    std::uint64_t newest = UINT64_MAX;
    for (const auto& v : victims) newest = std::min(newest, v->held_spans(spans));
    if (newest == 0 || newest == UINT64_MAX) return;
    kept.clear();
    for (const TickRange& s : spans) kept.emplace_back(clock->to_mono(s.from), clock->to_mono(s.to));
    const std::int64_t hi = clock->to_mono(newest) - kFoldMarginNs;
    if (hi <= fold_from_ns) return;
    fold_gaps(kept, fold_from_ns, hi, kFoldMarginNs, gaps);
    if (!gaps.empty()) trace->fold(gaps);
  }

  const Victim* victim_full() const {
    for (const auto& v : victims)
      if (v->full_now()) return v.get();
    return nullptr;
  }
  void tick() {
    const std::int64_t now = sys::mono_now_ns();
    if (now - last_tick >= 100 * kMs) {
      last_tick = now;
      if (hooks.on_tick) hooks.on_tick(now - start_ns, victims.empty() ? 0 : victims.front()->published_samples());
      mark_ipis();
      fold_unheld_events();
    }
  }
  // false when interrupted (signal, samples full): stop_reason says why.
  bool until(std::int64_t deadline) {
    for (;;) {
      if (int sig = sys::StopSignals::pending()) {
        stop_reason = sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM";
        return false;
      }
      if (const Victim* v = victim_full()) {
        stop_reason = "victim cpu" + std::to_string(v->config().cpu) + ": " + v->full_reason();
        return false;
      }
      tick();
      const std::int64_t now = sys::mono_now_ns();
      if (now >= deadline) return true;
      sleep_ns(std::min<std::int64_t>(deadline - now, 5 * kMs));
    }
  }
  // Waits for a line on stdin (the article's "Press enter to free chunkA"),
  // as long as it takes.
  bool enter() {
    for (;;) {
      if (!until(sys::mono_now_ns())) return false;
      pollfd p{STDIN_FILENO, POLLIN, 0};
      const int rc = poll(&p, 1, 50);
      if (rc > 0) {
        char buf[256];
        const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
          stop_reason = "stdin closed before Enter";
          return false;
        }
        return true;
      }
    }
  }
};

// Writes 256 KiB of this thread's stack below the current frame, so the
// wait loop's deepest calls in the counted span find their pages (and, in
// a sanitizer build, the shadow of those pages) written already: a first
// write in the span to a page mapped from the zero page is a flush.
[[gnu::noinline]] void prefault_stack() {
  constexpr std::size_t kBytes = 256 << 10;
  volatile char* p = static_cast<volatile char*>(__builtin_alloca(kBytes));
  for (std::size_t off = 0; off < kBytes; off += 512) p[off] = 0;
}

VictimSamples convert(const Victim& v, const sys::TscClock& clock, std::int64_t pages_per_batch) {
  constexpr std::size_t B = SampleStore::kBlockSamples;
  VictimSamples s;
  s.cpu = v.config().cpu;
  s.tid = v.output().tid;
  s.pages_per_batch = pages_per_batch;
  const SampleStore& store = v.samples();
  const auto& held = store.held_blocks();
  const std::uint64_t t0 = v.output().start_tsc;
  // Any block folded makes the series partial (index[]: each sample's number
  // among all measured), so attribution knows which stretches were folded.
  s.start_ns = clock.to_mono(t0 + (held.empty() ? 0 : v.block_ticks(held.front()).from));
  const std::size_t n = store.held();
  s.end_ns.resize(n);
  s.lat_ns.resize(n);
  bool gaps = !held.empty() && held.front().block != 0;
  for (std::size_t k = 1; k < held.size(); ++k) gaps = gaps || held[k].block != held[k - 1].block + 1;
  if (gaps) s.index.resize(n);
  std::size_t i = 0;
  for (const auto& h : held) {
    const std::size_t g0 = h.block << SampleStore::kBlockShift;
    const std::size_t m = std::min(B, store.size() - g0);
    const std::uint32_t* d = store.data(h);
    std::uint64_t t = t0 + v.block_ticks(h).from;
    std::int64_t prev = clock.to_mono(t);
    for (std::size_t j = 0; j < m && i < n; ++j, ++i) {
      t += d[j] != UINT32_MAX ? d[j] : v.overflow_ticks(g0 + j);
      const std::int64_t end = clock.to_mono(t);
      s.end_ns[i] = end;
      s.lat_ns[i] = end - prev;
      prev = end;
      if (gaps) s.index[i] = static_cast<std::int64_t>(g0 + j);
    }
  }
  return s;
}

// The stretches a victim's full store folded, as intervals (one histogram
// each) among the victim's own, and warnings that say what was kept raw and
// which releases lost their raw window.
void add_folded(Result& r, const Victim& v, const sys::TscClock& clock, const std::string& store_why) {
  const auto& folds = v.folds();
  if (folds.empty()) return;
  const int cpu = v.config().cpu;
  const std::uint64_t t0 = v.output().start_tsc;
  hdr::Histogram all = make_latency_histogram();
  std::int64_t folded_ns = 0, before_first = 0;
  const std::int64_t first_release = r.releases.empty() ? INT64_MAX : r.releases.front().before_ns;
  std::vector<bool> lost(r.releases.size(), false);
  for (const auto& f : folds) {
    Interval iv;
    iv.victim_cpu = cpu;
    iv.start_ns = clock.to_mono(t0 + f.from_tick);
    iv.end_ns = clock.to_mono(t0 + f.to_tick);
    const auto counts = v.fold_counts(f);
    iv.counts.assign(counts.begin(), counts.end());
    hdr::Histogram h = iv.histogram();
    iv.summary = summarize(h);
    iv.add_to(all);
    iv.phase = interval_phase(r, iv.start_ns, iv.end_ns);
    iv.folded = true;
    folded_ns += iv.end_ns - iv.start_ns;
    if (iv.end_ns <= first_release) before_first += static_cast<std::int64_t>(f.samples);
    for (std::size_t k = 0; k < r.releases.size(); ++k)
      if (iv.start_ns < r.releases[k].after_ns + r.plan.settle_ns && iv.end_ns > r.releases[k].before_ns)
        lost[k] = true;
    r.intervals.push_back(std::move(iv));
  }
  // The victim's intervals in time order, the victims in their order.
  auto victim_pos = [&](int c) {
    return std::find(r.plan.victim_cpus.begin(), r.plan.victim_cpus.end(), c) - r.plan.victim_cpus.begin();
  };
  std::stable_sort(r.intervals.begin(), r.intervals.end(), [&](const Interval& x, const Interval& y) {
    const auto px = victim_pos(x.victim_cpu), py = victim_pos(y.victim_cpu);
    return px != py ? px < py : x.start_ns < y.start_ns;
  });
  const Summary sum = summarize(all);
  const std::string store = format_size(static_cast<std::int64_t>(v.samples().max_samples() * sizeof(std::uint32_t)));
  const std::size_t n = folds.size();
  if (static_cast<std::size_t>(before_first) == v.folded_samples()) {
    const std::int64_t kept_from = clock.to_mono(t0 + folds.back().to_tick);
    const std::string kept =
        r.releases.empty() ? std::string("the samples after it")
                           : "the last " + format_duration_ns(std::max<std::int64_t>(first_release - kept_from, 0)) +
                                 " of the baseline and everything after it";
    r.warnings.push_back(fmt::format(
        "victim cpu{}: the sample store ({}) filled during the baseline: its first {} ({} samples) are kept only as {} "
        "interval histogram{} (p50 {}, max {}); the phase tables and the attribution cover {} (--memory-limit sets the "
        "store: {})",
        cpu, store, format_duration_ns(folded_ns), v.folded_samples(), n, n == 1 ? "" : "s",
        format_duration_ns(std::llround(sum.p50)), format_duration_ns(std::llround(sum.max)), kept, store_why));
  } else {
    r.warnings.push_back(fmt::format(
        "victim cpu{}: the sample store ({}) filled: {} of its samples ({}, {} before the first release) are kept only "
        "as {} interval histograms (p50 {}, max {}); raw samples are kept around each release, and the phase tables "
        "and the attribution cover those (--memory-limit sets the store: {})",
        cpu, store, v.folded_samples(), format_duration_ns(folded_ns), before_first, n,
        format_duration_ns(std::llround(sum.p50)), format_duration_ns(std::llround(sum.max)), store_why));
  }
  std::string which;
  std::size_t nlost = 0;
  for (std::size_t k = 0; k < lost.size(); ++k)
    if (lost[k]) {
      if (++nlost <= 8) which += (which.empty() ? "" : ", ") + std::to_string(k + 1);
    }
  if (nlost > 8) which += fmt::format(" and {} more", nlost - 8);
  if (nlost > 0)
    r.warnings.push_back(fmt::format(
        "victim cpu{}: the raw samples of release{} {} were folded to make room: their stalls are in the interval "
        "histograms but not attributed to causes (a larger --memory-limit keeps them)",
        cpu, nlost == 1 ? "" : "s", which));
  if (v.folds_coarsened())
    r.warnings.push_back(
        fmt::format("victim cpu{}: the table of folded intervals filled: its last interval spans "
                    "stretches that are also kept raw",
                    cpu));
}

std::string plan_strategy_error(const Plan& plan, const std::string& why) {
  return std::string(strategy_name(plan.release)) + ": " + why;
}

// 4k runs: no THP anywhere in our mm for the run, or khugepaged collapses
// our heap/stacks/buffers mid-run and its flushes hit the victims (the lab's
// reuse control on 6.12). Chunks are MADV_NOHUGEPAGE as well.
struct ThpOff {
  bool on;
  explicit ThpOff(bool b) : on(b && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0) {}
  ~ThpOff() {
    if (on) prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
  }
  ThpOff(const ThpOff&) = delete;
  ThpOff& operator=(const ThpOff&) = delete;
};

// How long the victims' rings are planned to record: the wait before the
// first release and, per release, its spacing, settle, 2 s of margin and
// the steps of a paced one, then the after window.
std::int64_t planned_span_ns(const Plan& plan, std::int64_t trigger_ns) {
  // --trigger enter waits as long as the user likes: the plan counts its
  // baseline only; a longer wait is what compaction (the memory limit) is for.
  const std::int64_t before_release = plan.trigger == Trigger::kEnter ? plan.baseline_ns : trigger_ns;
  std::int64_t planned = before_release;
  // A paced release lasts its gaps plus its steps (each a madvise and, on a
  // VM, a flush IPI of tens of us): allow 200 us per step besides the gap.
  const std::int64_t spread =
      is_paced(plan.release) ? pace_steps(plan.chunk_size, plan.pace_step) * (plan.pace_gap_ns + 200 * 1000) : 0;
  planned +=
      static_cast<std::int64_t>(std::max(plan.repeat, 1)) * (plan.every_ns + plan.settle_ns + 2000 * kMs + spread) +
      plan.after_ns;
  return planned;
}

// The bytes of samples each victim's store may hold (0: no limit) and the
// memory that set it.
struct RingBudget {
  std::size_t bytes = 0;
  std::string why;
};

// Under a memory cgroup's limit, what is left after chunk A (and the
// churn) is shared by the victims' chunks B and their sample rings, and
// after the run by the analysis: each sample's 4 ring bytes become 16 in
// VictimSamples while the ring is still held, and the phase statistics
// copy them again (~32 bytes per sample in all). So each ring gets at most
// an eighth of its share, less 32 MiB for the rest of the process: a long
// run ends early with its samples instead of being OOM-killed. (A budget by
// configuration: --memory-limit.)
// The same rule applies to the machine's MemAvailable (read now, with
// chunk A resident): a store that grows past it would push the kernel into
// reclaim and compaction, whose page migrations flush our CPUs too.
RingBudget ring_budget(const Plan& plan, std::size_t chunk_size) {
  RingBudget budget;
  if (plan.victim_cpus.empty()) return budget;
  const auto n = static_cast<std::int64_t>(plan.victim_cpus.size());
  const std::int64_t victims_b = n * static_cast<std::int64_t>(chunk_size) + (32LL << 20);
  if (const std::int64_t avail = sys::read_meminfo().mem_available(); avail > 0) {
    budget.bytes = static_cast<std::size_t>(std::max<std::int64_t>((avail - victims_b) / n / 8, 1LL << 20));
    budget.why = fmt::format("MemAvailable {} leaves room for {} of samples per victim", format_size(avail),
                             format_size(static_cast<std::int64_t>(budget.bytes)));
  }
  if (plan.memory_limit > 0) {
    const auto b = static_cast<std::size_t>(plan.memory_limit / n / 8);
    if (budget.bytes == 0 || b < budget.bytes) {
      budget.bytes = b;
      budget.why = fmt::format("--memory-limit {} leaves {} of samples per victim", format_size(plan.memory_limit),
                               format_size(static_cast<std::int64_t>(b)));
    }
  }
  if (const auto cg = sys::read_cgroup_memory(); cg && cg->limit >= 0) {
    const auto b =
        static_cast<std::size_t>(std::max<std::int64_t>((cg->limit - cg->usage - victims_b) / n / 8, 1LL << 20));
    if (budget.bytes == 0 || b < budget.bytes) {
      budget.bytes = b;
      budget.why = fmt::format("the memory cgroup {} (limit {}) leaves room for {} of samples per victim", cg->path,
                               format_size(cg->limit), format_size(static_cast<std::int64_t>(b)));
    }
  }
  return budget;
}

// Blocks SIGINT and SIGTERM for the threads started in its lifetime (they
// inherit the mask), so no handler runs on a victim CPU; the culprit's mask
// is put back when it ends.
class StopSignalsBlocked {
 public:
  StopSignalsBlocked() {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old_);
  }
  ~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t old_{};
};

// One experiment, its phases in the order run() calls them. Everything it
// acquires is a member, declared in the order it is acquired, so leaving by
// a return, an exception or the end releases it in reverse: the drainer
// joined, the tracer closed, chunk A unmapped, THP and the timer slack
// restored, the NUMA policy put back. A SIGINT/SIGTERM (sys::StopSignals)
// ends the run at the next check with an incomplete Result.
class Experiment {
 public:
  Experiment(const Plan& plan, const Hooks& hooks)
      : plan_(plan),
        hooks_(hooks),
        strategy_(plan.release),
        mode_(plan.pages),
        size_(static_cast<std::size_t>(plan.chunk_size)),
        wait_{hooks, victims_, 0, 0, {}, nullptr, nullptr, 0, nullptr, {}, 0, false, {}, {}, {}} {
    r_.plan = plan;
  }
  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;

  Result run();

 private:
  // The outcome of one release step.
  enum class Step { kNext, kEnd, kInterrupted };

  void prepare_culprit();
  bool prepare_chunk_a();
  void prepare_release();
  void calibrate();
  VictimConfig victim_config(int cpu);
  bool start_victims();
  bool wait_victims_ready();
  void start_drainer();
  void open_kernel_evidence();
  void reserve_counted_span();
  void measure();
  bool baseline();
  bool release_all();
  Step release_one(int i, std::int64_t& next);
  Status release_now();
  Status rearm();
  bool after_releases();
  void read_settled_memory();
  void stop_and_drain();
  void record_own_threads();
  void collect_kernel_trace();
  void convert_samples();
  void count_interrupts();
  void assemble_result();

  void phase(const std::string& s) const {
    if (hooks_.on_phase) hooks_.on_phase(s);
  }
  void interrupted(const std::string& reason) {
    r_.complete = false;
    r_.incomplete_reason = reason;
    r_.exit_signal = sys::StopSignals::pending();
  }
  void join_victims() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  const Plan& plan_;
  const Hooks& hooks_;
  Result r_;
  const ReleaseStrategy strategy_;
  const PageMode mode_;
  const std::size_t size_;

  std::optional<sys::PreferredNode> numa_policy_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<AllocatorChurn> churn_;
  std::size_t a_size_ = 0;
  std::optional<ThpOff> thp_off_;
  Chunk a_;
  Control ctl_;
  std::int64_t bytes_per_release_ = 0;
  ReleaseContext release_ctx_;           // extents and pidfd, made before anything is timed
  std::optional<sys::ResidentSet> rss_;  // /proc/self/statm, read around the releases without allocating
  long long rss_before_ = -1;
  long long rss_settled_ = -1;
  sys::TscClock pre_;  // the calibration before the run
  std::int64_t trigger_ns_ = 0;
  std::int64_t planned_ns_ = 0;
  RingBudget ring_budget_;

  std::vector<std::unique_ptr<Victim>> victims_;
  std::vector<std::thread> threads_;
  std::atomic<std::int32_t> drainer_tid_{0};
  std::jthread drainer_;
  std::unique_ptr<TraceSession> trace_;
  std::optional<sys::InterruptsCapture> irq_cap_before_, irq_cap_after_;

  int repeat_ = 1;
  std::vector<std::string> release_phases_;
  const std::string baseline_phase_ = "baseline", after_phase_ = "after";
  Waiter wait_;
  std::int64_t irq_read_start_ns_ = 0, irq_read_end_ns_ = 0;
  sys::TscPoint first_{}, last_{};
  sys::TscClock clock_;  // the fit over the whole run (first_ to last_)
  bool ok_ = true;       // false: a signal, a full store or stdin closed ended the span (wait_.stop_reason)
};

Result Experiment::run() {
  prepare_culprit();
  if (!prepare_chunk_a()) return std::move(r_);
  prepare_release();
  calibrate();
  if (!start_victims()) return std::move(r_);
  start_drainer();
  open_kernel_evidence();
  reserve_counted_span();
  measure();
  read_settled_memory();
  stop_and_drain();
  record_own_threads();
  collect_kernel_trace();
  convert_samples();
  count_interrupts();
  assemble_result();
  return std::move(r_);
}

// The culprit pinned, the NUMA policy and the strategy's registration set,
// the journal or the allocator opened.
void Experiment::prepare_culprit() {
  if (const Status pinned = sys::pin_this_thread(plan_.culprit_cpu); !pinned)
    throw RuntimeError("cannot pin the culprit to CPU " + std::to_string(plan_.culprit_cpu) + ": " + pinned.error());
  // Before any thread of the run exists (they inherit it): keeps NUMA
  // balancing's scanner off our memory, or on a multi-node machine it flushes
  // every CPU of the process about once a second (the lab's 8-CPU, 2-node
  // guest: 37 change_prot_numa flushes in a 21 s reuse run, all "ours").
  numa_policy_.emplace(plan_.numa_node);
  if (!numa_policy_->active())
    r_.warnings.push_back("memory policy not set (" + numa_policy_->why() +
                          "): NUMA balancing may scan this process and flush its CPUs");
  if (const Status s = prepare_strategy(strategy_); !s) throw RuntimeError(s.error());

  // Journal workload: the culprit appends to mmap-ed segment files instead of
  // releasing A; A shrinks to a token (the victims still touch it).
  if (is_journal(strategy_)) journal_ = std::make_unique<Journal>(journal_config(plan_, strategy_));
  // Allocator arms: the culprit frees blocks of an allocation churn through
  // one allocator; A shrinks to a token as for the journal.
  if (is_allocator_arm(strategy_)) {
    auto churn = AllocatorChurn::open(strategy_, plan_);
    if (!churn) throw RuntimeError(churn.error());
    churn_ = std::move(*churn);
  }
}

// Chunk A mapped and pre-faulted, the churn's live set built; false when a
// signal interrupted them.
bool Experiment::prepare_chunk_a() {
  a_size_ = journal_ || churn_ ? std::min<std::size_t>(size_, 2u << 20) : size_;
  phase("allocating and pre-faulting chunk A (" + std::to_string(a_size_ >> 20) + " MiB)");
  thp_off_.emplace(mode_ == PageMode::k4k);
  a_ = Chunk(a_size_, mode_, allocator_for(strategy_), plan_.numa_node);
  if (!a_.prefault(nullptr) || sys::StopSignals::pending()) {
    interrupted(std::string("interrupted during preparation"));
    return false;
  }
  if (churn_) {
    phase("building the live set through " + churn_->report().name + " (" +
          churn_description(make_churn(plan_.chunk_size)) + ")");
    if (const Status s = churn_->build(); !s) {
      if (sys::StopSignals::pending()) {
        interrupted(std::string("interrupted during preparation"));
        return false;
      }
      throw RuntimeError(s.error());
    }
  }
  return true;
}

// What a release needs, made before anything is timed.
void Experiment::prepare_release() {
  // Computed now: for the allocator arms it builds the churn plan (vectors:
  // an allocation, and a later free, inside the counted span would be a
  // flush of our own).
  bytes_per_release_ = released_bytes(plan_.release, plan_.chunk_size);
  rss_.emplace();  // opened now: read around the releases without allocating
  if (!journal_ && !churn_)
    if (const Status s = release_ctx_.prepare(strategy_, a_, plan_.pace()); !s)
      throw RuntimeError(plan_strategy_error(plan_, s.error()));
}

// The TSC calibrated, the span planned and the victims' sample budget set.
void Experiment::calibrate() {
  phase("calibrating TSC");
  pre_ = sys::calibrate(50 * kMs);
  r_.env.tsc_hz_pre = pre_.hz();
  trigger_ns_ = std::max(plan_.trigger_after_ns, plan_.baseline_ns);
  planned_ns_ = planned_span_ns(plan_, trigger_ns_);
  ring_budget_ = ring_budget(plan_, size_);
}

VictimConfig Experiment::victim_config(int cpu) {
  VictimConfig vc;
  vc.cpu = cpu;
  vc.chunk_size = size_;
  vc.batch = static_cast<std::size_t>(plan_.batch);
  vc.mode = mode_;
  vc.numa_node = plan_.numa_node;
  vc.mlock = plan_.mlock;
  vc.chunk_a = &a_;
  vc.chunk_b = hooks_.victim_chunk ? hooks_.victim_chunk(cpu, size_, mode_, plan_.numa_node) : nullptr;
  vc.ring_slot = hooks_.victim_ring ? hooks_.victim_ring(cpu, plan_.numa_node) : nullptr;
  vc.planned_ns = planned_ns_;
  vc.keep_ns = std::max<std::int64_t>(plan_.baseline_ns, 1000 * kMs);
  vc.ring_budget_bytes = ring_budget_.bytes;
  vc.ring_budget_why = ring_budget_.why;
  vc.ns_per_tick = pre_.ns_per_tick;
  vc.rt = plan_.rt;
  return vc;
}

// The victims' threads started (signals blocked in them so no handler runs
// on a victim CPU) and prepared; false when a signal interrupted them.
bool Experiment::start_victims() {
  for (int cpu : plan_.victim_cpus) victims_.push_back(std::make_unique<Victim>(victim_config(cpu), ctl_));
  phase("victims pre-faulting chunk B and filling their TLB from chunk A");
  {
    const StopSignalsBlocked blocked;
    for (auto& v : victims_) threads_.emplace_back([p = v.get()] { p->run(); });
  }
  return wait_victims_ready();
}

// Waits until every victim is prepared (or failed), honouring signals.
bool Experiment::wait_victims_ready() {
  for (;;) {
    bool all = true;
    for (auto& v : victims_) all = all && v->ready().load(std::memory_order_acquire);
    if (all) break;
    if (sys::StopSignals::pending()) {
      ctl_.abort.store(1);
      join_victims();
      interrupted("interrupted during preparation");
      return false;
    }
    sleep_ns(2 * kMs);
  }
  for (auto& v : victims_) {
    if (!v->output().ok) {
      ctl_.abort.store(1);
      join_victims();
      throw RuntimeError(v->output().error.empty() ? "victim preparation failed" : v->output().error);
    }
    for (const auto& w : v->output().warnings)
      r_.warnings.push_back("victim cpu" + std::to_string(v->config().cpu) + ": " + w);
  }
  return true;
}

// The drainer: copies each victim's ring into its store every 2 ms, on the
// culprit's CPU (a thread on any other CPU would put that CPU in our mm's
// cpumask, and it would receive shootdowns too). Started before the
// counted span; it stops (and its exit's stack madvise flushes) after it.
void Experiment::start_drainer() {
  drainer_ = std::jthread([this, cpu = plan_.culprit_cpu](std::stop_token st) {
    drainer_tid_.store(static_cast<std::int32_t>(::gettid()), std::memory_order_relaxed);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, nullptr);
    (void)sys::pin_this_thread(cpu);  // the culprit is pinned there already: this cannot fail
    while (!st.stop_requested()) {
      for (auto& v : victims_) v->drain();
      sleep_ns(2 * kMs);
    }
  });
}

// Kernel evidence: everything opened and enabled before the baseline
// (enabling tracepoints itself sends IPIs).
void Experiment::open_kernel_evidence() {
  if (plan_.trace == TraceMode::kOff) {
    r_.trace.status = "off (--trace off)";
  } else if (hooks_.open_trace) {
    auto opened = hooks_.open_trace(plan_);
    if (opened) {
      trace_ = std::move(*opened);
    } else {
      r_.trace.status = "unavailable: " + opened.error();
      if (plan_.trace == TraceMode::kOn) {
        ctl_.abort.store(1);
        join_victims();
        throw RuntimeError("--trace on: kernel tracing unavailable: " + opened.error());
      }
    }
  } else {
    r_.trace.status = "unavailable: this build has no kernel tracer";
  }
  // /proc/interrupts is captured raw at both ends and parsed after the span:
  // nothing between the two reads allocates or faults in the main thread.
  irq_cap_before_.emplace();
  irq_cap_after_.emplace();
  if (trace_) trace_->start();
}

// What the culprit does in the counted span besides releasing is made
// now: a first write there (a page the zero page backs: do_wp_page) or
// an allocation (an allocator mapping more: tlb_finish_mmu under mmap)
// flushes our mm's CPUs, the victims' among them, and would read as a
// shootdown of the strategy's (a sanitizer build's allocator and shadow
// memory do both; the ASan build's reuse control sent one such flush,
// do_wp_page in the culprit ~30 us into the span, while the folding
// scratch below was reserved in the span). The phase names, the release
// records and the Waiter's folding scratch are made here, the stack by
// measure().
void Experiment::reserve_counted_span() {
  repeat_ = std::max(plan_.repeat, 1);
  release_phases_.reserve(static_cast<std::size_t>(repeat_));
  for (int i = 0; i < repeat_; ++i)
    release_phases_.push_back(repeat_ > 1 ? "release " + std::to_string(i + 1) + "/" + std::to_string(repeat_)
                                          : "release");
  r_.releases.reserve(static_cast<std::size_t>(repeat_));
  wait_.trace = trace_.get();
  wait_.clock = &pre_;
  wait_.ctl = &ctl_;
  wait_.victim_cpus = plan_.victim_cpus;
  wait_.reserve_folding();
  wait_.stop_reason.reserve(256);
}

// The counted span, from one read of /proc/interrupts to the other: the
// barrier, the baseline, the releases with their settle, the after window.
// It and everything it calls run on the stack prefault_stack() wrote.
void Experiment::measure() {
  prefault_stack();
  sleep_ns(20 * kMs);  // let the IPIs sent by enabling tracepoints pass before the baseline

  irq_read_start_ns_ = capture_interrupts(*irq_cap_before_);
  first_ = sys::tsc_point();

  // Barrier: victims start measuring.
  r_.measure_start_ns = sys::mono_now_ns();
  ctl_.go.store(true, std::memory_order_release);
  wait_.start_ns = r_.measure_start_ns;
  wait_.fold_from_ns = irq_cap_before_->mono_ns();  // r.interrupts_start_ns
  wait_.marked_until_ns = wait_.fold_from_ns;

  ok_ = baseline();
  if (ok_) ok_ = release_all();
  if (ctl_.open_from.load(std::memory_order_relaxed) != 0)
    ctl_.close_window(sys::rdtsc_fenced());  // a release that failed or was stopped
  if (ok_) ok_ = after_releases();

  // The counted window closes while the victims still run: their exit (glibc
  // madvises a finished thread's stack) and the teardown send flushes of our
  // own that are not part of the measurement.
  irq_read_end_ns_ = capture_interrupts(*irq_cap_after_);
}

// Until the trigger (a time, or Enter); false when interrupted.
bool Experiment::baseline() {
  phase(baseline_phase_);
  if (plan_.trigger == Trigger::kEnter) {
    if (hooks_.prompt) hooks_.prompt("Press Enter to release chunk A...");
    return wait_.until(r_.measure_start_ns + plan_.baseline_ns) && wait_.enter();
  }
  return wait_.until(r_.measure_start_ns + trigger_ns_);
}

// The releases, --every apart; false when interrupted (a release or re-arm
// that failed ends them with a warning, and the after window still runs).
bool Experiment::release_all() {
  std::int64_t next = sys::mono_now_ns();
  for (int i = 0; i < repeat_; ++i) {
    if (i > 0 && !wait_.until(next)) return false;
    const Step step = release_one(i, next);
    if (step != Step::kNext) return step == Step::kEnd;
  }
  return true;
}

// Release i, its settle, and the re-arm for the next; `next` becomes the
// time the next one is due.
Experiment::Step Experiment::release_one(int i, std::int64_t& next) {
  phase(release_phases_[static_cast<std::size_t>(i)]);
  Release rel;
  rel.index = i;
  rel.strategy = plan_.release;
  rel.bytes = bytes_per_release_;
  rss_before_ = rss_->bytes();  // with everything of the run resident, just before the release (no allocation)
  // The release window opens before its marker: a drainer that reads it
  // closed knows no sample it drained is in it (Control::open_window).
  ctl_.open_window(sys::rdtsc_fenced());
  rel.before_ns = sys::mono_now_ns();
  const Status released = release_now();
  rel.after_ns = sys::mono_now_ns();
  if (is_paced(strategy_)) {
    // What the steps released, also when a signal stopped them part way.
    rel.partial = release_ctx_.paced_bytes() < rel.bytes;
    rel.bytes = release_ctx_.paced_bytes();
  }
  r_.releases.push_back(rel);
  if (const int sig = released ? 0 : release_ctx_.stopped_by(); sig != 0) {
    wait_.stop_reason = std::string(sig == SIGINT ? "interrupted by SIGINT" : "interrupted by SIGTERM") +
                        " during release " + std::to_string(i + 1) + " (" +
                        partial_release_note(rel.bytes, bytes_per_release_) + ")";
    return Step::kInterrupted;
  }
  if (!released) {
    r_.warnings.push_back("release " + std::to_string(i + 1) + " failed: " + released.error());
    return Step::kEnd;
  }
  next = rel.before_ns + std::max<std::int64_t>(plan_.every_ns, 1);
  const bool ok = wait_.until(rel.after_ns + plan_.settle_ns);
  ctl_.close_window(sys::rdtsc_fenced());
  if (!ok) return Step::kInterrupted;
  if (i + 1 < repeat_) {
    if (const Status s = rearm(); !s) {
      r_.warnings.push_back("re-arming chunk A failed: " + s.error());
      return Step::kEnd;
    }
    if (sys::mono_now_ns() > next) next = sys::mono_now_ns();
  }
  return Step::kNext;
}

// The timed part of a release: the journal's appends, the churn's frees or
// the strategy on chunk A.
Status Experiment::release_now() {
  return journal_ ? journal_->append(size_) : churn_ ? churn_->release() : release_chunk(strategy_, a_, release_ctx_);
}

Status Experiment::rearm() {
  return churn_ ? churn_->rearm() : rearm_chunk(strategy_, a_, a_size_, mode_, plan_.numa_node);
}

// The settle of the last release and the after window; false when interrupted.
bool Experiment::after_releases() {
  phase(after_phase_);
  const std::int64_t last = r_.releases.empty() ? sys::mono_now_ns() : r_.releases.back().after_ns;
  return wait_.until(last + plan_.settle_ns + plan_.after_ns);
}

// What the last release left resident, now that it has settled.
void Experiment::read_settled_memory() {
  rss_settled_ = rss_->bytes();
  if (churn_) churn_->settle();  // the allocator's own free bytes, at the same moment
}

// The victims stopped and joined, then the drainer; the samples written
// since its last pass drained and the folds finished.
void Experiment::stop_and_drain() {
  ctl_.stop.store(true, std::memory_order_relaxed);
  join_victims();
  drainer_.request_stop();
  drainer_.join();
  for (auto& v : victims_) {
    v->drain();  // what the victims wrote since the drainer's last pass
    v->finish_folds();
  }
  r_.measure_end_ns = sys::mono_now_ns();
  last_ = sys::tsc_point();
}

void Experiment::record_own_threads() {
  r_.own_pid = static_cast<std::int32_t>(::getpid());
  r_.own_threads.emplace_back(static_cast<std::int32_t>(::gettid()), "culprit");
  if (const std::int32_t t = drainer_tid_.load(std::memory_order_relaxed); t > 0)
    r_.own_threads.emplace_back(t, "drainer");
  for (const auto& v : victims_)
    if (v->output().tid > 0)
      r_.own_threads.emplace_back(v->output().tid, "victim cpu" + std::to_string(v->config().cpu));
}

// From here on the cost is post-processing (bench/long_run.sh times it).
void Experiment::collect_kernel_trace() {
  phase("analysing");
  if (trace_) {
    if (const std::int32_t t = trace_->reader_tid(); t > 0) r_.own_threads.emplace_back(t, "trace reader");
    auto t = trace_->stop();
    r_.trace = std::move(t);
  }
  if (!ok_) interrupted(wait_.stop_reason);
}

// Samples converted to CLOCK_MONOTONIC with the fit over the whole run.
void Experiment::convert_samples() {
  clock_ = sys::TscClock::from(first_, last_);
  r_.env.tsc_hz = clock_.hz();
  r_.env.tsc_drift_ppm = clock_.hz() > 0 ? (r_.env.tsc_hz_pre - clock_.hz()) / clock_.hz() * 1e6 : 0;
  const std::int64_t pages_per_batch = plan_.batch / static_cast<std::int64_t>(kTouchStride);
  for (const auto& v : victims_) {
    r_.victims.push_back(convert(*v, clock_, pages_per_batch));
    if (v->output().ring_full)
      r_.warnings.push_back("victim cpu" + std::to_string(v->config().cpu) + ": " + v->full_reason() +
                            ", measurement ended early");
    if (v->overflow_count() > 0)
      r_.warnings.push_back("victim cpu" + std::to_string(v->config().cpu) + ": " +
                            std::to_string(v->overflow_count()) + " samples longer than 2^32 TSC ticks");
  }
}

// The /proc/interrupts counters of the counted span, parsed now.
void Experiment::count_interrupts() {
  auto irq_before = irq_cap_before_->snapshot();
  auto irq_after = irq_before ? irq_cap_after_->snapshot() : irq_before;
  if (irq_before && irq_after) {
    r_.interrupts_span_ns = irq_after->mono_ns - irq_before->mono_ns;
    r_.interrupts_start_ns = irq_before->mono_ns;
    r_.counters = cpu_counters(*irq_before, *irq_after, plan_);
    if (irq_read_start_ns_ > kSlowReadNs) r_.warnings.push_back(slow_read_warning("start", irq_read_start_ns_));
    if (irq_read_end_ns_ > kSlowReadNs) r_.warnings.push_back(slow_read_warning("end", irq_read_end_ns_));
  } else {
    r_.warnings.push_back("/proc/interrupts unavailable: " + irq_after.error());
  }
}

// The allocator's report, the memory the release kept, the intervals and
// what full stores folded.
void Experiment::assemble_result() {
  if (churn_) r_.allocator = churn_->report();
  // membarrier releases nothing: no memory record (it is an IPI source).
  if (!journal_ && strategy_ != ReleaseStrategy::kMembarrier && !r_.releases.empty()) {
    MemoryKept m;
    m.released_bytes = r_.releases.back().bytes;
    m.rss_before = rss_before_;
    m.rss_settled = rss_settled_;
    m.kept_bytes = memory_kept_bytes(m.released_bytes, m.rss_before, m.rss_settled);
    r_.memory = m;
  }
  build_intervals(r_);
  for (const auto& v : victims_) add_folded(r_, *v, clock_, ring_budget_.why);
}

}  // namespace

Result run_experiment(const Plan& plan, const Hooks& hooks) {
  Experiment experiment(plan, hooks);
  return experiment.run();
}

}  // namespace shootdown::exp
