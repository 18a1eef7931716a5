// SPDX-License-Identifier: Apache-2.0
// Cost of the victim's per-batch instrumentation against the article's scheme
// (two clock_gettime(CLOCK_REALTIME) around each batch + an HDR record), all
// measured in this run, reported as ratios of median CPU times.
//
// Two views of "cost", both printed:
//  * isolated: the instrumentation alone in a tight loop (an empty batch).
//    The target (<= 0.35) is stated for this one. Its floor is the
//    fenced TSC read itself, which the article's scheme also pays twice: on a
//    machine whose clocksource is tsc the vDSO clock_gettime reads the TSC
//    with the same rdtscp. BM_FencedTscOnly shows that floor.
//  * in the loop: the time instrumentation adds to a real victim batch (16
//    one-byte writes, one per 4 KiB page of a 256 MiB pre-faulted buffer, as
//    the victim does by default), bare and both schemes interleaved in
//    blocks (BM_InLoop): what the victim actually pays, where the fence
//    overlaps the batch's own page walks. Noisier than the isolated view (a
//    difference of two ~300 ns batch times).
//
// BM_ShootdownPlusHdr shows what recording every batch into an HDR histogram
// inside the loop would add (the victim does not: histograms are built from
// the ring after the run, from the same samples).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <sys/mman.h>
#include <vector>

#include "core/hdr/histogram.hpp"
#include "experiment/victim.hpp"
#include "sys/tsc.hpp"

using namespace shootdown;

namespace {

constexpr std::size_t kRing = 1 << 20;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kBatch = 64 * 1024;  // run's default --batch
constexpr std::size_t kBuffer = 256u << 20;

// The victim's recorder with its own ring (wraps instead of ending).
struct Recorder {
  std::vector<std::uint32_t> ring = std::vector<std::uint32_t>(kRing);
  std::vector<exp::Victim::Overflow> overflow = std::vector<exp::Victim::Overflow>(16);
  std::atomic<std::size_t> published{0};
  std::atomic<bool> stop{false};
  exp::BatchRecorder rec{ring.data(), kRing, overflow.data(), overflow.size(), &published, nullptr, &stop};

  Recorder() { rec.prev = sys::rdtsc_fenced(); }
  void end_batch() noexcept {
    if (rec.end_batch()) [[unlikely]]
      rec.n = 0;
  }
};

hdr::Histogram latency_histogram() {
  return hdr::Histogram(1, 3600LL * 1000000000LL, 3);
}

// The article's per-batch scheme: a clock_gettime before and after the batch,
// the difference recorded in an HDR histogram.
struct Article {
  hdr::Histogram hist = latency_histogram();
  timespec a{};
  void begin() noexcept { clock_gettime(CLOCK_REALTIME, &a); }
  void end() noexcept {
    timespec b{};
    clock_gettime(CLOCK_REALTIME, &b);
    hist.record((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
  }
};

// ---- isolated --------------------------------------------------------------

void BM_Shootdown(benchmark::State& state) {
  Recorder r;
  for (auto _ : state) r.end_batch();
  benchmark::DoNotOptimize(r.rec.n);
}
BENCHMARK(BM_Shootdown);

void BM_ShootdownPlusHdr(benchmark::State& state) {
  Recorder r;
  hdr::Histogram hist = latency_histogram();
  const sys::TscClock clock = sys::calibrate(10000000);
  __extension__ using u128 = unsigned __int128;
  const auto mult = static_cast<u128>(clock.ns_per_tick * 4294967296.0);
  for (auto _ : state) {
    const std::uint64_t before = r.rec.prev;
    r.end_batch();
    hist.record(static_cast<std::int64_t>(((r.rec.prev - before) * mult) >> 32));
  }
  benchmark::DoNotOptimize(hist.total_count());
}
BENCHMARK(BM_ShootdownPlusHdr);

void BM_FencedTscOnly(benchmark::State& state) {
  std::uint64_t x = 0;
  for (auto _ : state) x += sys::rdtsc_fenced();
  benchmark::DoNotOptimize(x);
}
BENCHMARK(BM_FencedTscOnly);

void BM_Article(benchmark::State& state) {
  Article art;
  for (auto _ : state) {
    art.begin();
    art.end();
  }
  benchmark::DoNotOptimize(art.hist.total_count());
}
BENCHMARK(BM_Article);

void BM_HistogramRecord(benchmark::State& state) {
  hdr::Histogram hist = latency_histogram();
  std::int64_t v = 1000;
  for (auto _ : state) {
    hist.record(v);
    v = (v * 1103515245 + 12345) & 0xFFFFF;
  }
  benchmark::DoNotOptimize(hist.total_count());
}
BENCHMARK(BM_HistogramRecord);

// ---- in the loop -------------------------------------------------------------

// The victim's chunk B in miniature: pre-faulted 4 KiB pages, mlocked when allowed.
char* buffer() {
  static char* b = [] {
    void* p = mmap(nullptr, kBuffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("bench_victim: mmap");
      std::exit(1);
    }
    madvise(p, kBuffer, MADV_NOHUGEPAGE);
    std::memset(p, 1, kBuffer);
    (void)mlock(p, kBuffer);
    return static_cast<char*>(p);
  }();
  return b;
}

struct Walk {
  char* b = buffer();
  std::size_t off = 0;
  char val = 2;
  void batch() noexcept {
    volatile char* p = b + off;
    for (std::size_t k = 0; k < kBatch / kPage; ++k) p[k * kPage] = val;
    off += kBatch;
    if (off == kBuffer) {
      off = 0;
      ++val;
    }
  }
};

// The three variants interleaved in blocks of kBlock batches over the same
// buffer, the order rotating each cycle, each block timed with one TSC read
// pair (0.1% of a block). Per cycle: added = variant - bare of that cycle;
// the medians over cycles drop the blocks the host preempted. Reported as
// counters (ns per batch), one iteration.
constexpr int kBlock = 64;
constexpr int kCycles = 3000;

void BM_InLoop(benchmark::State& state) {
  Walk w;
  Recorder r;
  Article art;
  const sys::TscClock clock = sys::calibrate(10000000);
  std::vector<double> bare, ours, theirs;
  bare.reserve(kCycles);
  ours.reserve(kCycles);
  theirs.reserve(kCycles);
  for (auto _ : state) {
    for (int c = 0; c < kCycles; ++c) {
      double t[3] = {0, 0, 0};
      for (int k = 0; k < 3; ++k) {
        const int v = (c + k) % 3;
        const std::uint64_t t0 = sys::rdtsc_fenced();
        for (int b = 0; b < kBlock; ++b) {
          if (v == 0) {
            w.batch();
          } else if (v == 1) {
            w.batch();
            r.end_batch();
          } else {
            art.begin();
            w.batch();
            art.end();
          }
        }
        t[v] = static_cast<double>(sys::rdtsc_fenced() - t0) * clock.ns_per_tick / kBlock;
      }
      bare.push_back(t[0]);
      ours.push_back(t[1] - t[0]);
      theirs.push_back(t[2] - t[0]);
    }
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  state.counters["bare_ns"] = median(bare);
  state.counters["shootdown_added_ns"] = median(ours);
  state.counters["article_added_ns"] = median(theirs);
  benchmark::DoNotOptimize(r.rec.n);
  benchmark::DoNotOptimize(art.hist.total_count());
}
BENCHMARK(BM_InLoop)->Iterations(1)->Repetitions(1)->ReportAggregatesOnly(false);

// Keeps the median CPU time per benchmark (the plain value without
// repetitions) and prints the ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      const std::string name = r.run_name.function_name;
      if (r.run_type == Run::RT_Aggregate ? r.aggregate_name == "median" : !ns_.count(name))
        ns_[name] = r.GetAdjustedCPUTime();
      if (name == "BM_InLoop")
        for (const auto& [k, c] : r.counters) in_loop_[k] = c.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto get = [&](const char* n) {
      auto it = ns_.find(n);
      return it == ns_.end() ? -1.0 : it->second;
    };
    const double art = get("BM_Article");
    if (art > 0) {
      std::printf(
          "\nisolated, ratio to the article's scheme (2 x clock_gettime(CLOCK_REALTIME) + HDR record, %.1f ns):\n",
          art);
      const double ours = get("BM_Shootdown");
      if (ours > 0)
        std::printf("  %-22s %.3f  %.1f ns  (target <= 0.35: %s)\n", "shootdown victim", ours / art, ours,
                    ours / art <= 0.35 ? "met" : "NOT met");
      const double hdr = get("BM_ShootdownPlusHdr");
      if (hdr > 0) std::printf("  %-22s %.3f  %.1f ns\n", "+ in-loop HDR record", hdr / art, hdr);
      const double tsc = get("BM_FencedTscOnly");
      if (tsc > 0)
        std::printf("  %-22s %.3f  %.1f ns  (floor: one fenced TSC read)\n", "fenced TSC read alone", tsc / art, tsc);
    }
    if (in_loop_.count("bare_ns")) {
      const double ours = in_loop_["shootdown_added_ns"], theirs = in_loop_["article_added_ns"];
      std::printf(
          "in the loop (64 KiB batch = 16 page writes of a 256 MiB buffer, bare %.1f ns, medians of %d interleaved "
          "cycles):\n"
          "  added per batch: shootdown %.1f ns, article %.1f ns, ratio %.3f\n",
          in_loop_["bare_ns"], kCycles, ours, theirs, theirs > 0 ? ours / theirs : 0.0);
    }
  }

 private:
  std::map<std::string, double> ns_;
  std::map<std::string, double> in_loop_;
};

}  // namespace

int main(int argc, char** argv) {
  // Default: 5 repetitions in random order, medians only (stable ratios on a
  // shared machine). Any --benchmark_* flag given replaces these defaults.
  std::vector<char*> args(argv, argv + argc);
  bool custom = false;
  for (int i = 1; i < argc; ++i) custom |= std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
  static char reps[] = "--benchmark_repetitions=5";
  static char inter[] = "--benchmark_enable_random_interleaving=true";
  static char aggr[] = "--benchmark_report_aggregates_only=true";
  if (!custom) {
    args.push_back(reps);
    args.push_back(inter);
    args.push_back(aggr);
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
