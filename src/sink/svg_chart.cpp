// SPDX-License-Identifier: Apache-2.0
#include "sink/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <tuple>

namespace shootdown::sink::svg {

namespace {

constexpr double kEps = 1e-9;

// Pixel coordinates with one decimal and no trailing ".0": keeps big charts
// small without visible rounding.
std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  const double r = std::round(v * 10.0) / 10.0;
  if (r == std::floor(r)) return fmt::format("{:.0f}", r);
  return fmt::format("{:.1f}", r);
}

std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// v rounded to `digits` significant digits.
double round_sig(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double mag = std::floor(std::log10(std::fabs(v)));
  const double f = std::pow(10.0, static_cast<double>(digits - 1) - mag);
  return std::round(v * f) / f;
}

std::string fixed_sig(double v, int digits) {
  if (v == 0) return "0";
  const int mag = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::max(0, digits - 1 - mag);
  return trim_zeros(fmt::format("{:.{}f}", v, decimals));
}

double nice_step(double range, int target) {
  if (range <= 0 || !std::isfinite(range)) return 1;
  const double raw = range / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nice = f <= 1.0 ? 1 : f <= 2.0 ? 2 : f <= 5.0 ? 5 : 10;
  return nice * mag;
}

struct Mapper {
  double lo = 0, hi = 1;  // data range
  double p0 = 0, p1 = 1;  // pixel range (p1 may be < p0 for y)
  Scale scale = Scale::kLinear;

  double t(double v) const {
    if (scale == Scale::kLog) {
      const double l = std::log10(std::max(v, lo));
      return (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    }
    return (v - lo) / (hi - lo);
  }
  double operator()(double v) const {
    double f = t(v);
    if (!std::isfinite(f)) f = 0;
    // Clamp slightly outside so out-of-range values sit on the frame.
    f = std::clamp(f, -0.02, 1.02);
    return p0 + f * (p1 - p0);
  }
};

std::string attrs_of(const std::vector<std::pair<std::string, std::string>>& attrs) {
  std::string out;
  for (const auto& [k, v] : attrs) out += fmt::format(" data-{}=\"{}\"", escape(k), escape(v));
  return out;
}

const char* scale_name(Scale s) {
  return s == Scale::kLog ? "log" : "linear";
}
const char* format_name(Format f) {
  switch (f) {
    case Format::kDuration:
      return "duration";
    case Format::kPercentile:
      return "percentile";
    case Format::kNumber:
      return "number";
  }
  return "number";
}

// Data range of an axis: explicit bounds win; log axes ignore values <= 0.
std::pair<double, double> data_range(const std::vector<double>& vals, const Axis& a) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    if (a.scale == Scale::kLog && v <= 0) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (a.min) lo = *a.min;
  if (a.max) hi = *a.max;
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = a.scale == Scale::kLog ? 1 : 0;
    hi = a.scale == Scale::kLog ? 10 : 1;
  }
  if (hi <= lo) {
    if (a.scale == Scale::kLog) {
      lo /= 2;
      hi = hi * 2;
    } else {
      const double d = std::max(std::fabs(lo) * 0.1, 1.0);
      lo -= d;
      hi += d;
    }
  }
  return {lo, hi};
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_duration(double ns, int precision) {
  if (!std::isfinite(ns)) return "-";
  precision = std::max(1, precision);
  const double r = round_sig(ns, precision);
  const double a = std::fabs(r);
  if (a == 0) return "0";
  if (a < 1e3) return fixed_sig(r, precision) + " ns";
  if (a < 1e6) return fixed_sig(r / 1e3, precision) + " µs";
  if (a < 1e9) return fixed_sig(r / 1e6, precision) + " ms";
  return fixed_sig(r / 1e9, precision) + " s";
}

std::string format_number(double v) {
  if (!std::isfinite(v)) return "-";
  const double r = round_sig(v, 3);
  const double a = std::fabs(r);
  if (a >= 1e9) return fixed_sig(r / 1e9, 3) + "G";
  if (a >= 1e6) return fixed_sig(r / 1e6, 3) + "M";
  if (a >= 1e4) return fixed_sig(r / 1e3, 3) + "k";
  return fixed_sig(r, 4);
}

std::string format_percentile_axis(double x) {
  if (x <= 0) return "0%";
  const double p = 100.0 * (1.0 - std::pow(10.0, -x));
  const int decimals = std::max(0, static_cast<int>(std::ceil(x - kEps)) - 2);
  return trim_zeros(fmt::format("{:.{}f}", p, decimals)) + "%";
}

std::string format_value(Format f, double v) {
  switch (f) {
    case Format::kDuration:
      return format_duration(v);
    case Format::kPercentile:
      return format_percentile_axis(v);
    case Format::kNumber:
      return format_number(v);
  }
  return format_number(v);
}

std::vector<double> nice_ticks(double lo, double hi, Scale scale, int target) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  const double slack = (hi - lo) * 1e-9;
  if (scale == Scale::kLog) {
    if (lo <= 0) return out;
    const int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    const int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    const bool fine = d1 - d0 < 3;
    // Many decades: label every k-th power so labels do not collide.
    const int every = std::max(1, (d1 - d0 + target - 1) / std::max(1, target));
    for (int d = d0; d <= d1; ++d) {
      const double base = std::pow(10.0, d);
      if ((d - d0) % every == 0 && base >= lo * (1 - 1e-9) && base <= hi * (1 + 1e-9)) out.push_back(base);
      if (fine)
        for (double m : {2.0, 5.0}) {
          const double v = base * m;
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const double step = nice_step(hi - lo, target);
  const double first = std::ceil((lo - slack) / step) * step;
  for (int i = 0; i < 1000; ++i) {
    double v = first + step * i;
    if (v > hi + slack) break;
    if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0"
    out.push_back(v);
  }
  return out;
}

std::pair<double, double> nice_range(double lo, double hi, Scale scale) {
  if (scale == Scale::kLog) {
    if (lo <= 0) lo = 1;
    if (hi <= lo) hi = lo * 10;
    return {std::pow(10.0, std::floor(std::log10(lo) + 1e-9)), std::pow(10.0, std::ceil(std::log10(hi) - 1e-9))};
  }
  if (hi <= lo) return {lo, lo + 1};
  const double step = nice_step(hi - lo, 6);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

std::vector<Point> downsample_minmax(const std::vector<Point>& pts, double x0, double x1, int columns) {
  std::vector<Point> in;
  in.reserve(pts.size());
  for (const Point& p : pts)
    if (p.x >= x0 && p.x <= x1) in.push_back(p);
  if (columns <= 0 || in.size() <= static_cast<std::size_t>(columns) * 2 || !(x1 > x0)) return in;
  std::vector<Point> out;
  out.reserve(static_cast<std::size_t>(columns) * 2);
  const double w = (x1 - x0) / columns;
  std::size_t i = 0;
  while (i < in.size()) {
    if (!std::isfinite(in[i].y)) {  // gaps are kept as they are
      out.push_back(in[i++]);
      continue;
    }
    const auto col = std::min<long>(columns - 1, static_cast<long>((in[i].x - x0) / w));
    std::size_t lo = i, hi = i;
    std::size_t j = i + 1;
    for (; j < in.size(); ++j) {
      const auto cj = std::min<long>(columns - 1, static_cast<long>((in[j].x - x0) / w));
      if (cj != col || !std::isfinite(in[j].y)) break;
      if (in[j].y < in[lo].y) lo = j;
      if (in[j].y > in[hi].y) hi = j;
    }
    if (lo == hi) {
      out.push_back(in[lo]);
    } else {
      out.push_back(in[std::min(lo, hi)]);
      out.push_back(in[std::max(lo, hi)]);
    }
    i = j;
  }
  return out;
}

double percentile_axis_x(double q) {
  if (q <= 0) return 0;
  if (q >= 1) return std::numeric_limits<double>::infinity();
  return std::log10(1.0 / (1.0 - q));
}

std::vector<Point> percentile_curve(const hdr::Histogram& h) {
  std::vector<Point> out;
  const std::int64_t n = h.total_count();
  if (n == 0) return out;
  const double last_x = std::log10(static_cast<double>(n));
  std::int64_t cum = 0;
  double prev_x = 0;
  const auto counts = h.counts();
  for (std::int32_t i = 0; i < h.counts_length(); ++i) {
    const std::int64_t c = counts[static_cast<std::size_t>(i)];
    if (c == 0) continue;
    cum += c;
    const double v = static_cast<double>(h.highest_equivalent(h.value_from_index(i)));
    const double x =
        cum >= n ? last_x : std::min(last_x, percentile_axis_x(static_cast<double>(cum) / static_cast<double>(n)));
    out.push_back({prev_x, v});
    out.push_back({x, v});
    prev_x = x;
  }
  return out;
}

std::vector<Point> percentile_curve(const std::vector<std::pair<double, double>>& pct_values, std::int64_t count) {
  std::vector<Point> out;
  if (count <= 0) return out;
  const double last_x = std::log10(static_cast<double>(std::max<std::int64_t>(count, 2)));
  double prev_x = 0;
  for (const auto& [p, v] : pct_values) {
    const double x = p >= 100 ? last_x : std::min(last_x, percentile_axis_x(p / 100.0));
    out.push_back({prev_x, v});
    out.push_back({x, v});
    prev_x = x;
  }
  return out;
}

namespace {

constexpr double kRowsTop = 9;  // the first row of event ticks: below the lowest y label
constexpr double kRowHeight = 11;

// Where a line chart draws: the plot's pixel box, the data ranges it maps
// and the stack's totals per bucket (the top of the highest layer).
struct LineFrame {
  double H = 0;
  double L = 0, R = 0, T = 0, B = 0;
  double tick_rows = 0;
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  Mapper mx, my;
  std::vector<double> stack_total;
};

std::vector<double> stack_totals(const Stack& stack) {
  std::vector<double> total;
  for (const auto& l : stack.layers) {
    if (total.size() < l.y.size()) total.resize(l.y.size(), 0.0);
    for (std::size_t k = 0; k < l.y.size(); ++k)
      if (std::isfinite(l.y[k]) && l.y[k] > 0) total[k] += l.y[k];
  }
  return total;
}

// The data ranges of both axes: every point, marker, band, tick and stack
// bucket is inside them.
void fit_ranges(const LineChart& c, LineFrame& f) {
  std::vector<double> xs, ys;
  for (const auto& s : c.series)
    for (const auto& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  for (const auto& m : c.markers) xs.push_back(m.x);
  for (const auto& b : c.bands) {
    xs.push_back(b.x0);
    xs.push_back(b.x1);
  }
  for (const auto& t : c.ticks) xs.insert(xs.end(), t.x.begin(), t.x.end());
  if (!f.stack_total.empty()) {
    xs.push_back(c.stack.x0);
    xs.push_back(c.stack.x0 + c.stack.dx * static_cast<double>(f.stack_total.size()));
    ys.push_back(0);
    ys.insert(ys.end(), f.stack_total.begin(), f.stack_total.end());
  }
  std::tie(f.x_lo, f.x_hi) = data_range(xs, c.x);
  std::tie(f.y_lo, f.y_hi) = data_range(ys, c.y);
  if (!c.y.min || !c.y.max) {
    auto nr = nice_range(f.y_lo, f.y_hi, c.y.scale);
    if (!c.y.min) f.y_lo = c.y.scale == Scale::kLinear && f.y_lo > 0 ? 0 : nr.first;
    if (!c.y.max) f.y_hi = nr.second;
  }
  if (c.x.format == Format::kPercentile && !c.x.max) f.x_hi = std::max(1.0, std::ceil(f.x_hi - 1e-9));
}

LineFrame line_frame(const LineChart& c) {
  LineFrame f;
  f.H = c.height;
  f.tick_rows = static_cast<double>(c.ticks.size());
  // Tick rows are labelled in the left margin: wider when there are some.
  f.L = c.ticks.empty() ? 78 : 112;
  f.R = c.width - 16.0;
  f.T = 30;
  f.B = f.H - 40 - (f.tick_rows > 0 ? kRowsTop + f.tick_rows * kRowHeight : 0) -
        22;  // x labels, axis label, tick rows, legend
  f.stack_total = stack_totals(c.stack);
  fit_ranges(c, f);
  f.mx = Mapper{f.x_lo, f.x_hi, f.L, f.R, c.x.scale};
  f.my = Mapper{f.y_lo, f.y_hi, f.B, f.T, c.y.scale};
  return f;
}

// The <svg> element, its title and caption, and the plot area (its mapping
// is exposed for the hover script) with its frame.
void draw_open(const LineChart& c, const LineFrame& f, std::string& o) {
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{}\" data-scale=\"{}\"{} viewBox=\"0 0 "
      "{} {}\" "
      "width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      escape(c.id), scale_name(c.y.scale), attrs_of(c.attrs), c.width, c.height, c.width, c.height, escape(c.title));
  o += fmt::format("<title>{}</title>\n", escape(c.title));
  o += fmt::format("<text class=\"caption\" x=\"{}\" y=\"18\">{}</text>\n", px(f.L), escape(c.title));
  o += fmt::format(
      "<g class=\"plot\" data-l=\"{}\" data-r=\"{}\" data-t=\"{}\" data-b=\"{}\" data-xmin=\"{}\" data-xmax=\"{}\" "
      "data-ymin=\"{}\" data-ymax=\"{}\" data-xscale=\"{}\" data-yscale=\"{}\" data-xfmt=\"{}\" data-yfmt=\"{}\">\n",
      px(f.L), px(f.R), px(f.T), px(f.B), f.x_lo, f.x_hi, f.y_lo, f.y_hi, scale_name(c.x.scale), scale_name(c.y.scale),
      format_name(c.x.format), format_name(c.y.format));
  o += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", px(f.L), px(f.T),
                   px(f.R - f.L), px(f.B - f.T));
}

// Bands, drawn under everything.
void draw_bands(const LineChart& c, const LineFrame& f, std::string& o) {
  if (c.bands.empty()) return;
  o += "<g class=\"bands\">\n";
  for (const auto& b : c.bands) {
    double a = f.mx(b.x0), z = f.mx(b.x1);
    if (z - a < 1.5) {  // never invisible
      const double mid = (a + z) / 2;
      a = mid - 0.75;
      z = mid + 0.75;
    }
    o += fmt::format(
        "<rect class=\"band\" data-kind=\"{}\" data-index=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "fill=\"{}\"><title>{}</title></rect>\n",
        escape(b.kind), b.index, px(a), px(f.T), px(z - a), px(f.B - f.T),
        escape(b.color.empty() ? "#f5c77e" : b.color), escape(b.label));
  }
  o += "</g>\n";
}

// Grid lines, then the labelled y and x axes.
void draw_grid_and_axes(const LineChart& c, const LineFrame& f, std::string& o) {
  o += "<g class=\"grid\">\n";
  std::vector<double> yt = nice_ticks(f.y_lo, f.y_hi, c.y.scale, 6);
  for (double v : yt) {
    const double y = f.my(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", px(f.L), px(f.R), px(y), px(y));
  }
  std::vector<double> xt;
  if (c.x.format == Format::kPercentile) {
    for (double v = std::ceil(f.x_lo); v <= f.x_hi + 1e-9; v += 1) xt.push_back(v);
  } else {
    xt = nice_ticks(f.x_lo, f.x_hi, c.x.scale, 8);
  }
  for (double v : xt) {
    const double x = f.mx(v);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", px(x), px(x), px(f.T), px(f.B));
  }
  o += "</g>\n";
  o += "<g class=\"axis y\">\n";
  for (double v : yt)
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(f.L - 5),
                     px(f.my(v) + 4), escape(format_value(c.y.format, v)));
  o += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      px((f.T + f.B) / 2), escape(c.y.label));
  o += "</g>\n";
  const double xlab_y = f.B + (f.tick_rows > 0 ? kRowsTop + f.tick_rows * kRowHeight : 0) + 16;
  o += "<g class=\"axis x\">\n";
  for (double v : xt) {
    // Labels near the right edge end there instead of being cut off.
    const double x = f.mx(v);
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>\n", px(x), px(xlab_y),
                     x > f.R - 30 ? "end" : "middle", escape(format_value(c.x.format, v)));
  }
  o += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   px((f.L + f.R) / 2), px(xlab_y + 16), escape(c.x.label));
  o += "</g>\n";
}

// The pixel geometry of the stack's buckets.
struct StackGeometry {
  const LineChart& c;
  const LineFrame& f;
  double y(double v) const { return f.my(std::clamp(v, f.y_lo, f.y_hi)); }
  double x(std::size_t k) const { return f.mx(c.stack.x0 + c.stack.dx * static_cast<double>(k)); }
};

// One layer on top of `base` (advanced by the layer): a closed outline per
// run of buckets where the layer is > 0 (a layer that is zero almost
// everywhere costs almost nothing).
void draw_stack_layer(const StackLayer& l, const StackGeometry& g, std::vector<double>& base, std::string& o) {
  std::string d;
  double total = 0;
  std::size_t nonzero = 0;
  const auto val = [&](std::size_t k) { return k < l.y.size() && std::isfinite(l.y[k]) ? std::max(0.0, l.y[k]) : 0.0; };
  std::size_t k = 0;
  const std::size_t n = base.size();
  while (k < n) {
    if (val(k) <= 0) {
      ++k;
      continue;
    }
    std::size_t e = k;
    while (e + 1 < n && val(e + 1) > 0) ++e;
    d += "M" + px(g.x(k)) + " " + px(g.y(base[k]));
    for (std::size_t j = k; j <= e; ++j) d += "V" + px(g.y(base[j] + val(j))) + "H" + px(g.x(j + 1));
    for (std::size_t j = e + 1; j-- > k;) d += "V" + px(g.y(base[j])) + "H" + px(g.x(j));
    d += "Z";
    for (std::size_t j = k; j <= e; ++j) {
      total += val(j);
      ++nonzero;
    }
    k = e + 1;
  }
  for (std::size_t j = 0; j < n; ++j) base[j] += val(j);
  o += fmt::format(
      "<path class=\"stack\" data-kind=\"{}\" data-total=\"{}\" data-buckets=\"{}\" fill=\"{}\"{} d=\"{}\">"
      "<title>{}: {} in {} buckets</title></path>\n",
      escape(l.kind), std::llround(total), nonzero, escape(l.color),
      l.opacity < 1 ? fmt::format(" fill-opacity=\"{}\"", px(l.opacity)) : std::string(), d.empty() ? "M0 0" : d,
      escape(l.label), escape(format_value(g.c.y.format, total)), nonzero);
}

// Stacked areas: one path per layer, then a mark on each bucket above the
// axis top.
void draw_stack(const LineChart& c, const LineFrame& f, std::string& o) {
  if (f.stack_total.empty()) return;
  const StackGeometry g{c, f};
  std::vector<double> base(f.stack_total.size(), 0.0);
  o += "<g class=\"stack-group\">\n";
  for (const auto& l : c.stack.layers) draw_stack_layer(l, g, base, o);
  std::string clip;
  std::size_t clipped = 0;
  for (std::size_t j = 0; j < f.stack_total.size(); ++j)
    if (f.stack_total[j] > f.y_hi * (1 + 1e-9)) {
      ++clipped;
      const double xm = (g.x(j) + g.x(j + 1)) / 2;
      clip += "M" + px(xm - 3) + " " + px(f.T + 6) + "L" + px(xm) + " " + px(f.T) + "L" + px(xm + 3) + " " +
              px(f.T + 6) + "Z";
    }
  if (clipped)
    o += fmt::format(
        "<path class=\"clipped\" data-count=\"{}\" fill=\"#212529\" d=\"{}\"><title>{} buckets above the axis "
        "top</title></path>\n",
        clipped, clip, clipped);
  o += "</g>\n";
}

// One series' path, downsampled to two points per pixel column.
std::string series_path(const Series& s, const LineFrame& f) {
  const int columns = std::max(1, static_cast<int>(f.R - f.L));
  const std::vector<Point> pts = downsample_minmax(s.points, f.x_lo, f.x_hi, columns);
  std::string d;
  d.reserve(pts.size() * 12);
  bool pen_up = true;
  std::size_t drawn = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double x = f.mx(pts[i].x);
    if (!std::isfinite(pts[i].y)) {  // a gap: a step holds until here, then the line ends
      if (!pen_up && s.step) d += "H" + px(x);
      pen_up = true;
      continue;
    }
    const double y = f.my(pts[i].y);
    if (pen_up) {
      d += "M" + px(x) + " " + px(y);
      pen_up = false;
    } else if (s.step) {
      d += "H" + px(x) + "V" + px(y);
    } else {
      d += "L" + px(x) + " " + px(y);
    }
    ++drawn;
  }
  if (drawn == 1) d += "h1";  // a lone point stays visible
  return d;
}

void draw_series(const LineChart& c, const LineFrame& f, std::string& o) {
  o += "<g class=\"series-group\" fill=\"none\">\n";
  for (const auto& s : c.series)
    o += fmt::format(
        "<path class=\"series\" data-series=\"{}\" data-points=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{} d=\"{}\">"
        "<title>{}</title></path>\n",
        escape(s.name), s.points.size(), escape(s.color), px(s.width),
        s.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", escape(s.dash)), series_path(s, f),
        escape(s.name));
  o += "</g>\n";
}

void draw_markers(const LineChart& c, const LineFrame& f, std::string& o) {
  if (c.markers.empty()) return;
  o += "<g class=\"markers\">\n";
  for (const auto& m : c.markers) {
    const double x = f.mx(m.x);
    o += fmt::format(
        "<line class=\"marker\" data-kind=\"{}\" data-index=\"{}\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" "
        "stroke=\"{}\">"
        "<title>{}</title></line>\n",
        escape(m.kind), m.index, px(x), px(x), px(f.T), px(f.B), escape(m.color.empty() ? "#333" : m.color),
        escape(m.label));
  }
  o += "</g>\n";
}

// Event ticks, one row per kind below the plot; ticks on the same pixel
// share one sub-path (data-count keeps the real number).
void draw_event_ticks(const LineChart& c, const LineFrame& f, std::string& o) {
  if (c.ticks.empty()) return;
  o += "<g class=\"events\">\n";
  for (std::size_t k = 0; k < c.ticks.size(); ++k) {
    const auto& t = c.ticks[k];
    const double y0 = f.B + kRowsTop + static_cast<double>(k) * kRowHeight;
    std::set<long> seen;
    std::string d;
    for (double v : t.x) {
      const double x = f.mx(v);
      if (!seen.insert(std::lround(x * 2)).second) continue;
      d += "M" + px(x) + " " + px(y0) + "v8";
    }
    o += fmt::format("<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(f.L - 5),
                     px(y0 + 8), escape(t.label));
    o += fmt::format(
        "<path class=\"ticks\" data-kind=\"{}\" data-count=\"{}\" stroke=\"{}\" d=\"{}\"><title>{}: "
        "{}</title></path>\n",
        escape(t.kind), t.x.size(), escape(t.color), d.empty() ? "M0 0" : d, escape(t.label), t.x.size());
  }
  o += "</g>\n";
}

// Notes (what is missing), the hover cursor and readout; closes the plot.
void draw_notes_and_close_plot(const LineChart& c, const LineFrame& f, std::string& o) {
  for (std::size_t i = 0; i < c.notes.size(); ++i)
    o += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\">{}</text>\n", px(f.L + 8),
                     px(f.T + 16 + 15 * static_cast<double>(i)), escape(c.notes[i]));
  o += "<line class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"0\" y2=\"0\" visibility=\"hidden\"/>\n";
  o += "<text class=\"readout\" x=\"0\" y=\"0\" visibility=\"hidden\"></text>\n";
  o += "</g>\n";
}

// The legend, one item after the other on the bottom line.
class Legend {
 public:
  Legend(const LineFrame& f, std::string& o) : lx_(f.L), ly_(f.H - 8), o_(o) {}
  void item(const std::string& kind, const std::string& name, const std::string& color, const std::string& dash,
            bool box, double opacity = 1) {
    if (box)
      o_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"9\" fill=\"{}\"{}/>", px(lx_), px(ly_ - 8),
                        escape(color), opacity < 1 ? fmt::format(" fill-opacity=\"{}\"", px(opacity)) : std::string());
    else
      o_ += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>", px(lx_),
                        px(lx_ + 16), px(ly_ - 4), px(ly_ - 4), escape(color),
                        dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", escape(dash)));
    o_ += fmt::format("<text class=\"legend-item\" data-kind=\"{}\" x=\"{}\" y=\"{}\">{}</text>\n", escape(kind),
                      px(lx_ + 20), px(ly_), escape(name));
    lx_ += 28 + 6.5 * static_cast<double>(name.size());
  }

 private:
  double lx_;
  double ly_;
  std::string& o_;
};

void draw_legend(const LineChart& c, const LineFrame& f, std::string& o) {
  o += "<g class=\"legend\">\n";
  Legend legend(f, o);
  for (const auto& l : c.stack.layers) legend.item("stack", l.label, l.color, "", true, l.opacity);
  for (const auto& s : c.series) legend.item("series", s.legend.empty() ? s.name : s.legend, s.color, s.dash, false);
  std::set<std::string> done;
  for (const auto& m : c.markers)
    if (done.insert("m:" + m.kind).second)
      legend.item("marker", m.kind, m.color.empty() ? "#333" : m.color, "4 3", false);
  for (const auto& b : c.bands)
    if (done.insert("b:" + b.kind).second)
      legend.item("band", b.legend.empty() ? b.kind + " window" : b.legend, b.color.empty() ? "#f5c77e" : b.color, "",
                  true);
  o += "</g>\n";
}

}  // namespace

std::string render(const LineChart& c) {
  const LineFrame f = line_frame(c);
  std::string o;
  o.reserve(16384);
  draw_open(c, f, o);
  draw_bands(c, f, o);
  draw_grid_and_axes(c, f, o);
  draw_stack(c, f, o);
  draw_series(c, f, o);
  draw_markers(c, f, o);
  draw_event_ticks(c, f, o);
  draw_notes_and_close_plot(c, f, o);
  draw_legend(c, f, o);
  o += "</svg>\n";
  return o;
}

std::string render(const BarChart& c) {
  const double label_w = 190;
  const double L = label_w, R = c.width - 120.0, T = 30;
  const double bh = c.bar_height;
  const double B = T + bh * static_cast<double>(std::max<std::size_t>(1, c.bars.size()));
  const double H = B + 30 + 15 * static_cast<double>(c.notes.size());
  double hi = 0;
  for (const auto& b : c.bars) hi = std::max(hi, b.value);
  if (hi <= 0) hi = 1;
  hi = nice_range(0, hi, Scale::kLinear).second;
  const Mapper mx{0, hi, L, R, Scale::kLinear};

  std::string o;
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart bar-chart\" data-chart=\"{}\" data-scale=\"linear\"{} "
      "viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"{}\">\n",
      escape(c.id), attrs_of(c.attrs), c.width, px(H), c.width, px(H), escape(c.title));
  o += fmt::format("<title>{}</title>\n", escape(c.title));
  o += fmt::format("<text class=\"caption\" x=\"8\" y=\"18\">{}</text>\n", escape(c.title));
  o += "<g class=\"grid\">\n";
  const auto xt = nice_ticks(0, hi, Scale::kLinear, 6);
  for (double v : xt)
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", px(mx(v)), px(mx(v)), px(T), px(B));
  o += "</g>\n<g class=\"axis x\">\n";
  for (double v : xt)
    o += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(mx(v)), px(B + 16),
                     escape(format_value(c.format, v)));
  o += "</g>\n<g class=\"bars\">\n";
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const auto& b = c.bars[i];
    const double y = T + bh * static_cast<double>(i);
    const double w = std::max(0.0, mx(b.value) - L);
    const std::string val = format_value(c.format, b.value);
    o += fmt::format("<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", px(L - 6),
                     px(y + bh * 0.65), escape(b.label));
    o += fmt::format(
        "<rect class=\"bar\" data-kind=\"{}\" data-value=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
        "fill=\"{}\">"
        "<title>{}: {}{}</title></rect>",
        escape(b.kind), b.value, px(L), px(y + 3), px(w), px(bh - 6), escape(b.color.empty() ? "#4a7ab5" : b.color),
        escape(b.label), escape(val), escape(b.detail.empty() ? "" : " (" + b.detail + ")"));
    // The value after the bar when it fits in the chart, else inside the bar
    // (right-aligned, white), else ending at the chart's right edge. Width
    // estimated at 7.5 px per character (12 px sans-serif, generous).
    const std::string text = val + (b.detail.empty() ? "" : "  " + b.detail);
    const double text_w = 7.5 * static_cast<double>(text.size());
    std::string pos;
    if (L + w + 6 + text_w <= c.width - 4)
      pos = fmt::format("x=\"{}\"", px(L + w + 6));
    else if (w >= text_w + 12)
      pos = fmt::format("x=\"{}\" text-anchor=\"end\" style=\"fill:#fff\"", px(L + w - 6));
    else
      pos = fmt::format("x=\"{}\" text-anchor=\"end\"", px(c.width - 4));
    o += fmt::format("<text class=\"bar-value\" {} y=\"{}\">{}</text>\n", pos, px(y + bh * 0.65), escape(text));
  }
  o += "</g>\n";
  for (std::size_t i = 0; i < c.notes.size(); ++i)
    o += fmt::format("<text class=\"note\" x=\"8\" y=\"{}\">{}</text>\n", px(B + 34 + 15 * static_cast<double>(i)),
                     escape(c.notes[i]));
  o += "</svg>\n";
  return o;
}

}  // namespace shootdown::sink::svg
