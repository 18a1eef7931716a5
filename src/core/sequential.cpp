// SPDX-License-Identifier: Apache-2.0
#include "core/sequential.hpp"

#include "core/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shootdown::sequential {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
// Grid points (odd, Simpson) over a continuation interval. 401 points keep
// the boundaries within ~1e-4 of published tables (tests/unit) at a cost of
// ~160k multiply-adds per look.
constexpr int kGrid = 401;

double pdf(double z) {
  return kInvSqrt2Pi * std::exp(-0.5 * z * z);
}

// P(Z > z) without cancellation in the upper tail.
double upper_tail(double z) {
  return 0.5 * std::erfc(z / kSqrt2);
}

// z with P(Z > z) = q, q in (0, 1).
double upper_quantile(double q) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (upper_tail(mid) > q)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

// A density sampled on an evenly spaced grid over [-b, b] with Simpson weights.
struct Grid {
  std::vector<double> x, w, f;  // points, integration weights, density values
};

Grid make_grid(double b) {
  Grid g;
  g.x.resize(kGrid);
  g.w.resize(kGrid);
  g.f.resize(kGrid);
  const double h = 2 * b / (kGrid - 1);
  for (int i = 0; i < kGrid; ++i) {
    g.x[static_cast<std::size_t>(i)] = -b + h * i;
    const double c = (i == 0 || i == kGrid - 1) ? 1 : (i % 2 == 1 ? 4 : 2);
    g.w[static_cast<std::size_t>(i)] = c * h / 3;
  }
  return g;
}

// P(continued to look k-1 and |S_k| >= c sqrt(t_k)), S the Brownian motion,
// from the continuation density g of S_{k-1}, with increment variance dt.
double crossing_probability(const Grid& g, double c, double tk, double dt) {
  const double b = c * std::sqrt(tk), sd = std::sqrt(dt);
  double p = 0;
  for (std::size_t i = 0; i < g.x.size(); ++i) {
    const double u = g.x[i];
    p += g.w[i] * g.f[i] * (upper_tail((b - u) / sd) + upper_tail((b + u) / sd));
  }
  return p;
}

}  // namespace

const char* spending_name(Spending s) {
  return s == Spending::kPocock ? "pocock" : "obf";
}

std::optional<Spending> parse_spending(const std::string& s) {
  if (s == "pocock") return Spending::kPocock;
  if (s == "obf") return Spending::kOBrienFleming;
  return std::nullopt;
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / kSqrt2);
}

double normal_quantile(double p) {
  if (!(p > 0)) return -kInf;
  if (!(p < 1)) return kInf;
  return p < 0.5 ? -upper_quantile(p) : upper_quantile(1 - p);
}

double alpha_spent(Spending s, double alpha, double t) {
  t = std::clamp(t, 0.0, 1.0);
  if (t <= 0) return 0;
  if (s == Spending::kPocock) return alpha * std::log(1 + (std::exp(1.0) - 1) * t);
  // O'Brien–Fleming type, spent per side as gsDesign, ldbounds and East do for
  // a symmetric two-sided design: alpha/2 on each side by 2 - 2 Phi(z_{1-alpha/4}
  // / sqrt(t)), so 4 - 4 Phi(z_{1-alpha/4} / sqrt(t)) in all; alpha at t = 1.
  const double z = upper_quantile(alpha / 4);
  return std::min(alpha, 4 * upper_tail(z / std::sqrt(t)));
}

std::vector<int> look_schedule(int look_every, int max_n) {
  std::vector<int> out;
  if (max_n < 1) return out;
  look_every = std::max(look_every, 1);
  for (int n = look_every; n < max_n; n += look_every) out.push_back(n);
  out.push_back(max_n);
  return out;
}

std::vector<double> boundaries(Spending s, double alpha, const std::vector<double>& t) {
  std::vector<double> c;
  if (t.empty()) return c;
  double spent_before = 0;
  Grid g;  // continuation density of S at the previous look
  double t_prev = 0;
  for (std::size_t k = 0; k < t.size(); ++k) {
    const double tk = t[k];
    const double inc = alpha_spent(s, alpha, tk) - spent_before;
    double ck = kInf;
    if (k == 0) {
      if (inc > 1e-15) ck = upper_quantile(inc / 2);
    } else if (inc > 1e-15) {
      const double dt = tk - t_prev;
      double lo = 0, hi = 40;
      if (crossing_probability(g, lo, tk, dt) <= inc) {
        ck = 0;  // cannot spend this much: every continuing path stops
      } else {
        for (int i = 0; i < 100 && hi - lo > 1e-9; ++i) {
          const double mid = 0.5 * (lo + hi);
          if (crossing_probability(g, mid, tk, dt) > inc)
            lo = mid;
          else
            hi = mid;
        }
        ck = 0.5 * (lo + hi);
      }
    }
    c.push_back(ck);
    spent_before += std::max(inc, 0.0);
    if (k + 1 == t.size()) break;
    // Continuation density of S_k on |s| < ck sqrt(tk) (capped at 10 sd).
    const double b = std::min(ck, 10.0) * std::sqrt(tk);
    Grid next = make_grid(b);
    if (k == 0) {
      for (std::size_t i = 0; i < next.x.size(); ++i) next.f[i] = pdf(next.x[i] / std::sqrt(tk)) / std::sqrt(tk);
    } else {
      const double sd = std::sqrt(tk - t_prev);
      for (std::size_t i = 0; i < next.x.size(); ++i) {
        double v = 0;
        for (std::size_t j = 0; j < g.x.size(); ++j) v += g.w[j] * g.f[j] * pdf((next.x[i] - g.x[j]) / sd);
        next.f[i] = v / sd;
      }
    }
    g = std::move(next);
    t_prev = tk;
  }
  return c;
}

Design make_design(Spending s, double alpha, int look_every, int max_n) {
  Design d;
  d.spending = s;
  d.alpha = alpha;
  d.look_every = look_every;
  d.max_n = max_n;
  d.looks = look_schedule(look_every, max_n);
  for (int n : d.looks) {
    d.fractions.push_back(static_cast<double>(n) / static_cast<double>(max_n));
    d.spent.push_back(alpha_spent(s, alpha, d.fractions.back()));
  }
  d.boundaries = boundaries(s, alpha, d.fractions);
  return d;
}

double rank_sum_z(const std::vector<double>& xs, const std::vector<double>& ys) {
  // compare::mann_whitney: the exact permutation p when both sides have <= 20
  // values and nothing ties, else the normal approximation with the tie
  // correction and a continuity correction (whose z this returns).
  const compare::MannWhitney mw = compare::mann_whitney(xs, ys);
  std::size_t m = 0, n = 0;
  for (double v : xs) m += std::isfinite(v) ? 1 : 0;
  for (double v : ys) n += std::isfinite(v) ? 1 : 0;
  if (m == 0 || n == 0 || !(mw.p < 1)) return 0;
  const double d = mw.u - static_cast<double>(m) * static_cast<double>(n) / 2;
  if (d == 0) return 0;
  const double z = upper_quantile(mw.p / 2);  // |z| with the same two-sided p
  return d > 0 ? z : -z;
}

int look_index_at(const Design& d, int n) {
  for (std::size_t k = 0; k < d.looks.size(); ++k)
    if (d.looks[k] == n) return static_cast<int>(k);
  return -1;
}

const Look& evaluate_look(const Design& d, std::size_t look_index, const std::vector<double>& arm,
                          const std::vector<double>& control, PairState* state) {
  Look l;
  l.look = static_cast<int>(look_index) + 1;
  l.n = d.looks.at(look_index);
  const auto take = [&](const std::vector<double>& v) {
    return std::vector<double>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                                          v.size(), static_cast<std::size_t>(l.n))));
  };
  l.z = rank_sum_z(take(arm), take(control));
  l.boundary = d.boundaries.at(look_index);
  l.alpha_spent = d.spent.at(look_index);
  l.stop = std::fabs(l.z) >= l.boundary && l.z != 0;
  state->history.push_back(l);
  if (l.stop) {
    state->stopped = true;
    state->stop_look = l.look;
    state->direction = l.z > 0 ? 1 : -1;
  }
  return state->history.back();
}

}  // namespace shootdown::sequential
