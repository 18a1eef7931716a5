// Cost of the victim's per-batch instrumentation (fenced TSC read + ring
// store + HDR record) against the article's scheme (two
// clock_gettime(CLOCK_REALTIME) around each batch + an HDR record), both
// measured in this run. Prints the ratio; the target is <= 0.35.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <vector>

#include "core/hdr/histogram.hpp"
#include "experiment/victim.hpp"
#include "sys/tsc.hpp"

using namespace shootdown;

namespace {

constexpr std::size_t kRing = 1 << 20;

void BM_ShootdownInstrumentation(benchmark::State& state) {
  std::vector<std::uint32_t> ring(kRing);
  std::vector<exp::Victim::Overflow> overflow(16);
  hdr::Histogram hist(1, 3600LL * 1000000000LL, 3);
  const sys::TscClock clock = sys::calibrate(10000000);
  exp::SampleSink sink{ring.data(), 0, static_cast<exp::u128>(clock.ns_per_tick * 4294967296.0), &hist,
                       overflow.data(), overflow.size(), 0};
  std::uint64_t prev = sys::rdtsc_fenced();
  for (auto _ : state) {
    const std::uint64_t now = sys::rdtsc_fenced();
    sink.push(now - prev);
    prev = now;
    if (sink.n == kRing) sink.n = 0;
  }
  benchmark::DoNotOptimize(sink.n);
}
BENCHMARK(BM_ShootdownInstrumentation);

void BM_ArticleInstrumentation(benchmark::State& state) {
  hdr::Histogram hist(1, 3600LL * 1000000000LL, 3);
  for (auto _ : state) {
    timespec a{}, b{};
    clock_gettime(CLOCK_REALTIME, &a);
    clock_gettime(CLOCK_REALTIME, &b);
    hist.record((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
  }
  benchmark::DoNotOptimize(hist.total_count());
}
BENCHMARK(BM_ArticleInstrumentation);

void BM_HistogramRecord(benchmark::State& state) {
  hdr::Histogram hist(1, 3600LL * 1000000000LL, 3);
  std::int64_t v = 1000;
  for (auto _ : state) {
    hist.record(v);
    v = (v * 1103515245 + 12345) & 0xFFFFF;
  }
  benchmark::DoNotOptimize(hist.total_count());
}
BENCHMARK(BM_HistogramRecord);

class RatioReporter : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) ns_[r.benchmark_name()] = r.GetAdjustedCPUTime();
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    auto ours = ns_.find("BM_ShootdownInstrumentation");
    auto art = ns_.find("BM_ArticleInstrumentation");
    if (ours != ns_.end() && art != ns_.end() && art->second > 0) {
      const double ratio = ours->second / art->second;
      std::printf("\nratio shootdown/article per-batch instrumentation = %.3f (target <= 0.35): %s\n", ratio,
                  ratio <= 0.35 ? "met" : "NOT met");
    }
  }

private:
  std::map<std::string, double> ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
