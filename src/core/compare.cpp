// SPDX-License-Identifier: Apache-2.0
#include "core/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

#include "core/analysis.hpp"
#include "core/errors.hpp"

namespace shootdown::compare {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct MetricName {
  Metric m;
  const char* key;
};
constexpr MetricName kMetricNames[] = {
    {Metric::kStallUs, "stall_us"},
    {Metric::kP99Us, "p99_us"},
    {Metric::kP999Us, "p999_us"},
    {Metric::kMaxUs, "max_us"},
    {Metric::kShootdowns, "shootdowns"},
    {Metric::kReleaseUs, "release_us"},
    {Metric::kUnexplainedUs, "unexplained_us"},
    {Metric::kIpiStallUs, "ipi_stall_us"},
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string fmt_num(double x, bool sign = false) {
  char buf[64];
  const double a = std::fabs(x);
  const char* f = sign ? (a >= 10 || a == 0 ? "%+.0f" : "%+.1f") : (a >= 10 || a == 0 ? "%.0f" : "%.1f");
  if (!std::isfinite(x)) return "n/a";
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string fmt_p(double p) {
  char buf[32];
  if (p < 0.001)
    std::snprintf(buf, sizeof buf, "p<0.001");
  else
    std::snprintf(buf, sizeof buf, "p=%.3f", p);
  return buf;
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

std::vector<double> finite(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v)
    if (std::isfinite(x)) out.push_back(x);
  return out;
}

// Median of v (modified in place); v non-empty.
double median_inplace(std::vector<double>& v) {
  const std::size_t n = v.size();
  const std::size_t mid = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  Rng r(seed ^ (a * 0x9E3779B97F4A7C15ULL) ^ (b * 0xC2B2AE3D27D4EB4FULL));
  r.next();
  return r.next();
}

}  // namespace

const char* metric_key(Metric m) {
  return kMetricNames[static_cast<int>(m)].key;
}

std::optional<Metric> parse_metric(const std::string& key) {
  for (const auto& n : kMetricNames)
    if (key == n.key) return n.m;
  return std::nullopt;
}

// ---- per trial ------------------------------------------------------------

TrialMetrics trial_metrics(const Result& r, const Attribution* attr, const TrialOptions& opts) {
  TrialMetrics t;
  t.complete = r.complete;
  t.releases = static_cast<int>(r.releases.size());
  for (auto& x : t.v) x = kNaN;
  const double releases = std::max(1.0, static_cast<double>(r.releases.size()));

  std::vector<double> release_us;
  for (const auto& rel : r.releases) release_us.push_back(static_cast<double>(rel.duration_ns()) / 1e3);
  t.set(Metric::kReleaseUs, mean_of(release_us));

  const bool traced = r.trace.enabled && attr && attr->available;
  std::vector<std::int64_t> window;  // pooled release-window latencies of every victim, ns
  std::vector<double> stall_us, unexplained_us, ipi_stall_us, shootdowns;
  for (const auto& v : r.victims) {
    const std::vector<Phase> ph = sample_phases(r, v);
    std::vector<std::int64_t> base;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (ph[i] == Phase::kBaseline) base.push_back(v.lat_ns[i]);
    std::int64_t med = 0;
    if (!base.empty()) {
      const std::size_t mid = (base.size() - 1) / 2;  // lower median: an observed value
      std::nth_element(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(mid), base.end());
      med = base[mid];
    }
    const VictimAttribution* va = nullptr;
    if (traced)
      for (const auto& a : attr->victims)
        if (a.cpu == v.cpu && a.labels.size() == v.size()) va = &a;
    double stall = 0, unexplained = 0, ipi = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (ph[i] != Phase::kRelease) continue;
      window.push_back(v.lat_ns[i]);
      const std::int64_t excess = std::max<std::int64_t>(0, v.lat_ns[i] - med);
      stall += static_cast<double>(excess);
      if (va && va->labels[i] == static_cast<std::uint8_t>(StallLabel::kUnexplained))
        unexplained += static_cast<double>(excess);
      if (va && va->labels[i] == static_cast<std::uint8_t>(StallLabel::kTlbShootdown))
        ipi += static_cast<double>(excess);
    }
    stall_us.push_back(stall / 1e3 / releases);
    if (va) {
      unexplained_us.push_back(unexplained / 1e3 / releases);
      ipi_stall_us.push_back(ipi / 1e3 / releases);
    }

    if (traced) {
      std::int64_t n = 0;
      for (const auto& e : r.trace.events) {
        if (e.type != EventType::kTlbFlush || e.a != kTlbRemoteShootdown || e.cpu != v.cpu) continue;
        if (opts.own_pid > 0 && e.pid != opts.own_pid) continue;
        for (const auto& rel : r.releases)
          if (e.mono_ns >= rel.before_ns && e.mono_ns <= rel.after_ns + r.plan.settle_ns) {
            ++n;
            break;
          }
      }
      shootdowns.push_back(static_cast<double>(n) / releases);
    } else {
      for (const auto& c : r.counters)
        if (c.cpu == v.cpu) shootdowns.push_back(static_cast<double>(c.tlb) / releases);
    }
  }
  t.shootdown_source = traced ? "trace" : "interrupts";
  t.set(Metric::kStallUs, mean_of(stall_us));
  t.set(Metric::kShootdowns, mean_of(shootdowns));
  if (traced) {
    t.set(Metric::kUnexplainedUs, mean_of(unexplained_us));
    t.set(Metric::kIpiStallUs, mean_of(ipi_stall_us));
  }
  if (!window.empty()) {
    std::sort(window.begin(), window.end());
    auto rank = [&](double p) {  // nearest rank, as core/stats
      const double n = static_cast<double>(window.size());
      std::size_t k = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
      k = std::clamp<std::size_t>(k, 1, window.size());
      return static_cast<double>(window[k - 1]) / 1e3;
    };
    t.set(Metric::kP99Us, rank(99));
    t.set(Metric::kP999Us, rank(99.9));
    t.set(Metric::kMaxUs, static_cast<double>(window.back()) / 1e3);
  }
  return t;
}

// ---- statistics -----------------------------------------------------------

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double h = (static_cast<double>(sorted.size()) - 1) * std::clamp(q, 0.0, 1.0);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double median(std::vector<double> v) {
  v = finite(v);
  if (v.empty()) return kNaN;
  return median_inplace(v);
}

Spread spread(const std::vector<double>& values) {
  std::vector<double> v = finite(values);
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = quantile_sorted(v, 0.5);
  s.q1 = quantile_sorted(v, 0.25);
  s.q3 = quantile_sorted(v, 0.75);
  return s;
}

std::uint64_t Rng::next() {
  std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n <= 1) return 0;
  // Reject the top partial range so every residue is equally likely.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  for (;;) {
    const std::uint64_t x = next();
    if (x < limit) return x % n;
  }
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

namespace {

// The percentile interval of bootstrap statistics (sorted in place).
ConfInterval percentile_interval(std::vector<double>& stats, double confidence) {
  std::sort(stats.begin(), stats.end());
  const double alpha = (1 - confidence) / 2;
  return {quantile_sorted(stats, alpha), quantile_sorted(stats, 1 - alpha)};
}

}  // namespace

ConfInterval bootstrap_median_diff(const std::vector<double>& x, const std::vector<double>& y,
                                   const BootstrapOptions& o) {
  const std::vector<double> a = finite(x), b = finite(y);
  if (a.empty() || b.empty()) return {kNaN, kNaN};
  Rng rng(o.seed);
  std::vector<double> diffs;
  const int n = std::max(o.resamples, 1);
  diffs.reserve(static_cast<std::size_t>(n));
  std::vector<double> ra(a.size()), rb(b.size());
  for (int k = 0; k < n; ++k) {
    for (auto& v : ra) v = a[rng.below(a.size())];
    for (auto& v : rb) v = b[rng.below(b.size())];
    diffs.push_back(median_inplace(ra) - median_inplace(rb));
  }
  return percentile_interval(diffs, o.confidence);
}

ConfInterval bootstrap_median(const std::vector<double>& x, const BootstrapOptions& o) {
  const std::vector<double> a = finite(x);
  if (a.empty()) return {kNaN, kNaN};
  Rng rng(o.seed);
  std::vector<double> meds;
  const int n = std::max(o.resamples, 1);
  meds.reserve(static_cast<std::size_t>(n));
  std::vector<double> ra(a.size());
  for (int k = 0; k < n; ++k) {
    for (auto& v : ra) v = a[rng.below(a.size())];
    meds.push_back(median_inplace(ra));
  }
  return percentile_interval(meds, o.confidence);
}

double normal_sf(double z) {
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

namespace {

// counts[u] = number of orderings of m x's and n y's (no ties) whose U of x
// is u, by the recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u): the
// largest value is an x (beating all n y's) or a y.
std::vector<double> exact_u_counts(std::size_t m, std::size_t n) {
  const std::size_t umax = m * n;
  // f[i][j] as flat vectors, row by row.
  std::vector<std::vector<std::vector<double>>> f(m + 1, std::vector<std::vector<double>>(n + 1));
  for (std::size_t i = 0; i <= m; ++i)
    for (std::size_t j = 0; j <= n; ++j) {
      auto& cell = f[i][j];
      cell.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        cell[0] = 1;
        continue;
      }
      const auto& a = f[i - 1][j];  // largest is an x: contributes j
      const auto& b = f[i][j - 1];  // largest is a y: contributes 0
      for (std::size_t u = 0; u < a.size(); ++u) cell[u + j] += a[u];
      for (std::size_t u = 0; u < b.size(); ++u) cell[u] += b[u];
    }
  (void)umax;
  return f[m][n];
}

}  // namespace

MannWhitney mann_whitney(const std::vector<double>& xs, const std::vector<double>& ys) {
  MannWhitney r;
  const std::vector<double> x = finite(xs), y = finite(ys);
  const std::size_t m = x.size(), n = y.size();
  if (m == 0 || n == 0) return r;
  // Midranks of the pooled sample.
  std::vector<std::pair<double, int>> all;
  all.reserve(m + n);
  for (double v : x) all.emplace_back(v, 0);
  for (double v : y) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_x = 0, tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double mid = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // ranks are 1-based
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_x += mid;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  r.u = rank_x - dm * (dm + 1) / 2;
  if (!ties && m <= kMannWhitneyExactMax && n <= kMannWhitneyExactMax) {
    const std::vector<double> c = exact_u_counts(m, n);
    double total = 0;
    for (double v : c) total += v;
    const auto u = static_cast<std::size_t>(std::llround(r.u));
    double le = 0, ge = 0;
    for (std::size_t k = 0; k < c.size(); ++k) {
      if (k <= u) le += c[k];
      if (k >= u) ge += c[k];
    }
    r.exact = true;
    r.p = std::min(1.0, 2 * std::min(le, ge) / total);
    return r;
  }
  const double N = dm + dn;
  const double mu = dm * dn / 2;
  const double var = dm * dn / 12 * ((N + 1) - tie_term / (N * (N - 1)));
  if (var <= 0) {
    r.p = 1;
    return r;
  }
  const double d = r.u - mu;
  const double cc = d > 0 ? -0.5 : d < 0 ? 0.5 : 0;  // continuity correction toward the mean
  r.z = (d + cc) / std::sqrt(var);
  r.p = std::min(1.0, 2 * normal_sf(std::fabs(r.z)));
  return r;
}

// ---- arms -----------------------------------------------------------------

std::vector<double> arm_values(const std::vector<TrialMetrics>& trials, const std::string& arm, Metric m) {
  std::vector<const TrialMetrics*> sel;
  for (const auto& t : trials)
    if (t.arm == arm && std::isfinite(t.get(m))) sel.push_back(&t);
  std::sort(sel.begin(), sel.end(), [](auto* a, auto* b) { return a->trial < b->trial; });
  std::vector<double> out;
  for (auto* t : sel) out.push_back(t->get(m));
  return out;
}

MetricComparison compare_metric(const std::vector<double>& arm, const std::vector<double>& control, Metric m,
                                const BootstrapOptions& o) {
  MetricComparison c;
  c.metric = m;
  c.arm = spread(arm);
  c.control = spread(control);
  c.available = c.arm.n >= 2 && c.control.n >= 2;
  if (!c.available) return c;
  c.diff = median(arm) - median(control);
  c.ci = bootstrap_median_diff(arm, control, o);
  c.mw = mann_whitney(arm, control);
  c.direction = c.ci.lo > 0 ? 1 : c.ci.hi < 0 ? -1 : 0;
  return c;
}

std::vector<ArmSummary> summarize_arms(const std::vector<TrialMetrics>& trials, const std::vector<std::string>& arms,
                                       const CompareOptions& o) {
  std::vector<ArmSummary> out;
  for (std::size_t k = 0; k < arms.size(); ++k) {
    ArmSummary s;
    s.arm = arms[k];
    s.arm_index = static_cast<int>(k);
    for (const auto& t : trials)
      if (t.arm == s.arm) {
        ++s.trials;
        if (!t.complete) ++s.incomplete;
        if (s.shootdown_source.empty())
          s.shootdown_source = t.shootdown_source;
        else if (s.shootdown_source != t.shootdown_source)
          s.shootdown_source = "mixed";
      }
    const bool seq = k > 0 && o.design && o.pairs && k < o.pairs->size();
    if (seq) {
      s.sequential = true;
      s.seq = (*o.pairs)[k];
    }
    for (Metric m : kAllMetrics) {
      const auto i = static_cast<std::size_t>(m);
      const std::vector<double> v = arm_values(trials, s.arm, m);
      s.metrics[i] = spread(v);
      if (k > 0) {
        BootstrapOptions b = o.bootstrap;
        b.seed = mix_seed(o.bootstrap.seed, k, i + 1);
        std::vector<double> ctl = arm_values(trials, arms[0], m);
        // A stopped arm: the control's trials up to its stopping look
        // (arm_values is in trial order), so the interval describes the
        // decision's data; the control may have run on for other arms.
        if (seq && s.seq.stopped && ctl.size() > static_cast<std::size_t>(s.seq.last()->n))
          ctl.resize(static_cast<std::size_t>(s.seq.last()->n));
        if (m == Metric::kStallUs) s.control_trials = ctl.size();
        s.vs_control[i] = compare_metric(v, ctl, m, b);
      }
    }
    if (k > 0) s.decision = seq ? s.seq.direction : s.vs_control[static_cast<std::size_t>(Metric::kStallUs)].direction;
    out.push_back(std::move(s));
  }
  for (std::size_t k = 1; k < out.size(); ++k) out[k].verdict = verdict_line(out[k], out[0]);
  if (!out.empty()) out[0].verdict = out[0].arm + ": control";
  return out;
}

std::string verdict_line(const ArmSummary& arm, const ArmSummary& control) {
  const MetricComparison& c = arm.vs_control[static_cast<std::size_t>(Metric::kStallUs)];
  const Spread& sa = arm.metrics[static_cast<std::size_t>(Metric::kShootdowns)];
  const Spread& sc = control.metrics[static_cast<std::size_t>(Metric::kShootdowns)];
  std::string s = arm.arm + ": ";
  if (!c.available) return s + "not enough trials to compare with " + control.arm;
  s += fmt_num(c.diff, true) + " µs stall per release [CI " + fmt_num(c.ci.lo) + ", " + fmt_num(c.ci.hi) + "]";
  if (sa.n > 0 && sc.n > 0) s += ", " + fmt_num(sa.median) + " shootdowns/release vs " + fmt_num(sc.median);
  const MetricComparison& ipi = arm.vs_control[static_cast<std::size_t>(Metric::kIpiStallUs)];
  if (ipi.available && (ipi.arm.median != 0 || ipi.control.median != 0))
    s += " (IPI stall " + fmt_num(ipi.diff, true) + " µs [CI " + fmt_num(ipi.ci.lo) + ", " + fmt_num(ipi.ci.hi) + "])";
  s += " — ";
  if (arm.decision > 0)
    s += "worse than " + control.arm;
  else if (arm.decision < 0)
    s += "better than " + control.arm;
  else
    s += "no detectable difference from " + control.arm;
  s += " (" + fmt_p(c.mw.p) + ")";
  return s;
}

std::string sequential_line(const ArmSummary& arm, const sequential::Design& d) {
  const sequential::Look* l = arm.seq.last();
  char buf[256];
  const int looks = static_cast<int>(d.looks.size());
  if (!l) {
    std::snprintf(buf, sizeof buf, "%s: no look taken (0 of %d looks)", arm.arm.c_str(), looks);
    return buf;
  }
  if (arm.seq.stopped)
    std::snprintf(buf, sizeof buf,
                  "%s stopped at look %d of %d (%d of %d trials per arm): |z| %.2f >= %.2f, alpha spent %.3f",
                  arm.arm.c_str(), l->look, looks, l->n, d.max_n, std::fabs(l->z), l->boundary, l->alpha_spent);
  else if (l->look == looks)
    std::snprintf(buf, sizeof buf, "%s ran all %d looks (%d of %d trials per arm): |z| %.2f < %.2f, alpha spent %.3f",
                  arm.arm.c_str(), looks, l->n, d.max_n, std::fabs(l->z), l->boundary, l->alpha_spent);
  else
    std::snprintf(buf, sizeof buf,
                  "%s interrupted after look %d of %d (%d of %d trials per arm): |z| %.2f < %.2f, alpha spent %.3f",
                  arm.arm.c_str(), l->look, looks, l->n, d.max_n, std::fabs(l->z), l->boundary, l->alpha_spent);
  return buf;
}

std::vector<int> shuffled_block(const std::vector<int>& arms, Rng& rng) {
  std::vector<int> block = arms;
  for (std::size_t i = block.size(); i > 1; --i) std::swap(block[i - 1], block[rng.below(i)]);
  return block;
}

std::vector<int> trial_order(std::size_t arms, int trials, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<int> all(arms);
  for (std::size_t i = 0; i < arms; ++i) all[i] = static_cast<int>(i);
  std::vector<int> out;
  for (int t = 0; t < trials; ++t) {
    const std::vector<int> block = shuffled_block(all, rng);
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

std::vector<std::string> arm_labels(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::map<std::string, int> seen;
  for (const auto& n : names) {
    const int k = ++seen[n];
    out.push_back(k == 1 ? n : n + "#" + std::to_string(k));
  }
  return out;
}

// ---- gate -----------------------------------------------------------------

namespace {

bool parse_number(const std::string& s, double* out) {
  if (s.empty()) return false;
  std::size_t pos = 0;
  try {
    *out = std::stod(s, &pos);
  } catch (const std::exception&) {
    return false;
  }
  return pos == s.size() && std::isfinite(*out);
}

void parse_term(const std::string& text, const std::string& term, const std::vector<std::string>& arms,
                std::string* arm, Metric* metric) {
  const auto dot = term.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == term.size())
    throw UsageError("--fail-if '" + text + "': '" + term + "' is not ARM.METRIC or a number (e.g. munmap.stall_us)");
  *arm = term.substr(0, dot);
  if (std::find(arms.begin(), arms.end(), *arm) == arms.end()) {
    std::string list;
    for (const auto& a : arms) list += (list.empty() ? "" : ", ") + a;
    throw UsageError("--fail-if '" + text + "': unknown arm '" + *arm + "' (arms: " + list + ")");
  }
  const auto m = parse_metric(term.substr(dot + 1));
  if (!m) {
    std::string list;
    for (const auto& n : kMetricNames) list += (list.empty() ? "" : ", ") + std::string(n.key);
    throw UsageError("--fail-if '" + text + "': unknown metric '" + term.substr(dot + 1) + "' (accepted: " + list +
                     ")");
  }
  *metric = *m;
}

}  // namespace

GateExpr parse_gate(const std::string& text, const std::vector<std::string>& arms) {
  GateExpr g;
  g.text = text;
  std::size_t pos = std::string::npos, len = 0;
  for (const char* op : {">=", "<=", ">", "<"}) {
    const auto p = text.find(op);
    if (p != std::string::npos && (pos == std::string::npos || p < pos)) {
      pos = p;
      len = std::char_traits<char>::length(op);
      g.op = op;
    }
  }
  if (pos == std::string::npos)
    throw UsageError("--fail-if '" + text +
                     "': no comparison (accepted: 'ARM.METRIC OP ARM.METRIC|NUMBER' with OP one of > >= < <=)");
  const std::string lhs = trim(text.substr(0, pos));
  const std::string rhs = trim(text.substr(pos + len));
  if (rhs.find_first_of("<>=") != std::string::npos)
    throw UsageError("--fail-if '" + text + "': only one comparison per expression (give --fail-if again)");
  parse_term(text, lhs, arms, &g.lhs_arm, &g.lhs_metric);
  if (parse_number(rhs, &g.rhs_number)) {
    g.rhs_is_number = true;
  } else {
    parse_term(text, rhs, arms, &g.rhs_arm, &g.rhs_metric);
    if (g.rhs_arm == g.lhs_arm && g.rhs_metric == g.lhs_metric)
      throw UsageError("--fail-if '" + text + "': compares a metric with itself");
  }
  return g;
}

GateResult evaluate_gate(const GateExpr& g, const std::vector<TrialMetrics>& trials, const BootstrapOptions& o,
                         const std::vector<ArmSummary>* summary) {
  GateResult r;
  r.text = g.text;
  const bool greater = g.op[0] == '>';
  const std::vector<double> lhs = arm_values(trials, g.lhs_arm, g.lhs_metric);
  const std::string lname = g.lhs_arm + "." + metric_key(g.lhs_metric);
  if (lhs.empty()) {
    r.failed = true;
    r.detail = lname + " has no values: gate cannot pass";
    return r;
  }
  if (g.rhs_is_number) {
    const double m = median(lhs);
    const bool strict = g.op.size() == 1;
    r.failed =
        greater ? (strict ? m > g.rhs_number : m >= g.rhs_number) : (strict ? m < g.rhs_number : m <= g.rhs_number);
    r.detail = "median " + lname + " = " + fmt_num(m) + (r.failed ? " " : " not ") + g.op + " " + fmt_num(g.rhs_number);
    return r;
  }
  const std::vector<double> rhs = arm_values(trials, g.rhs_arm, g.rhs_metric);
  const std::string rname = g.rhs_arm + "." + metric_key(g.rhs_metric);
  if (rhs.size() < 2 || lhs.size() < 2) {
    r.failed = true;
    r.detail = "fewer than 2 values of " + lname + " or " + rname + ": gate cannot pass";
    return r;
  }
  // Arm against control on one metric: the summary's own comparison
  // (negated when the control is on the left), identical to the verdict's.
  const ArmSummary* arm = nullptr;
  int sign = 1;
  if (summary && !summary->empty() && g.lhs_metric == g.rhs_metric) {
    const std::string& control = summary->front().arm;
    const bool lhs_ctl = g.lhs_arm == control, rhs_ctl = g.rhs_arm == control;
    if (lhs_ctl != rhs_ctl)
      for (std::size_t k = 1; k < summary->size(); ++k)
        if ((*summary)[k].arm == (lhs_ctl ? g.rhs_arm : g.lhs_arm) &&
            (*summary)[k].vs_control[static_cast<std::size_t>(g.lhs_metric)].available) {
          arm = &(*summary)[k];
          sign = rhs_ctl ? 1 : -1;
          break;
        }
  }
  ConfInterval ci;
  double d = 0;
  if (arm) {
    const MetricComparison& c = arm->vs_control[static_cast<std::size_t>(g.lhs_metric)];
    ci = sign > 0 ? c.ci : ConfInterval{-c.ci.hi, -c.ci.lo};
    d = sign * c.diff;
  } else {
    ci = bootstrap_median_diff(lhs, rhs, o);
    d = median(lhs) - median(rhs);
  }
  // The headline metric of an arm decided by sequential stopping: the gate
  // follows that decision (its error rate holds under optional stopping; the
  // interval after an early stop is naive, and could exclude 0 where the
  // verdict says no difference).
  const bool sequential = arm && g.lhs_metric == Metric::kStallUs && arm->sequential;
  const int decided = sequential ? sign * arm->decision : 0;
  r.failed = sequential ? (greater ? decided > 0 : decided < 0) : (greater ? ci.lo > 0 : ci.hi < 0);
  r.detail = lname + " - " + rname + " = " + fmt_num(d, true) + " [CI " + fmt_num(ci.lo) + ", " + fmt_num(ci.hi) + "]" +
             (r.failed ? (greater ? ": detectably > 0" : ": detectably < 0")
                       : ": not detectably " + std::string(greater ? "> 0" : "< 0")) +
             (sequential ? " (sequential verdict)" : "");
  return r;
}

std::vector<GateResult> evaluate_max_regression(double pct, const std::vector<ArmSummary>& arms) {
  std::vector<GateResult> out;
  if (arms.empty()) return out;
  const double base = arms[0].metrics[static_cast<std::size_t>(Metric::kStallUs)].median;
  const double allowance = std::fabs(base) * pct / 100.0;
  for (std::size_t k = 1; k < arms.size(); ++k) {
    const MetricComparison& c = arms[k].vs_control[static_cast<std::size_t>(Metric::kStallUs)];
    GateResult r;
    r.text = "--max-regression " + fmt_num(pct) + "% (" + arms[k].arm + ")";
    if (!c.available) {
      r.failed = true;
      r.detail = arms[k].arm + ": not enough trials to check";
    } else {
      r.failed = c.ci.lo > allowance;
      r.detail = arms[k].arm + ".stall_us - " + arms[0].arm + ".stall_us CI [" + fmt_num(c.ci.lo) + ", " +
                 fmt_num(c.ci.hi) + "] " + (r.failed ? "exceeds" : "within") + " allowance " + fmt_num(allowance) +
                 " us";
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace shootdown::compare
