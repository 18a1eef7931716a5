// SPDX-License-Identifier: Apache-2.0
#include "sink/json_read.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/cpulist.hpp"
#include "core/hdr/codec.hpp"
#include "core/stats.hpp"
#include "sink/json.hpp"

namespace shootdown::sink {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw JsonReadError(path.empty() ? what : path + ": " + what);
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string join(const std::string& path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// A checked view of one JSON value and the path that names it in errors.
class Node {
 public:
  Node(const json& j, std::string path) : j_(&j), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const { return j_->is_object() && j_->contains(key); }

  Node operator[](const std::string& key) const {
    if (!j_->is_object()) fail(path_, "expected an object");
    auto it = j_->find(key);
    if (it == j_->end()) fail(join(path_, key), "missing");
    return Node(*it, join(path_, key));
  }
  Node operator[](std::size_t i) const { return Node((*j_)[i], join(path_, i)); }

  std::size_t array_size() const {
    if (!j_->is_array()) fail(path_, "expected an array");
    return j_->size();
  }
  const json& raw() const { return *j_; }

  std::int64_t i64() const {
    if (j_->is_number_integer()) return j_->get<std::int64_t>();
    if (j_->is_number_unsigned()) {
      const auto u = j_->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) fail(path_, "integer out of range");
      return static_cast<std::int64_t>(u);
    }
    fail(path_, "expected an integer");
  }
  int i32() const {
    const std::int64_t v = i64();
    if (v < INT32_MIN || v > INT32_MAX) fail(path_, "integer out of range");
    return static_cast<int>(v);
  }
  double f64() const {
    if (!j_->is_number()) fail(path_, "expected a number");
    return j_->get<double>();
  }
  bool boolean() const {
    if (!j_->is_boolean()) fail(path_, "expected true or false");
    return j_->get<bool>();
  }
  std::string str() const {
    if (!j_->is_string()) fail(path_, "expected a string");
    return j_->get<std::string>();
  }
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    const std::size_t n = array_size();
    for (std::size_t i = 0; i < n; ++i) out.push_back((*this)[i].str());
    return out;
  }
  std::vector<int> ints() const {
    std::vector<int> out;
    const std::size_t n = array_size();
    for (std::size_t i = 0; i < n; ++i) out.push_back((*this)[i].i32());
    return out;
  }
  std::vector<std::int64_t> i64s() const {
    std::vector<std::int64_t> out;
    const std::size_t n = array_size();
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back((*this)[i].i64());
    return out;
  }

 private:
  const json* j_;
  std::string path_;
};

Summary read_summary(const Node& n) {
  Summary s;
  s.count = n["count"].i64();
  s.min = n["min"].f64();
  s.mean = n["mean"].f64();
  s.p50 = n["p50"].f64();
  s.p90 = n["p90"].f64();
  s.p99 = n["p99"].f64();
  s.p999 = n["p999"].f64();
  if (n.has("p9999")) s.p9999 = n["p9999"].f64();  // since 0.2: optional in older results
  if (n.has("p99999")) s.p99999 = n["p99999"].f64();
  s.max = n["max"].f64();
  return s;
}

PhaseStats read_phase(const Node& x, Phase p) {
  PhaseStats ps;
  ps.phase = p;
  ps.per_batch = read_summary(x["per_batch_ns"]);
  ps.per_page = read_summary(x["per_page_ns"]);
  ps.duration_ns = x["duration_ns"].i64();
  if (x.has("stall_lost_ns")) ps.stall_lost_ns = x["stall_lost_ns"].i64();  // optional: older results
  if (x.has("beyond_baseline_spread")) {
    for (const std::string& name : x["beyond_baseline_spread"].strings()) {
      int c = 0;
      while (c < kColumnCount && name != column_name(static_cast<Column>(c))) ++c;
      if (c == kColumnCount) fail(x["beyond_baseline_spread"].path(), "unknown column '" + name + "'");
      ps.beyond_spread = static_cast<std::uint16_t>(ps.beyond_spread | (1u << c));
    }
  }
  return ps;
}

Environment read_env(const Node& n) {
  Environment e;
  e.hostname = n["hostname"].str();
  e.kernel = n["kernel"].str();
  e.kernel_version = n["kernel_version"].str();
  e.machine = n["machine"].str();
  e.cpu_model = n["cpu_model"].str();
  e.cmdline = n["cmdline"].str();
  e.thp_enabled = n["thp_enabled"].str();
  e.thp_defrag = n["thp_defrag"].str();
  e.virtualized = n["virtualized"].boolean();
  e.hypervisor = n["hypervisor"].str();
  e.constant_tsc = n["constant_tsc"].boolean();
  e.nonstop_tsc = n["nonstop_tsc"].boolean();
  e.pcid = n["pcid"].boolean();
  e.invpcid = n["invpcid"].boolean();
  e.clocksource = n["clocksource"].str();
  e.online_cpus = n["online_cpus"].i32();
  e.numa_nodes = n["numa_nodes"].i32();
  e.build_type = n["build_type"].str();
  e.version = n["version"].str();
  e.tsc_hz = n["tsc_hz"].f64();
  e.tsc_hz_pre = n["tsc_hz_pre"].f64();
  e.tsc_drift_ppm = n["tsc_drift_ppm"].f64();
  e.warnings = n["warnings"].strings();
  return e;
}

ReleaseStrategy read_strategy(const Node& n) {
  const std::string s = n.str();
  if (auto v = find_strategy(s)) return *v;
  fail(n.path(), "unknown release strategy '" + s + "'");
}

PageMode read_page_mode(const Node& n) {
  const std::string s = n.str();
  if (auto v = find_page_mode(s)) return *v;
  fail(n.path(), "unknown page mode '" + s + "' (expected " + page_mode_list() + ")");
}

Plan read_plan(const Node& n) {
  Plan p;
  p.culprit_cpu = n["culprit_cpu"].i32();
  p.victim_cpus = n["victim_cpus"].ints();
  p.cpu_choice = n["cpu_choice"].str();
  p.chunk_size = n["chunk_size"].i64();
  p.chunk_size_requested = n["chunk_size_requested"].i64();
  p.chunk_capped = n["chunk_capped"].boolean();
  p.batch = n["batch"].i64();
  p.report_every = n["report_every"].i64();
  // Optional: results before intervals by time have none.
  if (n.has("report_every_ns")) p.report_every_ns = n["report_every_ns"].i64();
  p.pages = read_page_mode(n["pages"]);
  p.release = read_strategy(n["release"]);
  // Optional: results before the paced strategies have neither.
  if (n.has("pace_step")) p.pace_step = n["pace_step"].i64();
  if (n.has("pace_gap_ns")) p.pace_gap_ns = n["pace_gap_ns"].i64();
  if (n.has("allocator_conf")) p.allocator_conf = n["allocator_conf"].str();
  if (n.has("allocator_purge")) p.allocator_purge = n["allocator_purge"].boolean();
  if (p.pace_step < 0) fail(join(n.path(), "pace_step"), "must not be negative");
  if (p.pace_gap_ns < 0) fail(join(n.path(), "pace_gap_ns"), "must not be negative");
  if (auto t = parse_trigger(n["trigger"].str()))
    p.trigger = *t;
  else
    fail(join(n.path(), "trigger"), "unknown '" + n["trigger"].str() + "' (expected after, enter or command)");
  p.trigger_after_ns = n["trigger_after_ns"].i64();
  p.repeat = n["repeat"].i32();
  p.every_ns = n["every_ns"].i64();
  p.baseline_ns = n["baseline_ns"].i64();
  p.settle_ns = n["settle_ns"].i64();
  p.after_ns = n["after_ns"].i64();
  if (auto t = parse_trace_mode(n["trace"].str()))
    p.trace = *t;
  else
    fail(join(n.path(), "trace"), "unknown '" + n["trace"].str() + "' (expected auto, on, off, count, bpf or ring)");
  p.stall_threshold_ns = n["stall_threshold_ns"].i64();
  p.stall_factor = n["stall_factor"].f64();
  p.mlock = n["mlock"].boolean();
  if (n.has("rt")) p.rt = n["rt"].boolean();                            // added within schema 1: optional
  if (n.has("memory_limit")) p.memory_limit = n["memory_limit"].i64();  // added within schema 1: optional
  if (p.memory_limit < 0) fail(join(n.path(), "memory_limit"), "must not be negative");
  p.numa_node = n["numa_node"].i32();
  if (p.batch <= 0) fail(join(n.path(), "batch"), "must be positive");
  return p;
}

Phase phase_from(const Node& n) {
  const std::string s = n.str();
  for (Phase p : {Phase::kBaseline, Phase::kRelease, Phase::kAfter})
    if (s == to_string(p)) return p;
  fail(n.path(), "unknown phase '" + s + "' (expected baseline, release or after)");
}

void read_victims(const Node& n, Analysis& a) {
  const std::size_t count = n.array_size();
  for (std::size_t i = 0; i < count; ++i) {
    const Node v = n[i];
    VictimAnalysis va;
    va.cpu = v["cpu"].i32();
    va.pages_per_batch = v["pages_per_batch"].i64();
    va.samples = v["samples"].i64();
    const Node ph = v["phases"];
    for (Phase p : {Phase::kBaseline, Phase::kRelease, Phase::kAfter}) {
      va.phases.push_back(read_phase(ph[to_string(p)], p));
    }
    if (v.has("spread_windows")) va.spread_windows = v["spread_windows"].i32();
    if (v.has("spread_window_ns")) va.spread_window_ns = v["spread_window_ns"].i64();
    a.victims.push_back(std::move(va));
  }
}

void read_intervals(const Node& n, Result& r) {
  const std::size_t count = n.array_size();
  r.intervals.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const Node x = n[i];
    Interval iv;
    iv.victim_cpu = x["victim_cpu"].i32();
    iv.start_ns = x["start_ns"].i64();
    iv.end_ns = x["end_ns"].i64();
    (void)phase_from(x["phase"]);
    if (auto ph = parse_phase(x["phase"].str()))
      iv.phase = *ph;
    else
      fail(x["phase"].path(), "unknown '" + x["phase"].str() + "' (expected baseline, release or after)");
    const Node h = x["histogram"];
    auto dec = hdr::decode_base64(h.str());
    if (!dec) fail(h.path(), dec.error());
    const hdr::Histogram layout = make_latency_histogram();
    if (!dec->same_layout(layout))
      fail(h.path(),
           fmt::format("histogram layout {}..{} ns, {} digits; expected 1..{} ns, 3 digits", dec->lowest_discernible(),
                       dec->highest_trackable(), dec->significant_figures(), layout.highest_trackable()));
    iv.set_histogram(dec.value());
    if (iv.total_count() != x["count"].i64())
      fail(h.path(), fmt::format("holds {} samples but count is {}", iv.total_count(), x["count"].i64()));
    if (x.has("folded")) iv.folded = x["folded"].boolean();  // added within schema 1: optional
    r.intervals.push_back(std::move(iv));
  }
}

// Raw windows become partial VictimSamples: the union of each victim's
// windows, in time order, each sample with its original index.
void read_raw_windows(const Node& n, Result& r, const Analysis& a) {
  struct Sample {
    std::int64_t index, end, lat;
  };
  std::map<int, std::vector<Sample>> per_cpu;
  const std::size_t count = n.array_size();
  for (std::size_t i = 0; i < count; ++i) {
    const Node w = n[i];
    const int cpu = w["victim_cpu"].i32();
    (void)w["release"].i32();
    (void)w["truncated"].boolean();
    const std::int64_t origin = w["origin_ns"].i64();
    const std::int64_t first = w["first_sample"].i64();
    const auto t = w["end_offset_ns"].i64s();
    const auto lat = w["latency_ns"].i64s();
    if (t.size() != lat.size())
      fail(w.path(), fmt::format("end_offset_ns has {} entries but latency_ns {}", t.size(), lat.size()));
    auto& out = per_cpu[cpu];
    for (std::size_t k = 0; k < t.size(); ++k)
      out.push_back(Sample{first + static_cast<std::int64_t>(k), origin + t[k], lat[k]});
  }
  for (auto& [cpu, samples] : per_cpu) {
    std::sort(samples.begin(), samples.end(), [](const Sample& x, const Sample& y) { return x.index < y.index; });
    samples.erase(std::unique(samples.begin(), samples.end(),
                              [](const Sample& x, const Sample& y) { return x.index == y.index; }),
                  samples.end());
    VictimSamples v;
    v.cpu = cpu;
    v.windows_only = true;
    for (const auto& va : a.victims)
      if (va.cpu == cpu) v.pages_per_batch = va.pages_per_batch;
    v.start_ns = samples.empty() ? 0 : samples.front().end - samples.front().lat;
    for (const auto& s : samples) {
      v.index.push_back(s.index);
      v.end_ns.push_back(s.end);
      v.lat_ns.push_back(s.lat);
    }
    for (std::size_t k = 1; k < v.end_ns.size(); ++k)
      if (v.end_ns[k] < v.end_ns[k - 1]) fail(n.path(), fmt::format("victim cpu{}: sample times go backwards", cpu));
    if (!v.index.empty()) r.victims.push_back(std::move(v));
  }
}

// trace.events_table (column arrays) back into KernelTrace::events.
void read_events_table(const Node& n, Result& r) {
  const auto codes = n["type_codes"].strings();
  std::vector<EventType> type_of;
  for (std::size_t k = 0; k < codes.size(); ++k) {
    int found = -1;
    for (int t = 0; t < kEventTypeCount; ++t)
      if (codes[k] == event_type_name(static_cast<EventType>(t))) found = t;
    if (found < 0) fail(join(n["type_codes"].path(), k), "unknown event type '" + codes[k] + "'");
    type_of.push_back(static_cast<EventType>(found));
  }
  const auto t = n["mono_ns"].i64s();
  const auto cpu = n["cpu"].i64s();
  const auto type = n["type"].i64s();
  const auto tid = n["tid"].i64s();
  const auto a = n["a"].i64s();
  const auto b = n["b"].i64s();
  const auto c = n["c"].i64s();
  const auto chain = n["callchain"].i64s();
  for (const char* col : {"cpu", "type", "tid", "a", "b", "c", "callchain"})
    if (n[col].array_size() != t.size())
      fail(join(n.path(), col), fmt::format("has {} entries but mono_ns {}", n[col].array_size(), t.size()));
  // Whole ipi_send_cpumask targets (CPUs beyond 63): results saved before
  // they existed have neither column, and `a` holds CPUs 0-63.
  std::vector<std::int64_t> mask;
  if (n.has("cpumask")) {
    mask = n["cpumask"].i64s();
    if (mask.size() != t.size())
      fail(join(n.path(), "cpumask"), fmt::format("has {} entries but mono_ns {}", mask.size(), t.size()));
  }
  if (n.has("cpumasks")) {
    const auto lists = n["cpumasks"].strings();
    for (std::size_t k = 0; k < lists.size(); ++k) {
      auto cpus = lists[k].empty() ? Expected<std::vector<int>>(std::vector<int>{}) : parse_cpulist(lists[k]);
      if (!cpus) fail(join(n["cpumasks"].path(), k), "not a CPU list: " + cpus.error());
      r.trace.cpumasks.push_back(CpuMask::of(*cpus));
    }
  }
  auto i32 = [&](const std::vector<std::int64_t>& v, std::size_t i, const char* col) {
    if (v[i] < INT32_MIN || v[i] > INT32_MAX) fail(join(join(n.path(), col), i), "integer out of range");
    return static_cast<std::int32_t>(v[i]);
  };
  r.trace.events.reserve(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (type[i] < 0 || static_cast<std::size_t>(type[i]) >= type_of.size())
      fail(join(join(n.path(), "type"), i), fmt::format("code {} not in type_codes", type[i]));
    if (i > 0 && t[i] < t[i - 1]) fail(join(join(n.path(), "mono_ns"), i), "event times go backwards");
    KernelEvent e;
    e.mono_ns = r.measure_start_ns + t[i];
    e.cpu = i32(cpu, i, "cpu");
    e.tid = i32(tid, i, "tid");
    e.pid = e.tid;
    e.type = type_of[static_cast<std::size_t>(type[i])];
    e.a = a[i];
    e.b = b[i];
    e.c = c[i];
    // The callchains themselves are not kept (trace.callchains groups them).
    e.callchain = i32(chain, i, "callchain");
    if (!mask.empty()) {
      e.cpumask = i32(mask, i, "cpumask");
      if (e.cpumask >= static_cast<std::int64_t>(r.trace.cpumasks.size()))
        fail(join(join(n.path(), "cpumask"), i), fmt::format("mask {} not in cpumasks", e.cpumask));
    }
    r.trace.events.push_back(e);
  }
}

Quantiles read_quantiles(const Node& n) {
  Quantiles q;
  q.count = n["count"].i64();
  q.p50 = n["p50"].i64();
  q.p90 = n["p90"].i64();
  q.max = n["max"].i64();
  // Saved before totals existed: not known (an empty set's total is 0).
  q.total = n.has("total") ? n["total"].i64() : (q.count == 0 ? 0 : -1);
  return q;
}

void read_shootdowns(const Node& sd, VictimAttribution& v) {
  v.shootdowns_received = sd["received"].i64();
  v.shootdowns_matched = sd["matched"].i64();
  v.shootdowns_stalled = sd["stalled"].i64();
  v.wrong_cpu_flushes = sd["wrong_cpu"].i64();
  v.flush_ipis = sd["flush_ipis"].i64();
  v.recall = sd["recall"].f64();
  if (sd.has("flush_requests")) {  // absent in results saved before it existed
    v.flush_requests = sd["flush_requests"].i64();
    v.flush_requests_delivered = sd["flush_requests_delivered"].i64();
  }
  if (sd.has("outside_releases")) {  // older results: none
    v.shootdowns_outside_releases = sd["outside_releases"].i64();
    v.shootdowns_outside_matched = sd["outside_releases_matched"].i64();
    v.shootdowns_outside_stall_ns = sd["outside_releases_stall_ns"].i64();
  }
}

void read_ipi_functions(const Node& funcs, VictimAttribution& v) {
  if (!funcs.raw().is_object()) fail(funcs.path(), "expected an object");
  for (const auto& [name, count] : funcs.raw().items()) v.ipi_functions.emplace_back(name, funcs[name].i64());
  // Most frequent first, ties by name: the order attribute() gives.
  std::stable_sort(v.ipi_functions.begin(), v.ipi_functions.end(),
                   [](auto& p, auto& q) { return p.second > q.second; });
}

void read_tlb_accounting(const Node& t, VictimAttribution& v) {
  v.tlb_counted = t["counted"].i64();
  v.tlb_traced_remote = t["traced_remote"].i64();
  v.tlb_traced_wrong_cpu = t["traced_wrong_cpu"].i64();
  v.tlb_untraced = t["counted_not_traced"].i64();
  v.tlb_untraced_rule = t["rule"].str();
  // Split by evidence since the lazy_tlb field; before it, reason 5 was
  // not split and counted_not_traced could be negative: kept as saved.
  v.tlb_legacy = !t.has("lazy_tlb");
  if (!v.tlb_legacy) {
    v.tlb_lazy = t["lazy_tlb"].i64();
    v.tlb_traced_beyond = t["traced_beyond_count"].i64();
    v.tlb_local_wrong_cpu = t["local_wrong_cpu"].i64();
    v.tlb_local_flush_runs = t["local_flush_runs"].raw().is_null() ? -1 : t["local_flush_runs"].i64();
  }
}

// The labels, one per sample of the victim (at most its sample count).
void read_label_runs(const Node& runs, const Analysis& a, VictimAttribution& v) {
  std::int64_t limit = std::int64_t{1} << 32;
  for (const auto& va : a.victims)
    if (va.cpu == v.cpu) limit = va.samples;
  for (std::size_t k = 0; k < runs.array_size(); ++k) {
    const Node run = runs[k];
    if (run.array_size() != 2) fail(run.path(), "expected [label, count]");
    const std::int64_t code = run[0].i64(), count = run[1].i64();
    if (code < 0 || code >= kStallLabelCount) fail(run.path(), fmt::format("unknown label code {}", code));
    if (count < 0 || count > limit - static_cast<std::int64_t>(v.labels.size()))
      fail(run.path(), fmt::format("label runs cover more than the victim's {} samples", limit));
    v.labels.insert(v.labels.end(), static_cast<std::size_t>(count), static_cast<std::uint8_t>(code));
  }
}

VictimAttribution read_victim_attribution(const Node& x, const Analysis& a) {
  VictimAttribution v;
  v.cpu = x["cpu"].i32();
  v.victim_tid = x["victim_tid"].i32();
  v.baseline_median_ns = x["baseline_median_ns"].i64();
  v.stall_threshold_ns = x["stall_threshold_ns"].i64();
  read_shootdowns(x["shootdowns"], v);
  v.shootdown_ipis = x["shootdown_ipis"].i64();
  v.other_ipis = x["other_ipis"].i64();
  for (int l = 0; l < kStallLabelCount; ++l) {
    const char* name = label_name(static_cast<StallLabel>(l));
    v.samples[static_cast<std::size_t>(l)] = x["samples"][name].i64();
    v.stall_ns[static_cast<std::size_t>(l)] = x["stall_ns"][name].i64();
  }
  v.stall_per_shootdown = read_quantiles(x["stall_per_shootdown_ns"]);
  v.handler_ns = read_quantiles(x["ipi_handler_ns"]);
  v.other_handler_ns = read_quantiles(x["other_ipi_handler_ns"]);
  v.delivery_ns = read_quantiles(x["delivery_ns"]);
  read_ipi_functions(x["ipi_functions"], v);
  const std::string src = x["offcpu_source"].str();
  if (src != "sched_switch" && src != "tid-heuristic")
    fail(x["offcpu_source"].path(), "unknown '" + src + "' (expected sched_switch or tid-heuristic)");
  v.sched_switch = src == "sched_switch";
  v.offcpu_ns = x["offcpu_ns"].i64();
  v.offcpu_intervals = x["offcpu_intervals"].i64();
  v.releases_on_cpu = x["releases_on_cpu"].raw().is_null() ? -1 : x["releases_on_cpu"].i64();
  if (x.has("tlb_accounting")) read_tlb_accounting(x["tlb_accounting"], v);
  const Node roc = x["release_on_cpu"];
  for (std::size_t k = 0; k < roc.array_size(); ++k)
    v.release_on_cpu.push_back(roc[k].raw().is_null() ? std::nullopt : std::optional<bool>(roc[k].boolean()));
  read_label_runs(x["label_runs"], a, v);
  return v;
}

// A victim's phase tables from its clean samples only.
VictimAnalysis read_clean_phases(const Node& ph, int cpu, const Analysis& a) {
  VictimAnalysis ca;
  ca.cpu = cpu;
  for (const auto& va : a.victims)
    if (va.cpu == cpu) ca.pages_per_batch = va.pages_per_batch;
  for (Phase p : {Phase::kBaseline, Phase::kRelease, Phase::kAfter}) {
    const PhaseStats ps = read_phase(ph[to_string(p)], p);
    ca.samples += ps.per_batch.count;
    ca.phases.push_back(ps);
  }
  return ca;
}

OwnFlush read_own_flush(const Node& x) {
  OwnFlush f;
  f.mono_ns = x["mono_ns"].i64();
  f.cpu = x["cpu"].i32();
  f.tid = x["tid"].i32();
  f.thread = x["thread"].str();
  f.pages = x["pages"].i64();
  f.cause = x["cause"].str();
  const Node path = x["kernel_path"];
  for (std::size_t k = 0; k < path.array_size(); ++k) f.kernel_path.push_back(path[k].str());
  return f;
}

// attribution back into an Attribution (labels expanded from label_runs,
// one per original sample) and the clean-only phase tables into a.
Attribution read_attribution(const Node& n, Analysis& a) {
  Attribution at;
  at.available = n["available"].boolean();
  at.note = n["note"].str();
  const Node vs = n["victims"];
  std::vector<VictimAnalysis> clean;
  for (std::size_t i = 0; i < vs.array_size(); ++i) {
    const Node x = vs[i];
    VictimAttribution v = read_victim_attribution(x, a);
    if (x.has("clean_phases")) {
      VictimAnalysis ca = read_clean_phases(x["clean_phases"], v.cpu, a);
      if (clean.size() == i) clean.push_back(std::move(ca));
    }
    at.victims.push_back(std::move(v));
  }
  if (clean.size() == at.victims.size()) a.clean_victims = std::move(clean);
  if (n.has("own_flushes")) {  // older results: none
    const Node own = n["own_flushes"];
    for (std::size_t i = 0; i < own.array_size(); ++i) at.own_flushes.push_back(read_own_flush(own[i]));
  }
  return at;
}

ProbeProcess read_probe_process(const Node& n) {
  ProbeProcess p;
  p.pid = n["pid"].i32();
  p.ppid = n["ppid"].i32();
  p.comm = n["comm"].str();
  p.image = n["image"].i32();
  p.cpu = n["cpu"].i32();
  const std::string fate = n["fate"].str();
  const auto f = parse_probe_fate(fate);
  if (!f) fail(n["fate"].path(), fmt::format("unknown probe fate '{}'", fate));
  p.fate = *f;
  p.successor_pid = n["successor_pid"].i32();
  p.successor_comm = n["successor_comm"].str();
  p.error = n["error"].str();
  p.samples = n["samples"].i64();
  p.probed_ns = n["probed_ns"].i64();
  return p;
}

void read_probe(const Node& n, Result& r) {
  r.probe = read_probe_process(n);
  if (n.has("processes")) {
    const Node ps = n["processes"];
    for (std::size_t i = 0; i < ps.array_size(); ++i) r.probe_seen.push_back(read_probe_process(ps[i]));
  }
}

AllocatorReport read_allocator(const Node& n) {
  AllocatorReport al;
  al.name = n["name"].str();
  al.library = n["library"].str();
  al.version = n["version"].str();
  al.conf = n["conf"].str();
  al.settings = n["settings"].str();
  al.purge_call = n["purge_call"].str();
  al.blocks = n["blocks"].i64();
  al.live_bytes = n["live_bytes"].i64();
  al.freed_bytes = n["freed_bytes"].i64();
  al.allocator_free_bytes = n["allocator_free_bytes"].i64();
  al.allocator_free_source = n["allocator_free_source"].str();
  return al;
}

MemoryKept read_memory(const Node& n) {
  MemoryKept m;
  m.released_bytes = n["released_bytes"].i64();
  m.rss_before = n["rss_before"].i64();
  m.rss_settled = n["rss_settled"].i64();
  m.kept_bytes = n["kept_bytes"].i64();
  return m;
}

BlameReport read_callsites(const Node& c) {
  BlameReport b;
  b.pid = c["pid"].i32();
  b.command = c["command"].str();
  b.processes = c["processes"].i32();
  b.flushes = c["flushes"].i64();
  b.ipis = c["ipis"].i64();
  const Node sites = c["sites"];
  for (std::size_t i = 0; i < sites.array_size(); ++i) {
    const Node x = sites[i];
    CallSite cs;
    cs.stack = x["stack"].str();
    cs.frames = x["frames"].strings();
    cs.syscall = x["syscall"].str();
    cs.flushes = x["flushes"].i64();
    cs.ipis = x["ipis"].i64();
    cs.advice = x["advice"].str();
    b.sites.push_back(std::move(cs));
  }
  return b;
}

DoctorFinding read_doctor_finding(const Node& x) {
  DoctorFinding f;
  const std::string status = x["status"].str();
  bool known = false;
  for (DoctorStatus st : {DoctorStatus::kPass, DoctorStatus::kWarn, DoctorStatus::kFail})
    if (status == to_string(st)) {
      f.status = st;
      known = true;
    }
  if (!known) fail(x["status"].path(), "unknown status '" + status + "' (expected PASS, WARN or FAIL)");
  f.name = x["name"].str();
  f.found = x["found"].str();
  f.advice = x["advice"].str();
  f.undermines_numbers = x["undermines_numbers"].boolean();
  return f;
}

void read_measure(const Node& m, Result& r) {
  r.measure_start_ns = m["start_ns"].i64();
  r.measure_end_ns = m["end_ns"].i64();
  r.realtime_offset_ns = m["realtime_offset_ns"].i64();
  if (m["clock"].str() != "CLOCK_MONOTONIC") fail("measure.clock", "expected CLOCK_MONOTONIC");
}

void read_releases(const Node& rels, Result& r) {
  for (std::size_t i = 0; i < rels.array_size(); ++i) {
    const Node x = rels[i];
    Release rel;
    rel.index = x["index"].i32();
    rel.strategy = read_strategy(x["strategy"]);
    rel.bytes = x["bytes"].i64();
    if (x.has("partial")) rel.partial = x["partial"].boolean();  // optional: older results have none
    rel.before_ns = x["before_ns"].i64();
    rel.after_ns = x["after_ns"].i64();
    r.releases.push_back(rel);
  }
}

// A run's own process: its pid and its threads' roles.
void read_own_process(const Node& p, Result& r) {
  r.own_pid = p["pid"].i32();
  const Node th = p["threads"];
  for (std::size_t i = 0; i < th.array_size(); ++i) r.own_threads.emplace_back(th[i]["tid"].i32(), th[i]["role"].str());
}

void read_interrupts(const Node& irq, Result& r) {
  r.interrupts_span_ns = irq["span_ns"].i64();
  if (irq.has("start_ns")) r.interrupts_start_ns = irq["start_ns"].i64();
  const Node deltas = irq["deltas"];
  for (std::size_t i = 0; i < deltas.array_size(); ++i) {
    const Node x = deltas[i];
    CpuCounters c;
    c.cpu = x["cpu"].i32();
    if (auto role = parse_cpu_role(x["role"].str()))
      c.role = *role;
    else
      fail(x["role"].path(), "unknown '" + x["role"].str() + "' (expected culprit, victim or other)");
    c.tlb = x["tlb"].i64();
    c.cal = x["cal"].i64();
    c.loc = x["loc"].i64();
    c.res = x["res"].i64();
    r.counters.push_back(c);
  }
}

// A run past its memory limit: events counted, not kept.
void read_folded(const Node& f, Result& r) {
  r.trace.folded.from_ns = f["from_ns"].i64() + r.measure_start_ns;
  r.trace.folded.until_ns = f["until_ns"].i64() + r.measure_start_ns;
  r.trace.folded.events = f["events"].i64();
  const Node tlb = f["tlb_flush"];
  for (std::size_t i = 0; i < tlb.array_size(); ++i) {
    const std::pair<int, int> key{tlb[i]["cpu"].i32(), tlb[i]["reason"].i32()};
    r.trace.folded.tlb_flush[key] = tlb[i]["count"].i64();
    if (tlb[i].has("in_remote_run"))
      r.trace.folded.tlb_flush_remote[key] = tlb[i]["in_remote_run"].i64();
    else
      r.trace.folded.remote_split = false;
  }
}

void read_symbols(const Node& sym, Result& r) {
  if (!sym.raw().is_object()) fail(sym.path(), "expected an object");
  for (const auto& [key, value] : sym.raw().items()) {
    std::size_t used = 0;
    std::uint64_t addr = 0;
    try {
      addr = std::stoull(key, &used, 16);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != key.size()) fail(join(sym.path(), key), "expected a hex address as the key");
    r.trace.symbols[addr] = sym[key].str();
  }
}

void read_trace(const Node& t, Result& r) {
  r.trace.enabled = t["enabled"].boolean();
  r.trace.status = t["status"].str();
  r.trace.tracepoints = t["tracepoints"].strings();
  r.trace.missing = t["missing"].strings();
  r.trace.lost_events = t["lost_events"].i64();
  const Node counts = t["counts"];
  std::int64_t total = 0;
  for (std::size_t i = 0; i < counts.array_size(); ++i) {
    const Node x = counts[i];
    r.trace_counts.push_back(EventCount{x["cpu"].i32(), x["event"].str(), x["count"].i64()});
    total += r.trace_counts.back().count;
  }
  if (total != t["events"].i64())
    fail("trace.events", fmt::format("{} but the counts add up to {}", t["events"].i64(), total));
  // Added within schema 1: optional (older results keep only the counts).
  if (t.has("events_table")) read_events_table(t["events_table"], r);
  if (t.has("events_truncated")) r.events_truncated = t["events_truncated"].boolean();
  if (t.has("folded")) read_folded(t["folded"], r);
  if (t.has("symbols")) read_symbols(t["symbols"], r);
}

// The parsed document, once it says it is a result of the schema this
// shootdown reads.
json parse_result_document(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 6e1226
    std::string msg = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error".
    const auto at = msg.find("parse error");
    throw JsonReadError("not valid JSON: " + (at == std::string::npos ? msg : msg.substr(at)));
  }
  const Node root(j, "");
  if (!j.is_object()) fail("", "not a shootdown result (expected a JSON object)");
  if (!root.has("tool") || !j["tool"].is_string() || j["tool"] != "shootdown")
    fail("", "not a shootdown result (no \"tool\": \"shootdown\")");
  if (!root.has("schema_version")) fail("schema_version", "missing");
  const std::int64_t version = root["schema_version"].i64();
  if (version > kResultSchemaVersion)
    fail("schema_version", fmt::format("{} is newer than this shootdown reads ({}): use a newer shootdown", version,
                                       kResultSchemaVersion));
  if (version != kResultSchemaVersion)
    fail("schema_version", fmt::format("{} is not supported (this shootdown reads {})", version, kResultSchemaVersion));
  return j;
}

// The run's identity and the optional parts that come before the
// environment: probe, allocator, memory kept, call sites.
void read_header_parts(const Node& root, Result& r) {
  r.run_id = root["run_id"].str();
  r.started_at = root["started_at"].str();
  r.command_line = root["command_line"].str();
  r.complete = root["complete"].boolean();
  r.incomplete_reason = root["incomplete_reason"].str();
  if (root.has("probe")) read_probe(root["probe"], r);  // `shootdown probe` results since 0.3: optional
  if (root.has("allocator")) r.allocator = read_allocator(root["allocator"]);  // allocator arms since 0.3: optional
  if (root.has("memory")) r.memory = read_memory(root["memory"]);              // memory kept, since 0.3: optional
  if (root.has("callsites"))  // probe: who sent them (what the report shows of it)
    r.probe_callsites = read_callsites(root["callsites"]);
}

// The saved counts cover every event; trace.events maybe only the first kResultMaxEvents.
void count_events(const Result& r, Analysis& a) {
  a.event_counts = r.trace_counts;
  a.event_total = static_cast<std::int64_t>(r.trace.events.size());
  if (!r.trace_counts.empty()) {
    a.event_total = 0;
    for (const auto& c : r.trace_counts) a.event_total += c.count;
  }
}

}  // namespace

LoadedResult result_from_json(std::string_view text) {
  const json j = parse_result_document(text);
  const Node root(j, "");
  LoadedResult out;
  Result& r = out.result;
  Analysis& a = out.analysis;
  r.schema_version = static_cast<int>(root["schema_version"].i64());
  read_header_parts(root, r);
  r.env = read_env(root["environment"]);
  r.plan = read_plan(root["plan"]);
  r.warnings = root["warnings"].strings();
  if (root.has("doctor")) {  // added within schema 1: optional
    const Node doc = root["doctor"];
    for (std::size_t i = 0; i < doc.array_size(); ++i) r.doctor.push_back(read_doctor_finding(doc[i]));
  }
  read_measure(root["measure"], r);
  read_releases(root["releases"], r);
  if (root.has("process")) read_own_process(root["process"], r);  // a run's own process (older results: none)
  a.release_duration = read_summary(root["release_duration_ns"]);
  read_victims(root["victims"], a);
  read_intervals(root["intervals"], r);
  read_raw_windows(root["raw_windows"], r, a);
  read_interrupts(root["interrupts"], r);
  read_trace(root["trace"], r);
  count_events(r, a);
  if (root.has("attribution")) {
    r.saved_attribution = read_attribution(root["attribution"], a);
    a.attribution = restore_saved_attribution(r);
  }
  a.verdict = make_verdict(r, a);  // from the saved figures: the same sentence as the run printed
  return out;
}

}  // namespace shootdown::sink
