// SPDX-License-Identifier: Apache-2.0
// Group-sequential early stopping for `shootdown compare` ("time to
// a verdict"). Each arm is tested against the control with the two-sided
// Mann–Whitney statistic of the headline metric, looked at after every
// `look_every` trials per arm, against Lan–DeMets alpha-spending boundaries
// over the maximum --trials. The boundaries hold the overall type I error at
// alpha however early a pair stops (the standardized rank-sum statistics at
// the looks follow, asymptotically, the canonical joint distribution of a
// Brownian motion observed at the information fractions: Jennison & Turnbull,
// "Group Sequential Methods", 2000). Pure: standard library only.
// docs/compare.md "Sequential stopping" describes the method.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace shootdown::sequential {

// Lan–DeMets (1983) spending functions, two-sided overall alpha:
//   pocock: alpha * ln(1 + (e - 1) t)          (spends early: fast stops)
//   obf:    4 - 4 Phi(z_{1-alpha/4} / sqrt(t))  (O'Brien–Fleming type: spends late;
//           alpha/2 per side, the symmetric two-sided convention of gsDesign,
//           ldbounds and East)
enum class Spending { kPocock, kOBrienFleming };
const char* spending_name(Spending s);  // "pocock", "obf"
std::optional<Spending> parse_spending(const std::string& s);

// Cumulative alpha spent by information fraction t (clamped to [0, 1]).
double alpha_spent(Spending s, double alpha, double t);

// Standard normal CDF and its inverse (bisection on erfc to ~1e-13: slow
// next to a rational approximation, but exact enough and obviously right).
double normal_cdf(double z);
double normal_quantile(double p);

// Trials per arm at each look: look_every, 2 look_every, ... and always
// max_n last (a final look at max_n that is not a multiple).
std::vector<int> look_schedule(int look_every, int max_n);

// Two-sided critical values c_k for |Z_k| at information fractions t (strictly
// increasing, last 1): P0(|Z_j| < c_j for j < k, |Z_k| >= c_k) = alpha(t_k) -
// alpha(t_{k-1}), computed by the Armitage–McPherson–Rowe recursion (numerical
// integration of the continuation density on a grid). An increment too small
// to represent gives +inf (no stop possible at that look).
std::vector<double> boundaries(Spending s, double alpha, const std::vector<double>& t);

struct Design {
  Spending spending = Spending::kPocock;
  double alpha = 0.05;
  int look_every = 5;
  int max_n = 20;
  std::vector<int> looks;          // trials per arm at each look
  std::vector<double> fractions;   // looks / max_n
  std::vector<double> boundaries;  // critical |z| per look
  std::vector<double> spent;       // cumulative alpha spent per look
};
Design make_design(Spending s, double alpha, int look_every, int max_n);

// The two-sided Mann–Whitney test of x against y as a z: the normal quantile
// with the same two-sided p, signed (positive when x tends to be larger), so
// |z| >= c_k is "p <= 2 (1 - Phi(c_k))", the look's nominal level. The p is
// compare::mann_whitney's: the exact permutation distribution when both sides
// have <= 20 values and none tie (small looks are where the normal
// approximation, with its continuity correction, is most conservative: 5 vs 5
// with one inversion is p = 0.016 exact but 0.022 approximated), else the
// normal approximation with tie and continuity corrections. NaNs are ignored;
// 0 when either side is empty or every value ties (no information).
double rank_sum_z(const std::vector<double>& x, const std::vector<double>& y);

// One look of one arm against the control.
struct Look {
  int look = 0;            // 1-based
  int n = 0;               // trials per arm used (the first n of each side)
  double z = 0;            // rank_sum_z(arm, control)
  double boundary = 0;     // critical |z|
  double alpha_spent = 0;  // cumulative alpha spent at this look
  bool stop = false;       // |z| >= boundary: a difference is declared
};

// The state of one arm pair over the looks.
struct PairState {
  bool stopped = false;  // crossed a boundary (efficacy)
  int stop_look = 0;     // 1-based look that stopped it; 0 = none
  int direction = 0;     // +1 arm higher, -1 lower, 0 none declared
  std::vector<Look> history;
  const Look* last() const { return history.empty() ? nullptr : &history.back(); }
  // The pair still runs: not stopped and looks remain.
  bool active(const Design& d) const {
    return !stopped && static_cast<int>(history.size()) < static_cast<int>(d.looks.size());
  }
};

// Evaluate look number look_index (0-based) on the first d.looks[look_index]
// values of arm and control (in trial order) and append it to state. A pair
// that crosses stops with the sign of z; the last look spends what is left
// of alpha, so a pair never stopped has spent exactly alpha.
const Look& evaluate_look(const Design& d, std::size_t look_index, const std::vector<double>& arm,
                          const std::vector<double>& control, PairState* state);

// Index of the look taken after n trials per arm, or -1 when n is not a look.
int look_index_at(const Design& d, int n);

}  // namespace shootdown::sequential
