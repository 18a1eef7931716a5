// SPDX-License-Identifier: Apache-2.0
// compare.html: one self-contained page, no scripts, no external resources.
// Per metric, one horizontal strip/box plot: a row per arm with the IQR box,
// the median line, min-max whiskers and every trial as a dot (vertically
// jittered by trial number so ties stay visible). Elements carry classes and
// data attributes (data-arm, data-metric, data-value) so tests can check
// structure instead of pixels.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/units.hpp"
#include "sink/compare_out.hpp"

namespace shootdown::sink {

namespace {

using compare::Metric;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string num(double x) {
  if (!std::isfinite(x)) return "-";
  if (std::fabs(x) >= 100 || x == 0) return fmt::format("{:.0f}", x);
  return fmt::format("{:.3g}", x);
}

// 1-2-5 ticks over [lo, hi].
std::vector<double> ticks(double lo, double hi) {
  std::vector<double> t;
  const double span = hi - lo;
  if (!(span > 0)) return {lo};
  const double raw = span / 6;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= raw) {
      step = p * m;
      break;
    }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

const char* kColors[] = {"#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2", "#72b7b2", "#9d755d", "#eeca3b"};

std::string strip_box(const CompareReport& r, Metric m) {
  const std::size_t mi = static_cast<std::size_t>(m);
  double lo = 0, hi = 0;
  bool any = false;
  for (const auto& t : r.trials) {
    const double v = t.get(m);
    if (!std::isfinite(v)) continue;
    if (!any) lo = hi = v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    any = true;
  }
  const int row = 44, left = 150, right = 30, top = 30, bottom = 40, width = 900;
  const int n = static_cast<int>(r.summary.size());
  const int height = top + bottom + row * std::max(n, 1);
  std::string s = fmt::format(
      "<svg class=\"chart\" data-chart=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n",
      compare::metric_key(m), width, height, width, height);
  s += fmt::format("<title>{}</title>\n", esc(compare::metric_key(m)));
  if (!any) {
    s += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">no values (not measured in this run)</text>\n</svg>\n",
                     left, top + 20);
    return s;
  }
  lo = std::min(lo, 0.0);  // stall, counts and durations are >= 0: show the zero line
  if (hi <= lo) hi = lo + 1;
  const double pad = (hi - lo) * 0.04;
  hi += pad;
  const double plot = width - left - right;
  auto X = [&](double v) { return left + (v - lo) / (hi - lo) * plot; };
  // Axis and grid.
  for (double t : ticks(lo, hi)) {
    const double x = X(t);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#ddd\"/>\n", x, top, x,
                     height - bottom);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#444\">{}</text>\n", x,
                     height - bottom + 16, num(t));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#222\">{}</text>\n", left + plot / 2,
                   height - 6, esc(compare::metric_key(m)));
  for (int k = 0; k < n; ++k) {
    const auto& a = r.summary[static_cast<std::size_t>(k)];
    const auto& st = a.metrics[mi];
    const char* color = kColors[static_cast<std::size_t>(k) % (sizeof kColors / sizeof kColors[0])];
    const double cy = top + row * k + row / 2.0;
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>\n",
                     left - 10, cy, esc(a.arm));
    if (st.n == 0) continue;
    s += fmt::format("<g class=\"arm\" data-arm=\"{}\" data-metric=\"{}\" data-n=\"{}\" data-median=\"{}\">\n",
                     esc(a.arm), compare::metric_key(m), st.n, st.median);
    s +=
        fmt::format("<line class=\"whisker\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n",
                    X(st.min), cy, X(st.max), cy, color);
    s += fmt::format(
        "<rect class=\"box\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\" "
        "fill-opacity=\"0.15\" "
        "stroke=\"{}\"><title>median {} IQR {}-{} (n={})</title></rect>\n",
        X(st.q1), cy - 12, std::max(1.0, X(st.q3) - X(st.q1)), 24, color, color, num(st.median), num(st.q1), num(st.q3),
        st.n);
    s += fmt::format(
        "<line class=\"median\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2.5\"/>\n",
        X(st.median), cy - 14, X(st.median), cy + 14, color);
    for (const auto& t : r.trials) {
      if (t.arm != a.arm || !std::isfinite(t.get(m))) continue;
      const double jitter = ((t.trial * 7) % 11 - 5) * 2.0;
      s += fmt::format(
          "<circle class=\"trial\" data-trial=\"{}\" data-value=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\" "
          "fill-opacity=\"0.7\"><title>trial {} (run #{}): {}</title></circle>\n",
          t.trial, t.get(m), X(t.get(m)), cy + jitter, color, t.trial, t.order, num(t.get(m)));
    }
    s += "</g>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace

std::string compare_html(const CompareReport& r) {
  std::string names;
  for (const auto& a : r.arms) names += (names.empty() ? "" : " vs ") + a.label;
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  o += "<title>shootdown compare: " + esc(names) + "</title>\n";
  o += "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse}td,th{padding:2px "
       "10px;text-align:right}td:first-child,th:first-child{text-align:left}"
       "tr:nth-child(even){background:#f4f4f4}.worse{color:#b00}.better{color:#070}pre{background:#f8f8f8;padding:8px}"
       "</style></head><body>\n";
  o += "<h1>shootdown compare: " + esc(names) + "</h1>\n";
  o +=
      fmt::format("<p>{} trials per arm, seed {}, {:.1f} s, workload {}, chunk {}, culprit cpu{}{}.</p>\n",
                  r.trials_per_arm, r.seed, r.duration_s, esc(r.workload), esc(format_size(r.plan.chunk_size)),
                  r.plan.culprit_cpu, r.complete ? "" : " &mdash; <b>incomplete: " + esc(r.incomplete_reason) + "</b>");
  for (const auto& n : r.notes) o += "<p class=\"note\">" + esc(n) + "</p>\n";
  o += "<h2>Verdict</h2>\n<ul>\n";
  for (std::size_t k = 1; k < r.summary.size(); ++k) {
    const int d = r.summary[k].decision;
    o += fmt::format("<li class=\"verdict {}\" data-arm=\"{}\">{}</li>\n",
                     d > 0   ? "worse"
                     : d < 0 ? "better"
                             : "same",
                     esc(r.summary[k].arm), esc(r.summary[k].verdict));
  }
  if (r.sequential)
    for (std::size_t k = 1; k < r.summary.size(); ++k)
      if (r.summary[k].sequential)
        o +=
            "<li class=\"sequential\">sequential: " + esc(compare::sequential_line(r.summary[k], r.design)) + "</li>\n";
  for (const auto& g : r.gates)
    o += fmt::format("<li class=\"gate\">gate {}: {} ({})</li>\n", g.failed ? "FAILED" : "passed", esc(g.text),
                     esc(g.detail));
  o += "</ul>\n<h2>Per-arm medians</h2>\n<table><tr><th>arm</th>";
  for (Metric m : compare::kAllMetrics) o += std::string("<th>") + compare::metric_key(m) + "</th>";
  o += "</tr>\n";
  for (const auto& a : r.summary) {
    o += "<tr><td>" + esc(a.arm) + "</td>";
    for (Metric m : compare::kAllMetrics) {
      const auto& st = a.metrics[static_cast<std::size_t>(m)];
      o += "<td>" + (st.n ? num(st.median) + " <small>(" + num(st.q1) + "&ndash;" + num(st.q3) + ")</small>" : "-") +
           "</td>";
    }
    o += "</tr>\n";
  }
  o += "</table>\n<p><small>median (IQR) over trials; values per release, averaged over victim CPUs; "
       "stall = time above the baseline median in the release window.</small></p>\n";
  o += "<h2>Distributions over trials</h2>\n";
  for (Metric m : {Metric::kStallUs, Metric::kShootdowns, Metric::kIpiStallUs, Metric::kP999Us, Metric::kMaxUs,
                   Metric::kReleaseUs, Metric::kUnexplainedUs}) {
    o += std::string("<h3>") + compare::metric_key(m) + "</h3>\n" + strip_box(r, m);
  }
  o += "<h2>Command</h2>\n<pre>" + esc(r.command_line) + "</pre>\n</body></html>\n";
  return o;
}

}  // namespace shootdown::sink
