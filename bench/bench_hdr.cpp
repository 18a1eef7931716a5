// SPDX-License-Identifier: Apache-2.0
// HdrHistogram costs: record (the victim's hot loop), V2 encode/decode
// (uncompressed and zlib), .hgrm formatting. Record is reported as a ratio
// against a plain array increment measured in the same run ("x_baseline").
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/hdr/codec.hpp"
#include "core/hdr/hgrm.hpp"
#include "core/hdr/histogram.hpp"

namespace hdr = shootdown::hdr;

namespace {

constexpr std::int64_t kHour = 3600LL * 1000 * 1000 * 1000;

// Latency-like inputs (ns), precomputed so the loop times only the record.
const std::vector<std::int64_t>& inputs() {
  static const std::vector<std::int64_t> values = [] {
    std::vector<std::int64_t> v(1 << 16);
    std::uint64_t s = 1;
    for (auto& x : v) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const std::uint64_t r = s >> 33;
      x = (r % 100 < 95) ? static_cast<std::int64_t>(1000 + r % 4000) : static_cast<std::int64_t>(20000 + r % 20000);
    }
    return v;
  }();
  return values;
}

hdr::Histogram filled() {
  hdr::Histogram h(1, kHour, 3);
  for (int k = 0; k < 16; ++k)
    for (std::int64_t v : inputs()) h.record(v);
  h.record(9000000);
  return h;
}

// ns per operation of the cheapest possible "histogram": one array increment.
double baseline_ns_per_op() {
  static const double ns = [] {
    std::vector<std::int64_t> counts(4096);
    const auto& in = inputs();
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int kRounds = 200;
    for (int r = 0; r < kRounds; ++r)
      for (std::int64_t v : in) ++counts[static_cast<std::size_t>(v) & 4095];
    benchmark::DoNotOptimize(counts.data());
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / (kRounds * static_cast<double>(in.size()));
  }();
  return ns;
}

void BM_Record(benchmark::State& state) {
  hdr::Histogram h(1, kHour, 3);
  const auto& in = inputs();
  std::size_t i = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    h.record(in[i]);
    i = (i + 1) & (in.size() - 1);
  }
  const auto t1 = std::chrono::steady_clock::now();
  benchmark::DoNotOptimize(h.total_count());
  state.SetItemsProcessed(state.iterations());
  const double ns_per_record =
      std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(state.iterations());
  state.counters["baseline_ns"] = baseline_ns_per_op();
  state.counters["x_baseline"] = ns_per_record / baseline_ns_per_op();
}
BENCHMARK(BM_Record);

void BM_Encode(benchmark::State& state) {
  const hdr::Histogram h = filled();
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto out = hdr::encode(h);
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["encoded_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Encode);

void BM_EncodeCompressed(benchmark::State& state) {
  const hdr::Histogram h = filled();
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto out = hdr::encode_compressed(h, static_cast<int>(state.range(0)));
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["encoded_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeCompressed)->Arg(1)->Arg(9);

void BM_Decode(benchmark::State& state) {
  const auto bytes = hdr::encode(filled());
  for (auto _ : state) {
    auto h = hdr::decode(bytes);
    benchmark::DoNotOptimize(h.ok());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_Decode);

void BM_DecodeCompressedBase64(benchmark::State& state) {
  const std::string text = hdr::encode_compressed_base64(filled());
  for (auto _ : state) {
    auto h = hdr::decode_base64(text);
    benchmark::DoNotOptimize(h.ok());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_DecodeCompressedBase64);

void BM_FormatHgrm(benchmark::State& state) {
  const hdr::Histogram h = filled();
  for (auto _ : state) {
    auto text = hdr::format_percentile_distribution(h);
    benchmark::DoNotOptimize(text.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FormatHgrm);

}  // namespace

BENCHMARK_MAIN();
