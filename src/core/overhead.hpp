// SPDX-License-Identifier: Apache-2.0
// Tracing overhead measured inside one run (bench/trace_overhead): while the
// victim measures its baseline, another thread alternates segments with the
// kernel tracer open ("traced") and closed ("untraced"), one of each per
// block, in a random order. Same chunk B, same pages, same thread: what is
// left between the two segments of a block is the tracing.
//
// Per segment: the latency percentiles (nearest rank, core/stats
// percentile_sorted) of the samples whose whole span lies inside
// [start + guard, end]; the guard drops the start of every segment, where
// opening or closing perf tracepoints (kernel text patching, IPIs to every
// CPU, munmap of the rings) still disturbs the victim. Per block: the ratio
// traced / untraced. Over blocks: the median ratio with a seeded
// percentile-bootstrap CI (core/compare bootstrap_median) and a verdict
// against the target. Pure: standard library only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/samples.hpp"

namespace shootdown::overhead {

struct Segment {
  std::int64_t start_ns = 0;  // CLOCK_MONOTONIC, as VictimSamples
  std::int64_t end_ns = 0;
  bool traced = false;
  int block = 0;  // the traced and the untraced segment of a block form a pair
};

struct Options {
  std::int64_t guard_ns = 20'000'000;   // dropped at the start of each segment
  std::size_t min_samples = 200;        // fewer kept samples: the segment is skipped
  std::size_t min_pairs = 3;            // fewer pairs: no interval, verdict inconclusive
  double target = 0.01;                 // allowed |ratio - 1|
  compare::BootstrapOptions bootstrap;  // resamples, confidence, seed (p50 uses the seed as is)
};

// Percentiles reported per segment and pair, in this order.
inline constexpr std::array<double, 3> kPercentiles = {50, 90, 99};
inline constexpr std::array<const char*, 3> kPercentileNames = {"p50", "p90", "p99"};
inline constexpr std::size_t kP50 = 0, kP90 = 1, kP99 = 2;

struct SegmentStats {
  Segment seg;
  std::size_t samples = 0;  // kept: span wholly inside [start + guard, end]
  std::size_t guarded = 0;  // ended inside the segment but started before start + guard
  bool skipped = false;     // samples < min_samples
  std::array<double, 3> pct{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::quiet_NaN()};  // ns, kPercentiles
};

struct Pair {
  int block = 0;
  std::size_t traced = 0, untraced = 0;  // indices into Report::segments
  std::array<double, 3> ratio{};         // traced / untraced, per kPercentiles
};

enum class Verdict { kWithinTarget, kAboveTarget, kInconclusive };
// "within target", "above target", "inconclusive"
const char* verdict_text(Verdict v);
// Within: the CI lies inside [1 - target, 1 + target]; above: its lower bound
// exceeds 1 + target; anything else (including no interval) is inconclusive.
Verdict verdict_for(const compare::ConfInterval& ci, double target);

struct RatioSummary {
  std::size_t pairs = 0;
  double median = std::numeric_limits<double>::quiet_NaN();
  compare::ConfInterval ci{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  Verdict verdict = Verdict::kInconclusive;
};

struct Report {
  std::vector<SegmentStats> segments;   // in the order given
  std::vector<Pair> pairs;              // ascending block
  std::array<RatioSummary, 3> summary;  // per kPercentiles
  std::size_t skipped_segments = 0;     // fewer than min_samples kept
  std::size_t unpaired_blocks = 0;      // blocks lacking a usable traced or untraced segment
  Options options;
};

// Segments may come in any order; a block with several segments of one kind
// uses the first usable one. Samples outside every segment are ignored.
Report analyze(const VictimSamples& v, const std::vector<Segment>& segments, const Options& o);

// "median p50 ratio traced/untraced = 1.0032 [95% CI 0.9981, 1.0075] over 30
// pairs: within target (< 1%)"; with too few pairs the interval is replaced
// by the reason.
std::string summary_line(const Report& r, std::size_t percentile_index);

}  // namespace shootdown::overhead
