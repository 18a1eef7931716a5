#include "sink/json_read.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "core/hdr/codec.hpp"
#include "core/stats.hpp"
#include "sink/json.hpp"

namespace shootdown::sink {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw JsonReadError(path.empty() ? what : path + ": " + what);
}

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }
std::string join(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

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
  s.max = n["max"].f64();
  return s;
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
  p.pages = n["pages"].str();
  p.release = n["release"].str();
  p.trigger = n["trigger"].str();
  p.trigger_after_ns = n["trigger_after_ns"].i64();
  p.repeat = n["repeat"].i32();
  p.every_ns = n["every_ns"].i64();
  p.baseline_ns = n["baseline_ns"].i64();
  p.settle_ns = n["settle_ns"].i64();
  p.after_ns = n["after_ns"].i64();
  p.trace = n["trace"].str();
  p.stall_threshold_ns = n["stall_threshold_ns"].i64();
  p.stall_factor = n["stall_factor"].f64();
  p.mlock = n["mlock"].boolean();
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
      const Node x = ph[to_string(p)];
      PhaseStats ps;
      ps.phase = p;
      ps.per_batch = read_summary(x["per_batch_ns"]);
      ps.per_page = read_summary(x["per_page_ns"]);
      ps.duration_ns = x["duration_ns"].i64();
      va.phases.push_back(ps);
    }
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
    iv.phase = x["phase"].str();
    const Node h = x["histogram"];
    auto dec = hdr::decode_base64(h.str());
    if (!dec) fail(h.path(), dec.error());
    if (!dec->same_layout(iv.hist))
      fail(h.path(), fmt::format("histogram layout {}..{} ns, {} digits; expected 1..{} ns, 3 digits",
                                 dec->lowest_discernible(), dec->highest_trackable(), dec->significant_figures(),
                                 iv.hist.highest_trackable()));
    iv.hist = std::move(dec.value());
    if (iv.hist.total_count() != x["count"].i64())
      fail(h.path(), fmt::format("holds {} samples but count is {}", iv.hist.total_count(), x["count"].i64()));
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
    samples.erase(std::unique(samples.begin(), samples.end(), [](const Sample& x, const Sample& y) { return x.index == y.index; }),
                  samples.end());
    VictimSamples v;
    v.cpu = cpu;
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

}  // namespace

LoadedResult result_from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
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

  LoadedResult out;
  Result& r = out.result;
  Analysis& a = out.analysis;
  r.schema_version = static_cast<int>(version);
  r.run_id = root["run_id"].str();
  r.started_at = root["started_at"].str();
  r.command_line = root["command_line"].str();
  r.complete = root["complete"].boolean();
  r.incomplete_reason = root["incomplete_reason"].str();
  r.env = read_env(root["environment"]);
  r.plan = read_plan(root["plan"]);
  r.warnings = root["warnings"].strings();
  if (root.has("doctor")) {  // added within schema 1: optional
    const Node doc = root["doctor"];
    for (std::size_t i = 0; i < doc.array_size(); ++i) {
      const Node x = doc[i];
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
      r.doctor.push_back(std::move(f));
    }
  }
  const Node m = root["measure"];
  r.measure_start_ns = m["start_ns"].i64();
  r.measure_end_ns = m["end_ns"].i64();
  r.realtime_offset_ns = m["realtime_offset_ns"].i64();
  if (m["clock"].str() != "CLOCK_MONOTONIC") fail("measure.clock", "expected CLOCK_MONOTONIC");

  const Node rels = root["releases"];
  for (std::size_t i = 0; i < rels.array_size(); ++i) {
    const Node x = rels[i];
    Release rel;
    rel.index = x["index"].i32();
    rel.strategy = x["strategy"].str();
    rel.bytes = x["bytes"].i64();
    rel.before_ns = x["before_ns"].i64();
    rel.after_ns = x["after_ns"].i64();
    r.releases.push_back(rel);
  }
  a.release_duration = read_summary(root["release_duration_ns"]);
  read_victims(root["victims"], a);
  read_intervals(root["intervals"], r);
  read_raw_windows(root["raw_windows"], r, a);

  const Node irq = root["interrupts"];
  r.interrupts_span_ns = irq["span_ns"].i64();
  const Node deltas = irq["deltas"];
  for (std::size_t i = 0; i < deltas.array_size(); ++i) {
    const Node x = deltas[i];
    CpuCounters c;
    c.cpu = x["cpu"].i32();
    c.role = x["role"].str();
    c.tlb = x["tlb"].i64();
    c.cal = x["cal"].i64();
    c.loc = x["loc"].i64();
    c.res = x["res"].i64();
    r.counters.push_back(c);
  }

  const Node t = root["trace"];
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
  return out;
}

}  // namespace shootdown::sink
