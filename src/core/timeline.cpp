// SPDX-License-Identifier: Apache-2.0
#include "core/timeline.hpp"
#include "core/stats.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include "core/analysis.hpp"
#include "core/stats.hpp"

namespace shootdown {

namespace {

// A bucket's percentile (q in (0, 1]) by the one rule; partially reorders vals.
std::int64_t nearest_rank(std::vector<std::int64_t>& vals, double q) {
  return nearest_rank_select(vals, 100 * q);
}

// Bucket k spans [origin + k w, origin + (k + 1) w). A sample spans (start,
// end]: its start is in bucket_of(start), its end in bucket_of_end(end) (a
// sample ending exactly on a boundary belongs to the bucket before it).
std::size_t bucket_of(std::int64_t t, const BucketSpec& b) {
  if (t <= b.origin_ns || b.buckets == 0) return 0;
  const auto k = static_cast<std::size_t>((t - b.origin_ns) / b.bucket_ns);
  return std::min(k, b.buckets - 1);
}
std::size_t bucket_of_end(std::int64_t t, const BucketSpec& b) {
  if (t <= b.origin_ns || b.buckets == 0) return 0;
  const auto k = static_cast<std::size_t>((t - b.origin_ns - 1) / b.bucket_ns);
  return std::min(k, b.buckets - 1);
}

// Adds x, the stall of the span [s, e], to out split by overlap with each
// bucket; the shares add up to x exactly (the last bucket takes the rest).
void spread(std::vector<std::int64_t>& out, std::int64_t x, std::int64_t s, std::int64_t e, const BucketSpec& b) {
  if (x <= 0) return;
  const std::size_t k0 = bucket_of(s, b), k1 = bucket_of_end(e, b);
  if (k0 >= k1 || e <= s) {
    out[k1] += x;
    return;
  }
  const double len = static_cast<double>(e - s);
  std::int64_t given = 0;
  for (std::size_t k = k0; k < k1; ++k) {
    const std::int64_t lo = std::max(s, b.origin_ns + static_cast<std::int64_t>(k) * b.bucket_ns);
    const std::int64_t hi = std::min(e, b.origin_ns + static_cast<std::int64_t>(k + 1) * b.bucket_ns);
    const auto share = static_cast<std::int64_t>(static_cast<double>(x) *
                                                 static_cast<double>(std::max<std::int64_t>(0, hi - lo)) / len);
    out[k] += share;
    given += share;
  }
  out[k1] += x - given;
}

}  // namespace

std::int64_t timeline_bucket_ns(std::int64_t span_ns) {
  const std::int64_t want =
      std::max<std::int64_t>(kTimelineMinBucketNs, (span_ns + kTimelineMaxBuckets - 1) / kTimelineMaxBuckets);
  for (std::int64_t p = 1; p <= INT64_MAX / 10; p *= 10)
    for (std::int64_t m : {1, 2, 5})
      if (m * p >= want) return m * p;
  return want;
}

TimelineVictim bucket_victim(const VictimSamples& v, const std::vector<std::uint8_t>* labels,
                             std::int64_t baseline_median_ns, std::int64_t threshold_ns, const BucketSpec& b) {
  TimelineVictim tv;
  tv.cpu = v.cpu;
  const std::size_t nb = b.buckets;
  tv.samples.assign(nb, 0);
  tv.p50_ns.assign(nb, -1);
  tv.p90_ns.assign(nb, -1);
  tv.p99_ns.assign(nb, -1);
  tv.max_ns.assign(nb, -1);
  tv.unattributed_ns.assign(nb, 0);
  tv.attributed = labels != nullptr && labels->size() == v.size();
  for (auto& s : tv.stall_ns) s.assign(nb, 0);
  tv.baseline_median_ns = baseline_median_ns;
  tv.threshold_ns = threshold_ns;
  tv.sample_count = static_cast<std::int64_t>(v.size());
  if (nb == 0) return tv;

  std::vector<std::int64_t> scratch;
  std::size_t i = 0;
  while (i < v.size()) {
    // Samples ending in bucket k: consecutive, since end_ns is sorted.
    const std::size_t k = bucket_of_end(v.end_ns[i], b);
    scratch.clear();
    std::size_t j = i;
    for (; j < v.size() && bucket_of_end(v.end_ns[j], b) == k; ++j) scratch.push_back(v.lat_ns[j]);
    const auto n = static_cast<std::int64_t>(scratch.size());
    tv.samples[k] += n;
    tv.max_ns[k] = std::max(tv.max_ns[k], *std::max_element(scratch.begin(), scratch.end()));
    tv.p50_ns[k] = nearest_rank(scratch, 0.50);
    if (n >= 10) tv.p90_ns[k] = nearest_rank(scratch, 0.90);
    if (n >= 100) tv.p99_ns[k] = nearest_rank(scratch, 0.99);
    i = j;
  }
  for (std::size_t s = 0; s < v.size(); ++s) {
    const std::int64_t lat = v.lat_ns[s];
    const std::int64_t x = std::max<std::int64_t>(0, lat - baseline_median_ns);
    const std::int64_t from = v.span_start(s), to = v.span_end(s);
    tv.covered_ns += to - from;
    if (x == 0) continue;
    if (tv.attributed) {
      const std::size_t l = std::min<std::size_t>((*labels)[s], kStallLabelCount - 1);
      spread(tv.stall_ns[l], x, from, to, b);
    }
    if (threshold_ns > 0 && lat > threshold_ns) spread(tv.unattributed_ns, x, from, to, b);
  }
  return tv;
}

void bucket_intervals(TimelineVictim& tv, const std::vector<Interval>& intervals, const BucketSpec& b) {
  const std::size_t nb = b.buckets;
  tv.p50_ns.assign(nb, -1);
  tv.p90_ns.assign(nb, -1);
  tv.p99_ns.assign(nb, -1);
  tv.max_ns.assign(nb, -1);
  tv.latency_from_intervals = true;
  tv.intervals_used = 0;
  if (nb == 0) return;
  auto put = [](std::int64_t& slot, double v) { slot = std::max(slot, static_cast<std::int64_t>(std::llround(v))); };
  for (const auto& iv : intervals) {
    if (iv.victim_cpu != tv.cpu || iv.total_count() == 0) continue;
    ++tv.intervals_used;
    const std::size_t k0 = bucket_of(iv.start_ns, b), k1 = std::max(k0, bucket_of_end(iv.end_ns, b));
    for (std::size_t k = k0; k <= k1; ++k) {
      put(tv.p50_ns[k], iv.summary.p50);
      put(tv.max_ns[k], iv.summary.max);
      if (iv.total_count() >= 10) put(tv.p90_ns[k], iv.summary.p90);
      if (iv.total_count() >= 100) put(tv.p99_ns[k], iv.summary.p99);
    }
  }
}

Timeline build_timeline(const Result& r, const Analysis& a, std::int64_t bucket_ns) {
  Timeline tl;
  std::int64_t t0 = r.measure_start_ns;
  std::int64_t end = 0;
  if (t0 <= 0) {
    t0 = INT64_MAX;
    for (const auto& v : r.victims) t0 = std::min(t0, v.size() ? v.span_start(0) : v.start_ns);
    for (const auto& iv : r.intervals) t0 = std::min(t0, iv.start_ns);
    if (t0 == INT64_MAX) t0 = 0;
  }
  for (const auto& v : r.victims) {
    if (v.size()) end = std::max(end, v.end_ns.back());
    tl.partial = tl.partial || v.partial();
  }
  for (const auto& iv : r.intervals) end = std::max(end, iv.end_ns);
  tl.origin_ns = t0;
  tl.span_ns = std::max<std::int64_t>(0, end - t0);
  tl.bucket_ns = bucket_ns > 0 ? bucket_ns : timeline_bucket_ns(tl.span_ns);
  tl.buckets = tl.span_ns > 0 ? static_cast<std::size_t>((tl.span_ns + tl.bucket_ns - 1) / tl.bucket_ns) : 0;
  const BucketSpec spec{tl.origin_ns, tl.bucket_ns, tl.buckets};

  for (const auto& v : r.victims) {
    const VictimAttribution* va = nullptr;
    if (a.attribution.available)
      for (const auto& x : a.attribution.victims)
        if (x.cpu == v.cpu && x.labels.size() == v.size()) va = &x;
    std::int64_t median = 0, threshold = 0;
    if (va) {
      median = va->baseline_median_ns;
      threshold = va->stall_threshold_ns;
    } else {
      for (const auto& an : a.victims)
        if (an.cpu == v.cpu)
          for (const auto& ps : an.phases)
            if (ps.phase == Phase::kBaseline && ps.per_batch.count > 0)
              median = static_cast<std::int64_t>(std::llround(ps.per_batch.p50));
      threshold = r.plan.stall_threshold_ns > 0
                      ? r.plan.stall_threshold_ns
                      : static_cast<std::int64_t>(std::llround(r.plan.stall_factor * static_cast<double>(median)));
    }
    TimelineVictim tv = bucket_victim(v, va ? &va->labels : nullptr, median, threshold, spec);
    if (v.partial()) {
      const bool any = std::any_of(r.intervals.begin(), r.intervals.end(),
                                   [&](const Interval& iv) { return iv.victim_cpu == v.cpu; });
      if (any) bucket_intervals(tv, r.intervals, spec);
    }
    tl.victims.push_back(std::move(tv));
  }
  return tl;
}

void build_time_intervals(Result& r) {
  const std::int64_t d = r.plan.report_every_ns;
  if (d <= 0) return;
  r.intervals.clear();
  std::int64_t origin = r.measure_start_ns;
  if (origin <= 0) {
    origin = INT64_MAX;
    for (const auto& v : r.victims) origin = std::min(origin, v.start_ns);
    if (origin == INT64_MAX) origin = 0;
  }
  // The last slot ends with the measurement (the same instant for every
  // victim). A last slot shorter than kMinLastIntervalNs is merged into the
  // one before: the readers keep whole milliseconds, truncated, so a
  // shorter final interval would end in the same millisecond as the one
  // before it.
  std::int64_t end_all = r.measure_end_ns;
  for (const auto& v : r.victims)
    if (v.size()) end_all = std::max(end_all, v.end_ns.back());
  std::int64_t last_slot = end_all > origin ? (end_all - origin - 1) / d : 0;
  if (last_slot > 0 && end_all - (origin + last_slot * d) < kMinLastIntervalNs) --last_slot;
  auto slot_of = [&](std::int64_t t) { return std::min(last_slot, t <= origin ? std::int64_t{0} : (t - origin) / d); };
  hdr::Histogram scratch = make_latency_histogram();
  for (const auto& v : r.victims) {
    // A partial series (a store that folded blocks) has gaps where the
    // folded intervals are: a slot never spans one, and a slot at its edge
    // begins or ends with its samples, not inside the folded interval.
    std::size_t i = 0;
    while (i < v.size()) {
      const std::int64_t slot = slot_of(v.end_ns[i]);
      std::size_t j = i;
      scratch.reset();
      for (; j < v.size() && slot_of(v.end_ns[j]) == slot && (j == i || v.follows(j)); ++j) scratch.record(v.lat_ns[j]);
      Interval iv;
      iv.victim_cpu = v.cpu;
      iv.start_ns = origin + slot * d;
      iv.end_ns = slot == last_slot ? end_all : iv.start_ns + d;
      if (!v.follows(i)) iv.start_ns = std::max(iv.start_ns, v.span_start(i));
      if (j < v.size() && !v.follows(j)) iv.end_ns = std::min(iv.end_ns, v.end_ns[j - 1]);
      iv.set_histogram(scratch);
      iv.phase = interval_phase(r, iv.start_ns, iv.end_ns);
      r.intervals.push_back(std::move(iv));
      i = j;
    }
  }
}

}  // namespace shootdown
