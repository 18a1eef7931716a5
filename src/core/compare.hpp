// SPDX-License-Identifier: Apache-2.0
// `shootdown compare` statistics: per-trial metrics from a Result, per-arm
// medians and spread, differences against the control arm with a seeded
// bootstrap confidence interval, a Mann–Whitney U test, verdict lines and
// the --fail-if / --max-regression gate. Pure: standard library only, every
// random choice comes from the seed (docs/compare.md describes the method).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/attribution.hpp"
#include "core/result.hpp"
#include "core/sequential.hpp"

namespace shootdown::compare {

// Per-trial metrics. Values are per release (a trial with --repeat N divides
// totals by N) and averaged over victim CPUs; NaN = not available.
enum class Metric : int {
  kStallUs = 0,        // total stall above the baseline median in the release window, µs (headline)
  kP99Us = 1,          // victim batch latency p99 in the release window, µs
  kP999Us = 2,         // ... p99.9
  kMaxUs = 3,          // ... max
  kShootdowns = 4,     // shootdown IPIs received per victim CPU per release
  kReleaseUs = 5,      // culprit's release call duration, µs
  kUnexplainedUs = 6,  // stall above the median in samples no kernel event explains, µs (needs the trace)
  kIpiStallUs = 7,     // stall above the median in samples labelled tlb-shootdown, µs (needs the trace)
};
inline constexpr int kMetricCount = 8;

const char* metric_key(Metric m);  // "stall_us", "p99_us", ... (gate and CSV names)
std::optional<Metric> parse_metric(const std::string& key);
inline constexpr std::array<Metric, kMetricCount> kAllMetrics = {
    Metric::kStallUs,    Metric::kP99Us,     Metric::kP999Us,        Metric::kMaxUs,
    Metric::kShootdowns, Metric::kReleaseUs, Metric::kUnexplainedUs, Metric::kIpiStallUs};

struct TrialMetrics {
  std::string arm;    // arm label ("munmap", "reuse#2" for a repeated name)
  int arm_index = 0;  // position in --arms (0 = control)
  int trial = 0;      // 1-based trial number within the arm
  int order = 0;      // 1-based position in the whole run (randomized)
  bool complete = true;
  int releases = 0;
  std::string
      shootdown_source;  // "trace" (reason-1 tlb_flush of this process) or "interrupts" (/proc/interrupts TLB delta)
  std::array<double, kMetricCount> v{};

  double get(Metric m) const { return v[static_cast<std::size_t>(m)]; }
  void set(Metric m, double x) { v[static_cast<std::size_t>(m)] = x; }
};

struct TrialOptions {
  // Count only kernel events whose interrupted task belongs to this process
  // (tgid); 0 = count every event on the victim CPU. Other processes'
  // shootdowns land on the same CPUs and would otherwise be counted.
  int own_pid = 0;
};

// Metrics of one experiment. attr (optional) is attribute(r.victims,
// r.trace, ...) for this result; without it (or when r.trace is not enabled)
// shootdowns come from the victim CPUs' /proc/interrupts TLB deltas over the
// whole measurement and unexplained stall is NaN.
TrialMetrics trial_metrics(const Result& r, const Attribution* attr, const TrialOptions& opts = {});

// ---- statistics -----------------------------------------------------------

// Quantile with linear interpolation between order statistics (Hyndman–Fan
// type 7, the default of R and NumPy). sorted must be sorted, non-empty.
double quantile_sorted(const std::vector<double>& sorted, double q);
double median(std::vector<double> v);  // NaN for empty

struct Spread {
  std::size_t n = 0;  // finite values
  double median = 0, q1 = 0, q3 = 0, min = 0, max = 0;
  double iqr() const { return q3 - q1; }
};
Spread spread(const std::vector<double>& values);  // NaNs ignored; all zero when empty

// Deterministic generator (SplitMix64): the same seed gives the same
// resamples on every platform and standard library.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next();
  std::uint64_t below(std::uint64_t n);  // uniform in [0, n), unbiased (rejection)
  double uniform();                      // [0, 1)
 private:
  std::uint64_t s_;
};

struct BootstrapOptions {
  int resamples = 2000;
  double confidence = 0.95;
  std::uint64_t seed = 1;
};

struct ConfInterval {
  double lo = 0, hi = 0;
  bool contains(double x) const { return lo <= x && x <= hi; }
};

// Percentile bootstrap CI of median(x) - median(y): each resample draws
// |x| values from x and |y| from y with replacement.
ConfInterval bootstrap_median_diff(const std::vector<double>& x, const std::vector<double>& y,
                                   const BootstrapOptions& o);
// Percentile bootstrap CI of median(x) (one sample, e.g. per-pair ratios):
// each resample draws |x| values from x with replacement. NaNs are ignored;
// {NaN, NaN} when no finite value is left.
ConfInterval bootstrap_median(const std::vector<double>& x, const BootstrapOptions& o);

struct MannWhitney {
  double u = 0;        // U of x: pairs (xi, yj) with xi > yj, ties count 1/2
  double z = 0;        // normal approximation (0 when exact)
  double p = 1;        // two-sided
  bool exact = false;  // exact null distribution (no ties, |x|,|y| <= kExactMax)
};
inline constexpr std::size_t kMannWhitneyExactMax = 20;
// Two-sided test; normal approximation with tie correction and continuity
// correction, or the exact permutation distribution for small samples
// without ties.
MannWhitney mann_whitney(const std::vector<double>& x, const std::vector<double>& y);

// Standard normal upper tail, P(Z > z).
double normal_sf(double z);

// ---- arms and verdicts ----------------------------------------------------

struct MetricComparison {
  Metric metric = Metric::kStallUs;
  Spread arm, control;
  double diff = 0;  // median(arm) - median(control)
  ConfInterval ci;  // bootstrap CI of diff
  MannWhitney mw;
  bool available = false;  // both sides have >= 2 finite values
  // -1 arm lower, +1 arm higher, 0 no detectable difference (CI contains 0).
  int direction = 0;
};

struct ArmSummary {
  std::string arm;
  int arm_index = 0;
  std::size_t trials = 0;
  std::size_t incomplete = 0;
  std::array<Spread, kMetricCount> metrics{};
  std::array<MetricComparison, kMetricCount> vs_control{};  // empty for the control itself
  std::string shootdown_source;
  std::string verdict;  // one line
  // The verdict's direction: +1 worse (higher stall), -1 better, 0 none. With
  // sequential stopping it is the group-sequential test's decision on the
  // headline metric; without, the bootstrap CI's (vs_control[stall_us].direction).
  int decision = 0;
  bool sequential = false;         // decided by the group-sequential test
  sequential::PairState seq;       // its looks (empty for the control)
  std::size_t control_trials = 0;  // control trials the comparison used
};

struct CompareOptions {
  BootstrapOptions bootstrap;
  // Group-sequential stopping: design and one PairState per arm (index 0, the
  // control, unused). Null = fixed design, verdict by the bootstrap CI.
  const sequential::Design* design = nullptr;
  const std::vector<sequential::PairState>* pairs = nullptr;
};

// values of one metric of one arm (finite only), in trial order.
std::vector<double> arm_values(const std::vector<TrialMetrics>& trials, const std::string& arm, Metric m);

MetricComparison compare_metric(const std::vector<double>& arm, const std::vector<double>& control, Metric m,
                                const BootstrapOptions& o);

// arms: labels in --arms order (first = control). The bootstrap seed of arm
// k and metric m is derived from o.bootstrap.seed, k and m, so adding an arm
// does not change another arm's interval. With o.pairs, an arm that stopped
// after n trials is compared with the control's first n trials (the data of
// its decision; the control ran on for other arms), and its verdict is the
// sequential decision.
std::vector<ArmSummary> summarize_arms(const std::vector<TrialMetrics>& trials, const std::vector<std::string>& arms,
                                       const CompareOptions& o);

// "munmap: +210 µs stall per release [CI 180, 240], 30 shootdowns/release vs
// 0 — worse than reuse" or "...: no detectable difference from reuse".
std::string verdict_line(const ArmSummary& arm, const ArmSummary& control);
// "munmap stopped at look 1 of 4 (5 of 20 trials per arm): |z| 2.65 >= 2.37,
// alpha spent 0.018" or "reuse#2 ran all 4 looks (...): |z| 0.52 < 2.35, ...".
std::string sequential_line(const ArmSummary& arm, const sequential::Design& d);

// Unique labels for --arms: a repeated name gets "#2", "#3"... ("reuse,reuse"
// -> "reuse", "reuse#2").
std::vector<std::string> arm_labels(const std::vector<std::string>& names);

// Seeded randomized complete blocks: every block runs each arm once, in an
// order shuffled (Fisher–Yates) by the seeded generator, so slow drift of
// the machine hits every arm alike and no arm always runs after another.
// Returns arm indices, trials blocks of `arms` entries.
std::vector<int> trial_order(std::size_t arms, int trials, std::uint64_t seed);
// One block of that design over the arms still running (sequential stopping
// drops an arm once its pair is decided): the arms in an order shuffled by
// rng. With every arm, successive calls on Rng(seed) give trial_order's blocks.
std::vector<int> shuffled_block(const std::vector<int>& arms, Rng& rng);

// ---- gate -----------------------------------------------------------------

// --fail-if 'ARM.METRIC OP ARM.METRIC' or 'ARM.METRIC OP NUMBER', OP one of
// > >= < <=. Between two arms the condition holds when the bootstrap CI of
// median(lhs) - median(rhs) lies entirely on the OP side of 0 (a detectable
// difference; >= and > are the same test); against a number it compares the
// median.
struct GateExpr {
  std::string text;
  std::string lhs_arm;
  Metric lhs_metric = Metric::kStallUs;
  std::string op;
  bool rhs_is_number = false;
  double rhs_number = 0;
  std::string rhs_arm;
  Metric rhs_metric = Metric::kStallUs;
};
// Throws UsageError (core/errors.hpp) with a one-line reason.
GateExpr parse_gate(const std::string& text, const std::vector<std::string>& arms);

struct GateResult {
  std::string text;
  bool failed = false;  // the condition holds (or --max-regression exceeded)
  std::string detail;   // "munmap.stall_us - reuse.stall_us = +210 [CI 180, 240] > 0"
};
// With `summary` (from summarize_arms), a gate that sets an arm's metric
// against the control's same metric reads that arm's vs_control interval, so
// the gate line and the verdict above it can never disagree (two bootstraps of
// the same data with different draws could, at 5 trials per arm). For the
// headline metric (stall_us) of an arm decided by sequential stopping, the
// gate fails exactly when that decision says so.
GateResult evaluate_gate(const GateExpr& g, const std::vector<TrialMetrics>& trials, const BootstrapOptions& o,
                         const std::vector<ArmSummary>* summary = nullptr);

// --max-regression PCT: an arm fails when the CI's lower bound of its
// stall_us difference exceeds PCT % of the control's median (so the
// regression is both detectable and larger than the allowance).
std::vector<GateResult> evaluate_max_regression(double pct, const std::vector<ArmSummary>& arms);

}  // namespace shootdown::compare
