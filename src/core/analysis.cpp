// SPDX-License-Identifier: Apache-2.0
#include "core/analysis.hpp"

#include <cmath>

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "core/event_counts.hpp"
#include "core/timeline.hpp"

namespace shootdown {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::kBaseline:
      return "baseline";
    case Phase::kRelease:
      return "release";
    case Phase::kAfter:
      return "after";
  }
  return "?";
}

Phase phase_at(const Result& r, std::int64_t t) {
  if (r.releases.empty() || t < r.releases.front().before_ns) return Phase::kBaseline;
  for (const auto& rel : r.releases)
    if (t >= rel.before_ns && t <= rel.after_ns + r.plan.settle_ns) return Phase::kRelease;
  return Phase::kAfter;
}

Phase interval_phase(const Result& r, std::int64_t start_ns, std::int64_t end_ns) {
  for (const auto& rel : r.releases)
    if (start_ns <= rel.after_ns + r.plan.settle_ns && end_ns >= rel.before_ns) return Phase::kRelease;
  return phase_at(r, end_ns);
}

std::vector<Phase> sample_phases(const Result& r, const VictimSamples& v) {
  std::vector<Phase> out(v.size(), Phase::kBaseline);
  // Samples and releases are both in time order: one merge pass.
  std::size_t k = 0;
  const auto& rels = r.releases;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::int64_t t = v.end_ns[i];
    while (k < rels.size() && t > rels[k].after_ns + r.plan.settle_ns) ++k;
    if (rels.empty() || t < rels.front().before_ns)
      out[i] = Phase::kBaseline;
    else if (k < rels.size() && t >= rels[k].before_ns)
      out[i] = Phase::kRelease;
    else
      out[i] = Phase::kAfter;
  }
  return out;
}

hdr::Histogram Interval::histogram() const {
  hdr::Histogram h = make_latency_histogram();
  add_to(h);
  return h;
}

void Interval::add_to(hdr::Histogram& h) const {
  // record_n of the bucket's lowest value lands in the same bucket, so min,
  // max and percentiles (all bucket-equivalent values) are those of the full
  // histogram.
  for (const auto& [index, count] : counts) h.record_n(h.value_from_index(index), count);
}

void Interval::set_histogram(const hdr::Histogram& h) {
  counts.clear();
  for (std::int32_t i = 0; i < h.counts_length(); ++i)
    if (const std::int64_t c = h.count_at_index(i); c != 0) counts.emplace_back(i, c);
  summary = summarize(h);
}

void build_intervals(Result& r) {
  if (r.plan.report_every_ns > 0) return build_time_intervals(r);  // --report-every DURATION (core/timeline)
  r.intervals.clear();
  hdr::Histogram scratch = make_latency_histogram();
  const std::int64_t per_interval =
      r.plan.batch > 0 ? std::max<std::int64_t>(1, r.plan.report_every / r.plan.batch) : 1;
  for (const auto& v : r.victims) {
    for (std::size_t i = 0, j = 0; i < v.size(); i = j) {
      // A partial series (samples folded between its raw stretches) starts
      // a new interval where the sample numbers jump: no interval spans a gap.
      const std::size_t cap = std::min(v.size(), i + static_cast<std::size_t>(per_interval));
      for (j = i + 1; j < cap && v.follows(j);) ++j;
      Interval iv;
      iv.victim_cpu = v.cpu;
      iv.start_ns = v.span_start(i);
      iv.end_ns = v.end_ns[j - 1];
      scratch.reset();
      for (std::size_t k = i; k < j; ++k) scratch.record(v.lat_ns[k]);
      iv.set_histogram(scratch);
      iv.phase = interval_phase(r, iv.start_ns, iv.end_ns);
      r.intervals.push_back(std::move(iv));
    }
  }
}

const char* column_name(Column c) {
  static const char* const names[kColumnCount] = {"min",   "mean",   "p50",     "p90", "p99",
                                                  "p99.9", "p99.99", "p99.999", "max"};
  return names[static_cast<int>(c)];
}

double column_value(const Summary& s, Column c) {
  switch (c) {
    case Column::kMin:
      return s.min;
    case Column::kMean:
      return s.mean;
    case Column::kP50:
      return s.p50;
    case Column::kP90:
      return s.p90;
    case Column::kP99:
      return s.p99;
    case Column::kP999:
      return s.p999;
    case Column::kP9999:
      return s.p9999;
    case Column::kP99999:
      return s.p99999;
    case Column::kMax:
      return s.max;
  }
  return 0;
}

std::int64_t column_min_samples(Column c) {
  switch (c) {
    case Column::kP90:
      return 10;
    case Column::kP99:
      return 100;
    case Column::kP999:
      return 1000;
    case Column::kP9999:
      return 10000;
    case Column::kP99999:
      return 100000;
    default:
      return 1;
  }
}

namespace {

// The baseline cut into consecutive windows as long as the release phase
// (at least 10 windows, at most 200: shorter windows then, whose quantiles
// vary more, so fewer marks); each column's range over the windows; release
// and after values outside it are marked. min and max depend on how many
// samples a phase holds, so they are compared only for a phase whose length
// is within 2x of the windows'.
void mark_beyond_spread(const VictimSamples& v, const std::vector<Phase>& phases, VictimAnalysis& a) {
  const PhaseStats& base = a.phases[0];
  const PhaseStats& rel = a.phases[1];
  if (base.per_batch.count == 0 || rel.per_batch.count == 0 || rel.duration_ns <= 0) return;
  std::int64_t len = rel.duration_ns;
  std::int64_t k = base.duration_ns / len;
  if (k < 10) len = base.duration_ns / 10;
  if (k > 200) len = base.duration_ns / 200;
  if (len <= 0) return;
  std::array<double, kColumnCount> lo{}, hi{};
  lo.fill(std::numeric_limits<double>::infinity());
  hi.fill(-std::numeric_limits<double>::infinity());
  std::int64_t min_window_count = std::numeric_limits<std::int64_t>::max();
  int windows = 0;
  hdr::Histogram h = make_latency_histogram();
  std::int64_t acc = 0;
  auto close = [&] {
    const Summary s = summarize(h);
    for (int c = 0; c < kColumnCount; ++c) {
      const double x = column_value(s, static_cast<Column>(c));
      lo[static_cast<std::size_t>(c)] = std::min(lo[static_cast<std::size_t>(c)], x);
      hi[static_cast<std::size_t>(c)] = std::max(hi[static_cast<std::size_t>(c)], x);
    }
    min_window_count = std::min(min_window_count, s.count);
    ++windows;
    h.reset();
    acc = 0;
  };
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (phases[i] != Phase::kBaseline) continue;
    h.record(v.lat_ns[i]);
    acc += v.lat_ns[i];
    if (acc >= len) close();
  }
  if (windows < 10) return;  // the remainder (< one window) is left out
  a.spread_windows = windows;
  a.spread_window_ns = len;
  for (std::size_t p = 1; p < a.phases.size(); ++p) {
    PhaseStats& ps = a.phases[p];
    const bool same_length = ps.duration_ns <= 2 * len && 2 * ps.duration_ns >= len;
    for (int c = 0; c < kColumnCount; ++c) {
      const auto col = static_cast<Column>(c);
      if ((col == Column::kMin || col == Column::kMax) && !same_length) continue;
      // At least 10 samples beyond the quantile in every window and the phase.
      const std::int64_t need = 10 * column_min_samples(col);
      if (ps.per_batch.count < need || min_window_count < need) continue;
      const double x = column_value(ps.per_batch, col);
      if (x < lo[static_cast<std::size_t>(c)] || x > hi[static_cast<std::size_t>(c)])
        ps.beyond_spread = static_cast<std::uint16_t>(ps.beyond_spread | (1u << c));
    }
  }
}

}  // namespace

VictimAnalysis analyze_victim(const Result& r, const VictimSamples& v, const std::vector<bool>* mask,
                              std::int64_t baseline_median_ns) {
  VictimAnalysis a;
  a.cpu = v.cpu;
  a.pages_per_batch = v.pages_per_batch;
  a.samples = static_cast<std::int64_t>(v.size());
  std::vector<hdr::Histogram> hist(3, make_latency_histogram());
  std::int64_t dur[3] = {0, 0, 0};
  const auto phases = sample_phases(r, v);
  if (baseline_median_ns <= 0) {
    std::vector<std::int64_t> base;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (phases[i] == Phase::kBaseline) base.push_back(v.lat_ns[i]);
    baseline_median_ns = median_of(std::move(base));
  }
  std::int64_t lost[3] = {0, 0, 0};
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (mask && !(*mask)[i]) continue;
    const auto p = static_cast<std::size_t>(phases[i]);
    hist[p].record(v.lat_ns[i]);
    dur[p] += v.lat_ns[i];
    lost[p] += std::max<std::int64_t>(0, v.lat_ns[i] - baseline_median_ns);
  }
  for (int p = 0; p < 3; ++p) {
    PhaseStats ps;
    ps.phase = static_cast<Phase>(p);
    ps.per_batch = summarize(hist[static_cast<std::size_t>(p)]);
    ps.per_page = ps.per_batch.scaled(static_cast<double>(std::max<std::int64_t>(1, v.pages_per_batch)));
    ps.duration_ns = dur[p];
    ps.stall_lost_ns = lost[p];
    a.phases.push_back(ps);
  }
  if (!mask) mark_beyond_spread(v, phases, a);
  return a;
}

std::int64_t memory_kept_bytes(std::int64_t released, std::int64_t rss_before, std::int64_t rss_settled) {
  if (rss_before < 0 || rss_settled < 0 || released < 0) return -1;
  return std::max<std::int64_t>(0, released - std::max<std::int64_t>(0, rss_before - rss_settled));
}

std::optional<ReleaseCost> release_cost(const Result& r, const Verdict& v) {
  if (!r.memory || r.releases.empty()) return std::nullopt;
  const double nan = std::nan("");
  ReleaseCost c;
  std::int64_t released = 0, release_ns = 0;
  for (const auto& rel : r.releases) {
    released += rel.bytes;
    release_ns += rel.duration_ns();
  }
  c.gib_released = static_cast<double>(released) / static_cast<double>(1LL << 30);
  if (c.gib_released <= 0) return std::nullopt;
  double shootdowns = 0, stall_ns = 0;
  int with = 0;
  for (const auto& x : v.victims)
    if (x.evidence) {
      shootdowns += static_cast<double>(x.shootdowns);
      stall_ns += static_cast<double>(x.stall_ns);
      ++with;
    }
  c.shootdowns_per_gib = with > 0 ? shootdowns / with / c.gib_released : nan;
  c.stall_ms_per_gib = with > 0 ? stall_ns / with / 1e6 / c.gib_released : nan;
  c.release_ms_per_gib = static_cast<double>(release_ns) / 1e6 / c.gib_released;
  const MemoryKept& m = *r.memory;
  c.kept_mib_per_gib = m.kept_bytes >= 0 && m.released_bytes > 0
                           ? static_cast<double>(m.kept_bytes) / static_cast<double>(1 << 20) /
                                 (static_cast<double>(m.released_bytes) / static_cast<double>(1LL << 30))
                           : nan;
  return c;
}

Verdict make_verdict(const Result& r, const Analysis& a) {
  Verdict out;
  out.releases = static_cast<std::int64_t>(r.releases.size());
  for (const Release& rel : r.releases) out.release_window_ns += rel.duration_ns();
  out.release_p50_ns = static_cast<std::int64_t>(a.release_duration.p50);
  if (!a.attribution.available) {
    out.unknown = r.trace.status.empty() ? "no kernel trace" : "kernel trace " + r.trace.status;
    if (!a.attribution.note.empty() && r.trace.enabled) out.unknown = a.attribution.note;
  }
  if (a.attribution.available) out.own_flushes = a.attribution.own_flushes;
  // Doctor's finding for this machine: remote flushes by INVLPGB broadcast
  // or Intel RAR (arm64 does not run the experiment).
  bool broadcast = false;
  for (const DoctorFinding& f : r.doctor) {
    if (f.name != "tlb_broadcast" || f.status != DoctorStatus::kWarn) continue;
    if (f.found.find("INVLPGB") != std::string::npos) out.broadcast_by = "AMD INVLPGB";
    if (f.found.find("Intel RAR") != std::string::npos) out.broadcast_by = "Intel RAR";
    broadcast = !out.broadcast_by.empty();
  }
  for (const VictimAnalysis& va : a.victims) {
    VictimVerdict x;
    x.cpu = va.cpu;
    for (const CpuCounters& c : r.counters)
      if (c.cpu == va.cpu) x.tlb_delta = c.tlb;
    for (const VictimAttribution& at : a.attribution.victims) {
      if (!a.attribution.available || at.cpu != va.cpu) continue;
      x.evidence = true;
      x.shootdowns = at.shootdowns_received - at.shootdowns_outside_releases;
      x.own_outside = at.shootdowns_outside_releases;
      x.seen = at.shootdowns_matched - at.shootdowns_outside_matched;
      x.stall_ns = at.stall_ns[static_cast<int>(StallLabel::kTlbShootdown)] - at.shootdowns_outside_stall_ns;
      x.own_outside_stall_ns = at.shootdowns_outside_stall_ns;
      x.per_ipi_p50_ns = at.stall_per_shootdown.p50;
      x.foreign = at.wrong_cpu_flushes;
      // Releases not known to have run with the victim on its CPU, less the
      // unknown ones (their raw window was folded).
      const auto unknown = std::count(at.release_on_cpu.begin(), at.release_on_cpu.end(), std::nullopt);
      x.off_cpu_in_release = at.releases_on_cpu >= 0 && at.releases_on_cpu + unknown < out.releases;
      x.flush_requests = at.flush_requests;
      x.flush_requests_delivered = at.flush_requests_delivered;
      x.flushes_unseen = flushes_bypass_ipis(at.flush_requests, at.flush_requests_delivered);
    }
    x.broadcast_flush = broadcast && x.evidence && out.releases > 0 && x.shootdowns == 0 && x.flush_requests == 0;
    out.victims.push_back(x);
  }
  return out;
}

namespace {
bool has_full_samples(const Result& r) {
  return std::any_of(r.victims.begin(), r.victims.end(), [](const VictimSamples& v) { return !v.windows_only; });
}

// Some kernel incident was seen (not only clean and unexplained samples).
bool attribution_has_evidence(const Attribution& at) {
  for (const auto& v : at.victims) {
    if (v.shootdowns_received > 0 || v.shootdown_ipis > 0 || v.other_ipis > 0) return true;
    for (std::size_t l = 0; l < v.samples.size(); ++l)
      if (l != static_cast<std::size_t>(StallLabel::kClean) &&
          l != static_cast<std::size_t>(StallLabel::kUnexplained) && v.samples[l] > 0)
        return true;
  }
  return false;
}
}  // namespace

// The one rule for whether a result has an attribution to show (console,
// JSON and HTML all print what this returns): the one computed when the run
// ended, restored from result.json unless the raw samples and events came
// back whole; one computed now only over events, since over an empty event
// list it would call every stall unexplained.
Attribution result_attribution(const Result& r) {
  const bool events = r.trace.enabled && (!r.trace.events.empty() || r.trace.folded.events > 0);
  if (r.saved_attribution && (!has_full_samples(r) || !events)) return restore_saved_attribution(r);
  Attribution at = attribute_result(r);
  if (at.available && !events && !attribution_has_evidence(at)) {
    Attribution none;
    none.note = "no kernel events in this result (re-rendered from result.json, which keeps only their counts)";
    return none;
  }
  return at;
}

Attribution restore_saved_attribution(const Result& r) {
  if (!r.saved_attribution) return {};
  Attribution at = *r.saved_attribution;
  for (auto& va : at.victims) {
    const std::vector<std::uint8_t> all = std::move(va.labels);
    va.labels.clear();
    for (const auto& v : r.victims) {
      if (v.cpu != va.cpu) continue;
      va.labels.reserve(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const auto k = static_cast<std::size_t>(v.index[i]);
        va.labels.push_back(k < all.size() ? all[k] : static_cast<std::uint8_t>(StallLabel::kClean));
      }
    }
  }
  return at;
}

Analysis analyze(const Result& r) {
  Analysis a;
  a.attribution = result_attribution(r);
  for (const auto& v : r.victims) {
    // Stall lost is measured from the median attribution uses, so the phases'
    // stall lost adds up to the labels' (one rule).
    std::int64_t median = 0;
    if (a.attribution.available)
      for (const auto& at : a.attribution.victims)
        if (at.cpu == v.cpu) median = at.baseline_median_ns;
    VictimAnalysis va = analyze_victim(r, v, nullptr, median);
    std::int64_t counted = 0;
    for (const auto& ps : va.phases) counted += ps.per_batch.count;
    if (v.size() > 0 && static_cast<std::int64_t>(v.size()) == counted) {
      va.phase_histograms.assign(3, make_latency_histogram());
      const auto phases = sample_phases(r, v);
      for (std::size_t i = 0; i < v.size(); ++i)
        va.phase_histograms[static_cast<std::size_t>(phases[i])].record(v.lat_ns[i]);
    }
    a.victims.push_back(std::move(va));
  }
  std::vector<std::int64_t> d;
  for (const auto& rel : r.releases) d.push_back(rel.duration_ns());
  a.release_duration = summarize_exact(d);
  // Clean-only tables need every sample: not from a read-back result (whose
  // saved tables sink::result_from_json restores).
  if (a.attribution.available && a.attribution.victims.size() == r.victims.size() && has_full_samples(r)) {
    for (std::size_t i = 0; i < r.victims.size(); ++i) {
      const auto& labels = a.attribution.victims[i].labels;
      std::vector<bool> clean(labels.size());
      for (std::size_t k = 0; k < labels.size(); ++k)
        clean[k] = labels[k] == static_cast<std::uint8_t>(StallLabel::kClean);
      a.clean_victims.push_back(analyze_victim(r, r.victims[i], &clean, a.attribution.victims[i].baseline_median_ns));
    }
  }
  a.event_counts = event_counts(r);
  a.event_total = event_total(r);
  complete_loaded_analysis(r, a);
  return a;
}

void complete_loaded_analysis(const Result& r, Analysis& a) {
  std::set<int> cpus;
  for (const auto& va : a.victims) cpus.insert(va.cpu);
  a.marks = event_marks(r.trace, cpus);
  for (int cpu : cpus)
    a.shootdown_marks[cpu] = {shootdown_marks(r, a.marks, cpu, false), shootdown_marks(r, a.marks, cpu, true)};
  a.verdict = make_verdict(r, a);
}

}  // namespace shootdown
