// SPDX-License-Identifier: Apache-2.0
#include "sink/json.hpp"

#include <cmath>

#include "sink/blame_out.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/cpulist.hpp"
#include "core/hdr/codec.hpp"
#include "sink/console.hpp"

namespace shootdown::sink {

using nlohmann::json;

json summary_json(const Summary& s) {
  return json{{"count", s.count}, {"min", s.min},   {"mean", s.mean},   {"p50", s.p50},       {"p90", s.p90},
              {"p99", s.p99},     {"p999", s.p999}, {"p9999", s.p9999}, {"p99999", s.p99999}, {"max", s.max}};
}

namespace {

json env_json(const Environment& e) {
  return json{{"hostname", e.hostname},
              {"kernel", e.kernel},
              {"kernel_version", e.kernel_version},
              {"machine", e.machine},
              {"cpu_model", e.cpu_model},
              {"cmdline", e.cmdline},
              {"thp_enabled", e.thp_enabled},
              {"thp_defrag", e.thp_defrag},
              {"virtualized", e.virtualized},
              {"hypervisor", e.hypervisor},
              {"constant_tsc", e.constant_tsc},
              {"nonstop_tsc", e.nonstop_tsc},
              {"pcid", e.pcid},
              {"invpcid", e.invpcid},
              {"clocksource", e.clocksource},
              {"online_cpus", e.online_cpus},
              {"numa_nodes", e.numa_nodes},
              {"build_type", e.build_type},
              {"version", e.version},
              {"tsc_hz", e.tsc_hz},
              {"tsc_hz_pre", e.tsc_hz_pre},
              {"tsc_drift_ppm", e.tsc_drift_ppm},
              {"warnings", e.warnings}};
}

json plan_json(const Plan& p) {
  return json{{"culprit_cpu", p.culprit_cpu},
              {"victim_cpus", p.victim_cpus},
              {"cpu_choice", p.cpu_choice},
              {"chunk_size", p.chunk_size},
              {"chunk_size_requested", p.chunk_size_requested},
              {"chunk_capped", p.chunk_capped},
              {"batch", p.batch},
              {"report_every", p.report_every},
              {"report_every_ns", p.report_every_ns},
              {"pages", page_mode_name(p.pages)},
              {"touch_stride", 4096},
              {"release", strategy_name(p.release)},
              {"pace_step", p.pace_step},
              {"pace_gap_ns", p.pace_gap_ns},
              {"allocator_conf", p.allocator_conf},
              {"allocator_purge", p.allocator_purge},
              {"trigger", trigger_name(p.trigger)},
              {"trigger_after_ns", p.trigger_after_ns},
              {"repeat", p.repeat},
              {"every_ns", p.every_ns},
              {"baseline_ns", p.baseline_ns},
              {"settle_ns", p.settle_ns},
              {"after_ns", p.after_ns},
              {"trace", trace_mode_name(p.trace)},
              {"stall_threshold_ns", p.stall_threshold_ns},
              {"stall_factor", p.stall_factor},
              {"mlock", p.mlock},
              {"rt", p.rt},
              {"memory_limit", p.memory_limit},
              {"numa_node", p.numa_node}};
}

json phase_json(const PhaseStats& ps) {
  json beyond = json::array();
  for (int c = 0; c < kColumnCount; ++c)
    if ((ps.beyond_spread >> c) & 1u) beyond.push_back(column_name(static_cast<Column>(c)));
  return json{{"per_batch_ns", summary_json(ps.per_batch)},
              {"per_page_ns", summary_json(ps.per_page)},
              {"duration_ns", ps.duration_ns},
              {"stall_lost_ns", ps.stall_lost_ns},
              {"beyond_baseline_spread", beyond}};
}

json summary_section(const Result& r, const Analysis& a) {
  const Verdict& v = a.verdict;
  json victims = json::array();
  for (const VictimVerdict& x : v.victims)
    victims.push_back({{"cpu", x.cpu},
                       {"evidence", x.evidence},
                       {"shootdowns", x.shootdowns},
                       {"in_samples", x.seen},
                       {"stall_ns", x.stall_ns},
                       {"stall_per_shootdown_p50_ns", x.per_ipi_p50_ns},
                       {"foreign_flushes", x.foreign},
                       {"own_outside_releases", x.own_outside},
                       {"own_outside_releases_stall_ns", x.own_outside_stall_ns},
                       {"tlb_delta", x.tlb_delta},
                       {"off_cpu_in_release", x.off_cpu_in_release},
                       {"flush_requests", x.flush_requests},
                       {"flush_requests_delivered", x.flush_requests_delivered},
                       {"flushes_unseen", x.flushes_unseen},
                       {"broadcast_flush", x.broadcast_flush}});
  return json{{"lines", verdict_lines(r, a)},
              {"unknown", v.unknown},
              {"releases", v.releases},
              {"release_window_ns", v.release_window_ns},
              {"victims", victims}};
}

json raw_windows(const Result& r) {
  json out = json::array();
  for (const auto& v : r.victims) {
    for (const auto& rel : r.releases) {
      const std::int64_t from = rel.before_ns - kRawWindowPadNs;
      const std::int64_t to = rel.after_ns + r.plan.settle_ns + kRawWindowPadNs;
      auto lo = std::lower_bound(v.end_ns.begin(), v.end_ns.end(), from);
      auto hi = std::upper_bound(lo, v.end_ns.end(), to);
      auto i0 = static_cast<std::size_t>(lo - v.end_ns.begin());
      auto i1 = static_cast<std::size_t>(hi - v.end_ns.begin());
      // A result read back from JSON (windows_only) holds exactly the samples
      // that were kept: a window that was cut holds kRawWindowMaxSamples.
      const bool truncated = v.windows_only ? i1 - i0 >= kRawWindowMaxSamples : i1 - i0 > kRawWindowMaxSamples;
      if (truncated) i1 = i0 + kRawWindowMaxSamples;
      std::vector<std::int64_t> t, lat;
      t.reserve(i1 - i0);
      lat.reserve(i1 - i0);
      for (std::size_t i = i0; i < i1; ++i) {
        t.push_back(v.end_ns[i] - from);
        lat.push_back(v.lat_ns[i]);
      }
      out.push_back(json{{"victim_cpu", v.cpu},
                         {"release", rel.index},
                         {"origin_ns", from},
                         // The position in the series written (label_runs cover it), not
                         // the number among samples a folding store measured.
                         {"first_sample", v.windows_only && i0 < v.size() ? static_cast<std::size_t>(v.index[i0]) : i0},
                         {"truncated", truncated},
                         {"end_offset_ns", std::move(t)},
                         {"latency_ns", std::move(lat)}});
    }
  }
  return out;
}

// Kernel events as column arrays (docs/formats.md "trace.events_table"):
// the first kResultMaxEvents, times relative to measure.start_ns, types as
// codes into type_codes (EventType values).
json events_table_json(const Result& r) {
  const auto& ev = r.trace.events;
  const std::size_t n = std::min(ev.size(), kResultMaxEvents);
  std::vector<std::int64_t> t, a, b, c;
  std::vector<std::int32_t> cpu, tid, chain, mask;
  std::vector<int> type;
  for (auto* col : {&t, &a, &b, &c}) col->reserve(n);
  for (auto* col : {&cpu, &tid, &chain, &mask}) col->reserve(n);
  type.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const KernelEvent& e = ev[i];
    t.push_back(e.mono_ns - r.measure_start_ns);
    cpu.push_back(e.cpu);
    type.push_back(static_cast<int>(e.type));
    tid.push_back(e.tid);
    a.push_back(e.a);
    b.push_back(e.b);
    c.push_back(e.c);
    chain.push_back(e.callchain);
    mask.push_back(e.cpumask);
  }
  json codes = json::array();
  for (int k = 0; k < kEventTypeCount; ++k) codes.push_back(event_type_name(static_cast<EventType>(k)));
  json masks = json::array();
  for (const CpuMask& m : r.trace.cpumasks) masks.push_back(format_cpumask(m));
  return json{{"type_codes", std::move(codes)},
              {"mono_ns", std::move(t)},
              {"cpu", std::move(cpu)},
              {"type", std::move(type)},
              {"tid", std::move(tid)},
              {"a", std::move(a)},
              {"b", std::move(b)},
              {"c", std::move(c)},
              {"callchain", std::move(chain)},
              {"cpumask", std::move(mask)},
              {"cpumasks", std::move(masks)}};
}

json symbols_json(const KernelTrace& t) {
  json out = json::object();
  for (const auto& [addr, name] : t.symbols) out[fmt::format("0x{:x}", addr)] = name;
  return out;
}

json trace_counts_json(const Analysis& a) {
  json out = json::array();
  for (const auto& c : a.event_counts) out.push_back({{"cpu", c.cpu}, {"event", c.event}, {"count", c.count}});
  return out;
}

}  // namespace

namespace {

json quantiles_json(const Quantiles& q) {
  return {{"count", q.count}, {"p50", q.p50}, {"p90", q.p90}, {"max", q.max}, {"total", q.total}};
}

// Kernel backtraces of the culprit's reason-4 flushes and IPI sends, grouped
// by identical symbolized chains, most frequent first (the article's tables).
json callchains_json(const KernelTrace& t) {
  std::map<std::pair<std::string, std::vector<std::string>>, std::int64_t> groups;
  for (const auto& e : t.events) {
    if (e.callchain < 0 || static_cast<std::size_t>(e.callchain) >= t.callchains.size()) continue;
    groups[{event_type_name(e.type), t.callchains[static_cast<std::size_t>(e.callchain)].symbols}]++;
  }
  std::vector<std::pair<std::int64_t, const std::pair<std::string, std::vector<std::string>>*>> order;
  for (const auto& g : groups) order.emplace_back(g.second, &g.first);
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  json out = json::array();
  for (std::size_t i = 0; i < order.size() && i < 32; ++i)
    out.push_back({{"event", order[i].second->first}, {"count", order[i].first}, {"frames", order[i].second->second}});
  return out;
}

json attribution_json(const Result& r, const Analysis& a) {
  const Attribution& at = a.attribution;
  json j{{"available", at.available}, {"note", at.note}};
  json codes = json::array();
  for (int l = 0; l < kStallLabelCount; ++l) codes.push_back(label_name(static_cast<StallLabel>(l)));
  j["label_codes"] = codes;
  json vs = json::array();
  for (std::size_t i = 0; i < at.victims.size(); ++i) {
    const VictimAttribution& v = at.victims[i];
    json samples, stall;
    for (int l = 0; l < kStallLabelCount; ++l) {
      samples[label_name(static_cast<StallLabel>(l))] = v.samples[l];
      stall[label_name(static_cast<StallLabel>(l))] = v.stall_ns[l];
    }
    json funcs = json::object();
    for (const auto& [name, n] : v.ipi_functions) funcs[name] = n;
    json runs = json::array();
    // Read back, v.labels cover only the kept samples: the saved ones cover all.
    const VictimAttribution* saved = nullptr;
    if (r.saved_attribution)
      for (const auto& sv : r.saved_attribution->victims)
        if (sv.cpu == v.cpu) saved = &sv;
    for (const auto& [code, n] : label_runs(saved ? saved->labels : v.labels)) runs.push_back({code, n});
    json on_cpu = json::array();  // null: unknown (the release's raw window was folded)
    for (const auto& on : v.release_on_cpu) on_cpu.push_back(on ? json(*on) : json(nullptr));
    json jv{{"cpu", v.cpu},
            {"victim_tid", v.victim_tid},
            {"baseline_median_ns", v.baseline_median_ns},
            {"stall_threshold_ns", v.stall_threshold_ns},
            {"shootdowns",
             {{"received", v.shootdowns_received},
              {"matched", v.shootdowns_matched},
              {"stalled", v.shootdowns_stalled},
              {"wrong_cpu", v.wrong_cpu_flushes},
              {"flush_ipis", v.flush_ipis},
              {"recall", v.recall},
              {"flush_requests", v.flush_requests},
              {"flush_requests_delivered", v.flush_requests_delivered},
              {"outside_releases", v.shootdowns_outside_releases},
              {"outside_releases_matched", v.shootdowns_outside_matched},
              {"outside_releases_stall_ns", v.shootdowns_outside_stall_ns}}},
            {"shootdown_ipis", v.shootdown_ipis},
            {"other_ipis", v.other_ipis},
            {"samples", samples},
            {"stall_ns", stall},
            {"stall_per_shootdown_ns", quantiles_json(v.stall_per_shootdown)},
            {"ipi_handler_ns", quantiles_json(v.handler_ns)},
            {"other_ipi_handler_ns", quantiles_json(v.other_handler_ns)},
            {"delivery_ns", quantiles_json(v.delivery_ns)},
            {"ipi_functions", funcs},
            {"offcpu_source", v.sched_switch ? "sched_switch" : "tid-heuristic"},
            {"offcpu_ns", v.offcpu_ns},
            {"offcpu_intervals", v.offcpu_intervals},
            {"releases_on_cpu", v.sched_switch ? json(v.releases_on_cpu) : json(nullptr)},
            {"release_on_cpu", on_cpu},
            {"label_runs", runs}};
    if (v.tlb_counted >= 0)
      jv["tlb_accounting"] = {
          {"counted", v.tlb_counted},
          {"traced_remote", v.tlb_traced_remote},
          {"traced_wrong_cpu", v.tlb_traced_wrong_cpu},
          {"lazy_tlb", v.tlb_lazy},
          {"counted_not_traced", v.tlb_untraced},
          {"traced_beyond_count", v.tlb_traced_beyond},
          {"local_wrong_cpu", v.tlb_local_wrong_cpu},
          {"local_flush_runs", v.tlb_local_flush_runs < 0 ? json(nullptr) : json(v.tlb_local_flush_runs)},
          {"rule", v.tlb_untraced_rule}};
    if (i < a.clean_victims.size()) {
      json ph;
      for (const auto& ps : a.clean_victims[i].phases) ph[to_string(ps.phase)] = phase_json(ps);
      jv["clean_phases"] = ph;
    }
    vs.push_back(jv);
  }
  j["victims"] = vs;
  json own = json::array();
  for (const OwnFlush& f : at.own_flushes)
    own.push_back({{"mono_ns", f.mono_ns},
                   {"cpu", f.cpu},
                   {"tid", f.tid},
                   {"thread", f.thread},
                   {"pages", f.pages},
                   {"cause", f.cause},
                   {"kernel_path", f.kernel_path}});
  j["own_flushes"] = own;
  return j;
}

json probe_process_json(const ProbeProcess& p) {
  return json{{"pid", p.pid},
              {"ppid", p.ppid},
              {"comm", p.comm},
              {"image", p.image},
              {"cpu", p.cpu},
              {"fate", probe_fate_name(p.fate)},
              {"successor_pid", p.successor_pid},
              {"successor_comm", p.successor_comm},
              {"error", p.error},
              {"samples", p.samples},
              {"probed_ns", p.probed_ns}};
}

// The probed process and every process it saw.
json probe_json(const ProbeProcess& probe, const std::vector<ProbeProcess>& seen) {
  json pj = probe_process_json(probe);
  json processes = json::array();
  for (const auto& p : seen) processes.push_back(probe_process_json(p));
  pj["processes"] = processes;
  return pj;
}

json allocator_json(const AllocatorReport& al) {
  return json{{"name", al.name},
              {"library", al.library},
              {"version", al.version},
              {"conf", al.conf},
              {"settings", al.settings},
              {"purge_call", al.purge_call},
              {"blocks", al.blocks},
              {"live_bytes", al.live_bytes},
              {"freed_bytes", al.freed_bytes},
              {"allocator_free_bytes", al.allocator_free_bytes},
              {"allocator_free_source", al.allocator_free_source}};
}

// The memory kept after the releases and, where the run can say, the cost per GiB released.
json memory_json(const Result& r, const Analysis& a) {
  const MemoryKept& m = *r.memory;
  json mj{{"released_bytes", m.released_bytes},
          {"rss_before", m.rss_before},
          {"rss_settled", m.rss_settled},
          {"kept_bytes", m.kept_bytes}};
  if (const auto c = release_cost(r, a.verdict)) {
    auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
    mj["per_gib"] = json{{"gib_released", c->gib_released},
                         {"shootdowns_per_victim", num(c->shootdowns_per_gib)},
                         {"stall_ms_per_victim", num(c->stall_ms_per_gib)},
                         {"release_ms", num(c->release_ms_per_gib)},
                         {"kept_mib", num(c->kept_mib_per_gib)}};
  }
  return mj;
}

json doctor_json(const std::vector<DoctorFinding>& findings) {
  json doc = json::array();
  for (const auto& f : findings)
    doc.push_back({{"status", to_string(f.status)},
                   {"name", f.name},
                   {"found", f.found},
                   {"advice", f.advice},
                   {"undermines_numbers", f.undermines_numbers}});
  return doc;
}

json releases_json(const std::vector<Release>& releases) {
  json rels = json::array();
  for (const auto& rel : releases)
    rels.push_back({{"index", rel.index},
                    {"strategy", strategy_name(rel.strategy)},
                    {"bytes", rel.bytes},
                    {"partial", rel.partial},
                    {"before_ns", rel.before_ns},
                    {"after_ns", rel.after_ns},
                    {"duration_ns", rel.duration_ns()}});
  return rels;
}

// A run's own process: its pid and its threads' roles.
json own_process_json(const Result& r) {
  json threads = json::array();
  for (const auto& [tid, role] : r.own_threads) threads.push_back({{"tid", tid}, {"role", role}});
  return {{"pid", r.own_pid}, {"threads", threads}};
}

json victims_json(const Analysis& a) {
  json vs = json::array();
  for (const auto& va : a.victims) {
    json v{{"cpu", va.cpu}, {"pages_per_batch", va.pages_per_batch}, {"samples", va.samples}};
    json ph;
    for (const auto& ps : va.phases) ph[to_string(ps.phase)] = phase_json(ps);
    v["phases"] = ph;
    v["spread_windows"] = va.spread_windows;
    v["spread_window_ns"] = va.spread_window_ns;
    vs.push_back(v);
  }
  return vs;
}

json intervals_json(const Result& r) {
  json ivs = json::array();
  for (const auto& iv : r.intervals) {
    const Summary& s = iv.summary;
    ivs.push_back({{"victim_cpu", iv.victim_cpu},
                   {"start_ns", iv.start_ns},
                   {"end_ns", iv.end_ns},
                   {"phase", to_string(iv.phase)},
                   {"count", s.count},
                   {"min", s.min},
                   {"mean", s.mean},
                   {"p50", s.p50},
                   {"p90", s.p90},
                   {"p99", s.p99},
                   {"p999", s.p999},
                   {"max", s.max},
                   {"histogram", hdr::encode_compressed_base64(iv.histogram())}});
    if (iv.folded) ivs.back()["folded"] = true;
  }
  return ivs;
}

json interrupts_json(const Result& r) {
  json cs = json::array();
  for (const auto& c : r.counters)
    cs.push_back(
        {{"cpu", c.cpu}, {"role", to_string(c.role)}, {"tlb", c.tlb}, {"cal", c.cal}, {"loc", c.loc}, {"res", c.res}});
  return {{"source", "/proc/interrupts"},
          {"start_ns", r.interrupts_start_ns},
          {"span_ns", r.interrupts_span_ns},
          {"deltas", cs}};
}

// A run past its memory limit: the events counted, not kept.
json folded_json(const Result& r) {
  json tlb = json::array();
  for (const auto& [key, n] : r.trace.folded.tlb_flush) {
    auto it = r.trace.folded.tlb_flush_remote.find(key);
    const std::int64_t remote = it == r.trace.folded.tlb_flush_remote.end() ? 0 : it->second;
    tlb.push_back({{"cpu", key.first}, {"reason", key.second}, {"count", n}, {"in_remote_run", remote}});
  }
  return {{"from_ns", r.trace.folded.from_ns - r.measure_start_ns},
          {"until_ns", r.trace.folded.until_ns - r.measure_start_ns},
          {"events", r.trace.folded.events},
          {"tlb_flush", tlb}};
}

json trace_json(const Result& r, const Analysis& a) {
  json t = {{"enabled", r.trace.enabled},    {"status", r.trace.status},           {"tracepoints", r.trace.tracepoints},
            {"missing", r.trace.missing},    {"lost_events", r.trace.lost_events}, {"events", a.event_total},
            {"counts", trace_counts_json(a)}};
  t["callchains"] = callchains_json(r.trace);
  t["events_truncated"] = r.events_truncated || r.trace.events.size() > kResultMaxEvents;
  t["events_table"] = events_table_json(r);
  if (r.trace.folded.events > 0 || r.trace.folded.until_ns > 0) t["folded"] = folded_json(r);
  t["symbols"] = symbols_json(r.trace);
  return t;
}

}  // namespace

json result_json(const Result& r, const Analysis& a) {
  json j;
  j["schema_version"] = r.schema_version;
  j["tool"] = "shootdown";
  j["run_id"] = r.run_id;
  j["started_at"] = r.started_at;
  j["command_line"] = r.command_line;
  j["complete"] = r.complete;
  j["incomplete_reason"] = r.incomplete_reason;
  if (r.probe) {
    j["probe"] = probe_json(*r.probe, r.probe_seen);
    if (r.probe_callsites) j["callsites"] = json::parse(blame_json(*r.probe_callsites));
  }
  if (r.allocator) j["allocator"] = allocator_json(*r.allocator);
  if (r.memory) j["memory"] = memory_json(r, a);
  j["summary"] = summary_section(r, a);
  j["environment"] = env_json(r.env);
  j["plan"] = plan_json(r.plan);
  j["warnings"] = r.warnings;
  j["doctor"] = doctor_json(r.doctor);
  j["measure"] = {{"start_ns", r.measure_start_ns},
                  {"end_ns", r.measure_end_ns},
                  {"clock", "CLOCK_MONOTONIC"},
                  {"realtime_offset_ns", r.realtime_offset_ns}};
  j["releases"] = releases_json(r.releases);
  if (r.own_pid > 0) j["process"] = own_process_json(r);
  j["release_duration_ns"] = summary_json(a.release_duration);
  j["victims"] = victims_json(a);
  j["intervals"] = intervals_json(r);
  j["raw_windows"] = raw_windows(r);
  j["interrupts"] = interrupts_json(r);
  j["trace"] = trace_json(r, a);
  j["attribution"] = attribution_json(r, a);
  return j;
}

std::string result_to_string(const Result& r, const Analysis& a) {
  return result_json(r, a).dump(1) + "\n";
}

}  // namespace shootdown::sink
