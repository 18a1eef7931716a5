// SPDX-License-Identifier: Apache-2.0
// Victim samples aggregated by time for report.html (charts 1 and 2):
// latency percentiles per time bucket and stall time per bucket split by the
// attribution's labels. Pure; the data types are in core/timeline_types.hpp
// (what sinks read). cmd computes the Timeline and hands it to the HTML sink.
#pragma once

#include <cstdint>
#include <vector>

#include "core/analysis_types.hpp"
#include "core/result.hpp"
#include "core/samples.hpp"
#include "core/timeline_types.hpp"

namespace shootdown {

// A few hundred to kTimelineMaxBuckets buckets per run: fine enough that a
// release window of tens of ms spans several buckets, coarse enough that
// the chart's pixel columns (~870) each hold about one bucket.
inline constexpr std::int64_t kTimelineMaxBuckets = 1500;
inline constexpr std::int64_t kTimelineMinBucketNs = 100'000;  // 100 us

// The smallest 1, 2 or 5 x 10^k ns that is >= span_ns / kTimelineMaxBuckets
// and >= kTimelineMinBucketNs.
std::int64_t timeline_bucket_ns(std::int64_t span_ns);

struct BucketSpec {
  std::int64_t origin_ns = 0;
  std::int64_t bucket_ns = 1;
  std::size_t buckets = 0;
};

// One victim's samples into buckets. labels (one StallLabel per sample, or
// nullptr): stall split by label; stall = max(0, latency -
// baseline_median_ns) per sample, spread over the buckets its span overlaps
// (integer shares; the per-label totals equal the unsplit sums).
// unattributed_ns counts the samples with latency > threshold_ns. Latency
// percentiles are exact nearest-rank over the samples ending in a bucket.
TimelineVictim bucket_victim(const VictimSamples& v, const std::vector<std::uint8_t>* labels,
                             std::int64_t baseline_median_ns, std::int64_t threshold_ns, const BucketSpec& b);

// Replaces tv's latency buckets with the intervals of victim tv.cpu: each
// interval's summary spread over the buckets it overlaps (highest wins);
// tv.samples and the stall buckets are left as they are.
void bucket_intervals(TimelineVictim& tv, const std::vector<Interval>& intervals, const BucketSpec& b);

// Every victim of r. Labels come from a.attribution when it covers the
// victim's samples; else the stall is unattributed with the threshold of
// the plan (stall_threshold_ns, or stall_factor x the baseline p50).
// bucket_ns <= 0: timeline_bucket_ns(span). Origin: r.measure_start_ns (the
// victims' earliest start when unknown), as report.html's time axes.
Timeline build_timeline(const Result& r, const Analysis& a, std::int64_t bucket_ns = 0);

// Report intervals by time (--report-every DURATION, r.plan.report_every_ns
// > 0): r.intervals rebuilt with interval j of every victim spanning
// [origin + j d, origin + (j + 1) d), origin = r.measure_start_ns (the
// earliest victim start when unknown), holding the samples that completed
// in it, as an HdrHistogram Recorder's interval holds the values recorded
// in it (a 40 ms stall lands in the interval where it ended). Intervals
// without a sample are left out; the last slot ends with the measurement
// (r.measure_end_ns, or the last sample's end if later) and is merged into
// the slot before when shorter than kMinLastIntervalNs. So interval start
// and end times are the same on every victim and grow by at least
// min(d, kMinLastIntervalNs).
inline constexpr std::int64_t kMinLastIntervalNs = 2'000'000;
void build_time_intervals(Result& r);

}  // namespace shootdown
