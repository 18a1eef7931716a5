// SPDX-License-Identifier: Apache-2.0
#include "sink/compare_out.hpp"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace shootdown::sink {

namespace {

using compare::Metric;

std::string num(double x) {
  if (!std::isfinite(x)) return "-";
  const double a = std::fabs(x);
  if (a >= 10 || a == 0) return fmt::format("{:.0f}", x);
  return fmt::format("{:.1f}", x);
}
// Table cells: 4 significant characters or so ("376736" -> "377k").
std::string cnum(double x) {
  if (std::isfinite(x) && std::fabs(x) >= 1e5) return fmt::format("{:.0f}k", x / 1e3);
  if (std::isfinite(x) && std::fabs(x) >= 1e4) return fmt::format("{:.1f}k", x / 1e3);
  return num(x);
}
std::string snum(double x) {
  if (!std::isfinite(x)) return "-";
  const double a = std::fabs(x);
  if (a >= 10 || a == 0) return fmt::format("{:+.0f}", x);
  return fmt::format("{:+.1f}", x);
}
std::string pval(double p) {
  return p < 0.001 ? "<0.001" : fmt::format("{:.3f}", p);
}

nlohmann::json jnum(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

std::string cpus(const std::vector<int>& v) {
  std::string s;
  for (int c : v) s += (s.empty() ? "cpu" : ",cpu") + std::to_string(c);
  return s;
}

const compare::Spread& sp(const compare::ArmSummary& a, Metric m) {
  return a.metrics[static_cast<std::size_t>(m)];
}

}  // namespace

std::string compare_console(const CompareReport& r) {
  std::string o;
  std::string names;
  for (const auto& a : r.arms) names += (names.empty() ? "" : " vs ") + a.label;
  o += fmt::format("shootdown compare: {}\n", names);
  std::size_t run = 0;
  for (const auto& a : r.summary) run += a.trials;
  if (r.sequential)
    o += fmt::format("  up to {} trials per arm ({} run), seed {}, {:.1f} s{}\n", r.trials_per_arm, run, r.seed,
                     r.duration_s, r.complete ? "" : " (INCOMPLETE: " + r.incomplete_reason + ")");
  else
    o += fmt::format("  {} trials per arm, seed {}, {:.1f} s{}\n", r.trials_per_arm, r.seed, r.duration_s,
                     r.complete ? "" : " (INCOMPLETE: " + r.incomplete_reason + ")");
  o += fmt::format("  workload {}, chunk {}, culprit cpu{}, victims {}\n", r.workload, format_size(r.plan.chunk_size),
                   r.plan.culprit_cpu, cpus(r.plan.victim_cpus));
  // The answer first: one line per arm against the control.
  for (std::size_t k = 1; k < r.summary.size(); ++k) o += "  " + r.summary[k].verdict + "\n";
  if (r.sequential)
    for (std::size_t k = 1; k < r.summary.size(); ++k)
      if (r.summary[k].sequential) o += "  sequential: " + compare::sequential_line(r.summary[k], r.design) + "\n";
  for (const auto& n : r.notes) o += "  " + n + "\n";
  o += "\n";
  // Per-arm table: medians (IQR for the headline metric).
  o += fmt::format("{:<16} {:>19} {:>9} {:>9} {:>7} {:>10}\n", "arm", "stall us/release", "p99.9 us", "max us", "IPIs",
                   "release us");
  o += fmt::format("{:<16} {:>19} {:>9} {:>9} {:>7} {:>10}\n", "", "median (IQR)", "median", "median", "median",
                   "median");
  for (const auto& a : r.summary) {
    const auto& st = sp(a, Metric::kStallUs);
    const std::string stall = st.n ? fmt::format("{} ({}-{})", cnum(st.median), cnum(st.q1), cnum(st.q3)) : "-";
    std::string label = a.arm.size() > 16 ? a.arm.substr(0, 15) + "~" : a.arm;
    o += fmt::format("{:<16} {:>19} {:>9} {:>9} {:>7} {:>10}\n", label, stall, cnum(sp(a, Metric::kP999Us).median),
                     cnum(sp(a, Metric::kMaxUs).median), cnum(sp(a, Metric::kShootdowns).median),
                     cnum(sp(a, Metric::kReleaseUs).median));
  }
  if (r.summary.size() > 1) {
    o += fmt::format("\nvs {} (difference of medians, bootstrap 95% CI, Mann-Whitney p)\n", r.summary[0].arm);
    o += fmt::format("{:<16} {:<15} {:>10} {:>23} {:>8}\n", "arm", "metric", "diff", "95% CI", "p");
    for (std::size_t k = 1; k < r.summary.size(); ++k) {
      const auto& a = r.summary[k];
      bool first = true;
      for (Metric m : {Metric::kStallUs, Metric::kP999Us, Metric::kShootdowns, Metric::kIpiStallUs, Metric::kReleaseUs,
                       Metric::kUnexplainedUs}) {
        const auto& c = a.vs_control[static_cast<std::size_t>(m)];
        if (!c.available) continue;
        std::string label = first ? (a.arm.size() > 16 ? a.arm.substr(0, 15) + "~" : a.arm) : "";
        first = false;
        o += fmt::format("{:<16} {:<15} {:>10} {:>23} {:>8}\n", label, compare::metric_key(m), snum(c.diff),
                         fmt::format("[{}, {}]", num(c.ci.lo), num(c.ci.hi)), pval(c.mw.p));
      }
    }
  }
  for (const auto& g : r.gates)
    o += fmt::format("gate {}: {} ({})\n", g.failed ? "FAILED" : "passed", g.text, g.detail);
  return o;
}

namespace {

using nlohmann::json;

// The group-sequential design, or {"enabled": false} for the fixed one.
json sequential_design_json(const CompareReport& r) {
  json js = {{"enabled", r.sequential}};
  if (!r.sequential) return js;
  const auto& d = r.design;
  json b = json::array();
  for (double c : d.boundaries) b.push_back(jnum(c));
  js["method"] = "group-sequential Mann-Whitney on stall_us, Lan-DeMets alpha spending";
  js["spending"] = sequential::spending_name(d.spending);
  js["alpha"] = d.alpha;
  js["look_every"] = d.look_every;
  js["max_trials_per_arm"] = d.max_n;
  js["looks"] = d.looks;
  js["boundaries"] = b;
  js["alpha_spent"] = d.spent;
  return js;
}

json compare_plan_json(const Plan& p) {
  return {{"culprit_cpu", p.culprit_cpu},
          {"victim_cpus", p.victim_cpus},
          {"chunk_size", p.chunk_size},
          {"batch", p.batch},
          {"baseline_ns", p.baseline_ns},
          {"settle_ns", p.settle_ns},
          {"after_ns", p.after_ns},
          {"repeat", p.repeat},
          {"trace", trace_mode_name(p.trace)},
          {"stall_factor", p.stall_factor}};
}

// Per metric, the spread of an arm's trials.
json arm_metrics_json(const compare::ArmSummary& a) {
  json jm;
  for (Metric m : compare::kAllMetrics) {
    const auto& s = sp(a, m);
    jm[compare::metric_key(m)] = {{"n", s.n},          {"median", jnum(s.median)}, {"q1", jnum(s.q1)},
                                  {"q3", jnum(s.q3)},  {"iqr", jnum(s.iqr())},     {"min", jnum(s.min)},
                                  {"max", jnum(s.max)}};
  }
  return jm;
}

// Per metric the arm can be compared on, its difference to the control.
json vs_control_json(const compare::ArmSummary& a) {
  json jc;
  for (Metric m : compare::kAllMetrics) {
    const auto& c = a.vs_control[static_cast<std::size_t>(m)];
    if (!c.available) continue;
    jc[compare::metric_key(m)] = {{"diff", jnum(c.diff)},     {"ci", {jnum(c.ci.lo), jnum(c.ci.hi)}},
                                  {"mann_whitney_u", c.mw.u}, {"p", c.mw.p},
                                  {"exact", c.mw.exact},      {"direction", c.direction}};
  }
  return jc;
}

// Where sequential stopping left an arm, and every look it took.
json arm_sequential_json(const compare::ArmSummary& a) {
  json hist = json::array();
  for (const auto& l : a.seq.history)
    hist.push_back({{"look", l.look},
                    {"trials", l.n},
                    {"z", l.z},
                    {"boundary", jnum(l.boundary)},
                    {"alpha_spent", l.alpha_spent},
                    {"stop", l.stop}});
  const sequential::Look* last = a.seq.last();
  return {{"stopped", a.seq.stopped},
          {"stop_look", a.seq.stopped ? json(a.seq.stop_look) : json(nullptr)},
          {"looks_taken", a.seq.history.size()},
          {"trials", last ? last->n : 0},
          {"control_trials", a.control_trials},
          {"z", last ? jnum(last->z) : json(nullptr)},
          {"boundary", last ? jnum(last->boundary) : json(nullptr)},
          {"alpha_spent", last ? last->alpha_spent : 0.0},
          {"decision", a.seq.direction},
          {"history", hist}};
}

// Arm k (0: the control).
json arm_json(const CompareReport& r, std::size_t k) {
  const auto& a = r.summary[k];
  json ja;
  ja["label"] = a.arm;
  if (k < r.arms.size()) {
    ja["name"] = r.arms[k].name;
    ja["strategy"] = strategy_name(r.arms[k].strategy);
    ja["pages"] = page_mode_name(r.arms[k].pages);
  }
  ja["control"] = k == 0;
  ja["trials"] = a.trials;
  ja["incomplete_trials"] = a.incomplete;
  ja["shootdown_source"] = a.shootdown_source;
  ja["metrics"] = arm_metrics_json(a);
  if (k > 0) ja["vs_control"] = vs_control_json(a);
  ja["verdict"] = a.verdict;
  if (k > 0) ja["decision"] = a.decision;
  if (k > 0 && a.sequential) ja["sequential"] = arm_sequential_json(a);
  return ja;
}

json trials_json(const std::vector<compare::TrialMetrics>& trials) {
  json out = json::array();
  for (const auto& t : trials) {
    json jt = {{"order", t.order},       {"arm", t.arm},           {"trial", t.trial},
               {"complete", t.complete}, {"releases", t.releases}, {"shootdown_source", t.shootdown_source}};
    for (Metric m : compare::kAllMetrics) jt[compare::metric_key(m)] = jnum(t.get(m));
    out.push_back(jt);
  }
  return out;
}

}  // namespace

std::string compare_json(const CompareReport& r) {
  json j;
  j["tool"] = "shootdown";
  j["kind"] = "compare";
  j["schema_version"] = kCompareSchemaVersion;
  j["command_line"] = r.command_line;
  j["started_at"] = r.started_at;
  j["complete"] = r.complete;
  if (!r.complete) j["incomplete_reason"] = r.incomplete_reason;
  j["workload"] = r.workload;
  j["seed"] = r.seed;
  j["trials_per_arm"] = r.trials_per_arm;
  j["sequential"] = sequential_design_json(r);
  j["bootstrap_resamples"] = r.bootstrap_resamples;
  j["confidence"] = 0.95;
  j["duration_s"] = r.duration_s;
  j["notes"] = r.notes;
  j["plan"] = compare_plan_json(r.plan);
  j["environment"] = {{"kernel", r.env.kernel},           {"cpu_model", r.env.cpu_model},
                      {"virtualized", r.env.virtualized}, {"hypervisor", r.env.hypervisor},
                      {"thp_enabled", r.env.thp_enabled}, {"build_type", r.env.build_type},
                      {"version", r.env.version},         {"warnings", r.env.warnings}};
  json metrics = json::array();
  for (Metric m : compare::kAllMetrics) metrics.push_back(compare::metric_key(m));
  j["metrics"] = metrics;
  json arms = json::array();
  for (std::size_t k = 0; k < r.summary.size(); ++k) arms.push_back(arm_json(r, k));
  j["arms"] = arms;
  j["trials"] = trials_json(r.trials);
  json gates = json::array();
  for (const auto& g : r.gates) gates.push_back({{"expr", g.text}, {"failed", g.failed}, {"detail", g.detail}});
  j["gates"] = gates;
  j["gate_failed"] = r.gate_failed;
  return j.dump(2) + "\n";
}

std::string compare_csv(const CompareReport& r) {
  std::string o = "order,arm,trial,strategy,pages,complete,shootdown_source";
  for (Metric m : compare::kAllMetrics) o += std::string(",") + compare::metric_key(m);
  o += "\n";
  for (const auto& t : r.trials) {
    std::string strategy, pages;
    if (t.arm_index >= 0 && static_cast<std::size_t>(t.arm_index) < r.arms.size()) {
      strategy = strategy_name(r.arms[static_cast<std::size_t>(t.arm_index)].strategy);
      pages = page_mode_name(r.arms[static_cast<std::size_t>(t.arm_index)].pages);
    }
    o += fmt::format("{},{},{},{},{},{},{}", t.order, t.arm, t.trial, strategy, pages, t.complete ? 1 : 0,
                     t.shootdown_source);
    for (Metric m : compare::kAllMetrics) {
      const double v = t.get(m);
      o += std::isfinite(v) ? fmt::format(",{:.3f}", v) : std::string(",");
    }
    o += "\n";
  }
  return o;
}

std::string compare_progress(bool tty, std::size_t done, std::size_t total, const std::string& arm, double elapsed) {
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  if (tty) {
    const int width = 24;
    const int filled =
        static_cast<int>(static_cast<double>(width) * static_cast<double>(done) / static_cast<double>(total));
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar += std::string(static_cast<std::size_t>(width - filled), '.');
    return fmt::format("\r\033[K[{}] {}/{} {:<18} {:4.0f} s, ETA {}", bar, done, total, arm, elapsed,
                       done > 0 ? fmt::format("{:.0f} s", eta) : "?");
  }
  return fmt::format("shootdown compare: trial {}/{} {} ({:.0f} s elapsed{})\n", done + 1, total, arm, elapsed,
                     done > 0 ? fmt::format(", ETA {:.0f} s", eta) : "");
}

}  // namespace shootdown::sink
