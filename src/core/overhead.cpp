// SPDX-License-Identifier: Apache-2.0
#include "core/overhead.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "core/stats.hpp"

namespace shootdown::overhead {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

SegmentStats segment_stats(const VictimSamples& v, const Segment& s, const Options& o) {
  SegmentStats st;
  st.seg = s;
  const std::int64_t kept_from = s.start_ns + std::max<std::int64_t>(0, o.guard_ns);
  // end_ns is ascending: the samples ending in (start, end].
  const auto first = std::upper_bound(v.end_ns.begin(), v.end_ns.end(), s.start_ns);
  const auto last = std::upper_bound(first, v.end_ns.end(), s.end_ns);
  std::vector<std::int64_t> lat;
  lat.reserve(static_cast<std::size_t>(last - first));
  for (auto it = first; it != last; ++it) {
    const auto i = static_cast<std::size_t>(it - v.end_ns.begin());
    if (v.span_start(i) >= kept_from)
      lat.push_back(v.lat_ns[i]);
    else
      ++st.guarded;
  }
  st.samples = lat.size();
  st.skipped = st.samples < std::max<std::size_t>(o.min_samples, 1);
  if (st.skipped) return st;
  std::sort(lat.begin(), lat.end());
  for (std::size_t k = 0; k < kPercentiles.size(); ++k) st.pct[k] = percentile_sorted(lat, kPercentiles[k]);
  return st;
}

std::string fmt_ratio(double x) {
  return std::isfinite(x) ? fmt::format("{:.4f}", x) : std::string("n/a");
}

}  // namespace

const char* verdict_text(Verdict v) {
  switch (v) {
    case Verdict::kWithinTarget:
      return "within target";
    case Verdict::kAboveTarget:
      return "above target";
    case Verdict::kInconclusive:
      break;
  }
  return "inconclusive";
}

Verdict verdict_for(const compare::ConfInterval& ci, double target) {
  if (!std::isfinite(ci.lo) || !std::isfinite(ci.hi)) return Verdict::kInconclusive;
  if (ci.lo >= 1 - target && ci.hi <= 1 + target) return Verdict::kWithinTarget;
  if (ci.lo > 1 + target) return Verdict::kAboveTarget;
  return Verdict::kInconclusive;
}

Report analyze(const VictimSamples& v, const std::vector<Segment>& segments, const Options& o) {
  Report r;
  r.options = o;
  r.segments.reserve(segments.size());
  for (const Segment& s : segments) {
    r.segments.push_back(segment_stats(v, s, o));
    if (r.segments.back().skipped) ++r.skipped_segments;
  }

  // block -> first usable traced / untraced segment (index + 1; 0 = none).
  std::map<int, std::pair<std::size_t, std::size_t>> blocks;
  for (std::size_t i = 0; i < r.segments.size(); ++i) {
    const SegmentStats& s = r.segments[i];
    auto& b = blocks[s.seg.block];
    if (s.skipped) continue;
    std::size_t& slot = s.seg.traced ? b.first : b.second;
    if (slot == 0) slot = i + 1;
  }
  for (const auto& [block, b] : blocks) {
    if (b.first == 0 || b.second == 0) {
      ++r.unpaired_blocks;
      continue;
    }
    Pair p;
    p.block = block;
    p.traced = b.first - 1;
    p.untraced = b.second - 1;
    for (std::size_t k = 0; k < kPercentiles.size(); ++k) {
      const double on = r.segments[p.traced].pct[k], off = r.segments[p.untraced].pct[k];
      p.ratio[k] = off > 0 ? on / off : kNaN;
    }
    r.pairs.push_back(p);
  }

  for (std::size_t k = 0; k < kPercentiles.size(); ++k) {
    std::vector<double> ratios;
    for (const Pair& p : r.pairs)
      if (std::isfinite(p.ratio[k])) ratios.push_back(p.ratio[k]);
    RatioSummary& s = r.summary[k];
    s.pairs = ratios.size();
    if (ratios.empty()) continue;
    s.median = compare::median(ratios);
    if (s.pairs < std::max<std::size_t>(o.min_pairs, 1)) continue;
    compare::BootstrapOptions b = o.bootstrap;
    b.seed = o.bootstrap.seed + k;  // p50 keeps the given seed
    s.ci = compare::bootstrap_median(ratios, b);
    s.verdict = verdict_for(s.ci, o.target);
  }
  return r;
}

std::string summary_line(const Report& r, std::size_t k) {
  const RatioSummary& s = r.summary[k];
  const double pct = r.options.target * 100;
  std::string line = fmt::format("median {} ratio traced/untraced = {}", kPercentileNames[k], fmt_ratio(s.median));
  if (std::isfinite(s.ci.lo)) {
    line += fmt::format(" [{:g}% CI {}, {}] over {} pairs: ", r.options.bootstrap.confidence * 100, fmt_ratio(s.ci.lo),
                        fmt_ratio(s.ci.hi), s.pairs);
  } else {
    line += fmt::format(" over {} pairs (too few for an interval, need {}): ", s.pairs,
                        std::max<std::size_t>(r.options.min_pairs, 1));
  }
  line += verdict_text(s.verdict);
  switch (s.verdict) {
    case Verdict::kWithinTarget:
      line += fmt::format(" (< {:g}%)", pct);
      break;
    case Verdict::kAboveTarget:
      line += fmt::format(" (> {:g}%)", pct);
      break;
    case Verdict::kInconclusive:
      if (std::isfinite(s.ci.lo))
        line += fmt::format(" (the CI is not inside [{}, {}])", fmt_ratio(1 - r.options.target),
                            fmt_ratio(1 + r.options.target));
      break;
  }
  return line;
}

}  // namespace shootdown::overhead
