// SPDX-License-Identifier: Apache-2.0
#include "sink/hdr_out.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "core/errors.hpp"
#include "core/hdr/hgrm.hpp"
#include "core/hdr/hlog.hpp"
#include "core/stats.hpp"

namespace shootdown::sink {

namespace {

// Intervals of each victim in order: by_victim[cpu][k].
std::map<int, std::vector<const Interval*>> by_victim(const Result& r) {
  std::map<int, std::vector<const Interval*>> out;
  for (const auto& iv : r.intervals) out[iv.victim_cpu].push_back(&iv);
  return out;
}

// The intervals written together (one untagged line, then each victim's):
// by time (--report-every DURATION) the victims' intervals with the same
// start, which are the same wall-clock slot, in time order; by size the
// k-th interval of every victim.
std::vector<std::vector<const Interval*>> interval_groups(const Result& r) {
  std::vector<std::vector<const Interval*>> out;
  if (r.plan.report_every_ns > 0) {
    std::map<std::int64_t, std::vector<const Interval*>> by_start;
    for (const auto& iv : r.intervals) by_start[iv.start_ns].push_back(&iv);
    for (auto& [start, g] : by_start) out.push_back(std::move(g));
    return out;
  }
  const auto victims = by_victim(r);
  std::size_t n = 0;
  for (const auto& [cpu, ivs] : victims) n = std::max(n, ivs.size());
  for (std::size_t k = 0; k < n; ++k) {
    out.emplace_back();
    for (const auto& [cpu, ivs] : victims)
      if (k < ivs.size()) out.back().push_back(ivs[k]);
  }
  return out;
}

double sec_from_start(const Result& r, std::int64_t mono_ns) {
  return static_cast<double>(mono_ns - r.measure_start_ns) / 1e9;
}

void add_or_throw(hdr::HlogWriter& w, const std::string& tag, double start, double length, const hdr::Histogram& h) {
  auto st = w.add(tag, start, length, h);
  if (!st) throw RuntimeError("victim.hlog: " + st.error());
}

}  // namespace

std::string hlog_cpu_tag(int cpu) {
  return "cpu" + std::to_string(cpu);
}
std::string hlog_phase_tag(int cpu, const std::string& phase) {
  return hlog_cpu_tag(cpu) + "." + phase;
}

std::string victim_hlog(const Result& r) {
  hdr::LogHeader h;
  h.comments.push_back("Logged with shootdown " + r.env.version + " run " + r.run_id + " (" +
                       std::string(strategy_name(r.plan.release)) + ", " + std::string(page_mode_name(r.plan.pages)) +
                       " pages)");
  h.comments.push_back("Values: ns per batch of " + std::to_string(r.plan.batch) +
                       " bytes; read with -outputValueUnitRatio 1000 (microseconds)");
  h.comments.push_back(
      "Untagged: all victims combined per report interval; Tag=cpuN: victim CPU N; "
      "Tag=cpuN.PHASE: the same interval tagged with its phase (baseline|release|after)");
  if (r.realtime_offset_ns != 0) {
    // Milliseconds since the epoch of the run start (measure.start_ns).
    const std::int64_t start_ms = (r.measure_start_ns + r.realtime_offset_ns) / 1000000;
    h.start_time_msec = start_ms;
    h.base_time_msec = start_ms;
  }
  hdr::HlogWriter w(h);
  for (const auto& group : interval_groups(r)) {
    hdr::Histogram combined = make_latency_histogram();
    std::int64_t start = INT64_MAX, end = INT64_MIN;
    for (const Interval* iv : group) {
      iv->add_to(combined);
      start = std::min(start, iv->start_ns);
      end = std::max(end, iv->end_ns);
    }
    add_or_throw(w, "", sec_from_start(r, start), static_cast<double>(end - start) / 1e9, combined);
    for (const Interval* iv : group) {
      const double s = sec_from_start(r, iv->start_ns);
      const double len = static_cast<double>(iv->end_ns - iv->start_ns) / 1e9;
      const hdr::Histogram hist = iv->histogram();
      add_or_throw(w, hlog_cpu_tag(iv->victim_cpu), s, len, hist);
      add_or_throw(w, hlog_phase_tag(iv->victim_cpu, to_string(iv->phase)), s, len, hist);
    }
  }
  return w.take();
}

std::string victim_hgrm(const Result& r) {
  hdr::Histogram all = make_latency_histogram();
  for (const auto& iv : r.intervals) iv.add_to(all);
  return hdr::format_percentile_distribution(all);
}

}  // namespace shootdown::sink
