#include "core/analysis.hpp"

#include <set>

#include "core/event_counts.hpp"

#include <algorithm>

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
  r.intervals.clear();
  hdr::Histogram scratch = make_latency_histogram();
  const std::int64_t per_interval =
      r.plan.batch > 0 ? std::max<std::int64_t>(1, r.plan.report_every / r.plan.batch) : 1;
  for (const auto& v : r.victims) {
    for (std::size_t i = 0; i < v.size(); i += static_cast<std::size_t>(per_interval)) {
      const std::size_t j = std::min(v.size(), i + static_cast<std::size_t>(per_interval));
      Interval iv;
      iv.victim_cpu = v.cpu;
      iv.start_ns = v.span_start(i);
      iv.end_ns = v.end_ns[j - 1];
      scratch.reset();
      for (std::size_t k = i; k < j; ++k) scratch.record(v.lat_ns[k]);
      iv.set_histogram(scratch);
      Phase p = phase_at(r, iv.end_ns);
      for (const auto& rel : r.releases)
        if (iv.start_ns <= rel.after_ns + r.plan.settle_ns && iv.end_ns >= rel.before_ns) p = Phase::kRelease;
      iv.phase = to_string(p);
      r.intervals.push_back(std::move(iv));
    }
  }
}

VictimAnalysis analyze_victim(const Result& r, const VictimSamples& v, const std::vector<bool>* mask) {
  VictimAnalysis a;
  a.cpu = v.cpu;
  a.pages_per_batch = v.pages_per_batch;
  a.samples = static_cast<std::int64_t>(v.size());
  std::vector<hdr::Histogram> hist(3, make_latency_histogram());
  std::int64_t dur[3] = {0, 0, 0};
  const auto phases = sample_phases(r, v);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (mask && !(*mask)[i]) continue;
    const auto p = static_cast<std::size_t>(phases[i]);
    hist[p].record(v.lat_ns[i]);
    dur[p] += v.lat_ns[i];
  }
  for (int p = 0; p < 3; ++p) {
    PhaseStats ps;
    ps.phase = static_cast<Phase>(p);
    ps.per_batch = summarize(hist[static_cast<std::size_t>(p)]);
    ps.per_page = ps.per_batch.scaled(static_cast<double>(std::max<std::int64_t>(1, v.pages_per_batch)));
    ps.duration_ns = dur[p];
    a.phases.push_back(ps);
  }
  return a;
}

namespace {
bool has_full_samples(const Result& r) {
  return std::any_of(r.victims.begin(), r.victims.end(), [](const VictimSamples& v) { return !v.partial(); });
}
}  // namespace

Attribution result_attribution(const Result& r) {
  if (!r.saved_attribution || has_full_samples(r)) return attribute_result(r);
  return restore_saved_attribution(r);
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
  for (const auto& v : r.victims) {
    VictimAnalysis va = analyze_victim(r, v);
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
  a.attribution = result_attribution(r);
  // Clean-only tables need every sample: not from a read-back result (whose
  // saved tables sink::result_from_json restores).
  if (a.attribution.available && a.attribution.victims.size() == r.victims.size() && has_full_samples(r)) {
    for (std::size_t i = 0; i < r.victims.size(); ++i) {
      const auto& labels = a.attribution.victims[i].labels;
      std::vector<bool> clean(labels.size());
      for (std::size_t k = 0; k < labels.size(); ++k)
        clean[k] = labels[k] == static_cast<std::uint8_t>(StallLabel::kClean);
      a.clean_victims.push_back(analyze_victim(r, r.victims[i], &clean));
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
}

}  // namespace shootdown
