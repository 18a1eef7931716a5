// SPDX-License-Identifier: Apache-2.0
// A small chart module: builds SVG strings (no I/O, no JS, no third-party
// code). Used by the HTML report (sink/html_report.cpp).
//
// Every element a test or a reader may want to find carries a class and data
// attributes, so charts can be checked by structure instead of by pixels:
//   <svg class="chart" data-chart="ID" data-scale="log|linear">
//   <path class="series" data-series="p99" data-points="N">
//   <line class="marker" data-kind="before" data-index="0">
//   <rect class="band" data-kind="release" data-index="0">
//   <path class="ticks" data-kind="tlb-shootdown" data-count="30">
//   <rect class="bar" data-kind="timer" data-value="1234">
//   <path class="stack" data-kind="tlb-shootdown" data-total="267300" data-buckets="9">
//   <path class="clipped" data-count="3">  (stack buckets above the y axis)
//   <text class="note">  (what is missing, e.g. no kernel evidence)
// Values are data units (ns for latencies); the module maps them to pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/hdr/histogram.hpp"

namespace shootdown::sink::svg {

enum class Scale : std::uint8_t { kLinear, kLog };

// How an axis labels its values.
enum class Format : std::uint8_t {
  kDuration,    // value in ns: "250 ns", "25 µs", "1.5 ms", "2 s" (signed)
  kPercentile,  // value is log10(1 / (1 - p)): 0 -> "0%", 1 -> "90%", 3 -> "99.9%"
  kNumber,      // plain number: "1.5k", "20"
};

struct Axis {
  std::string label;
  Scale scale = Scale::kLinear;
  Format format = Format::kNumber;
  std::optional<double> min;  // data units; default: from the data
  std::optional<double> max;
};

struct Point {
  double x = 0;
  double y = 0;
};

struct Series {
  std::string name;           // data-series, legend text
  std::string color;          // CSS color
  std::vector<Point> points;  // sorted by x; a non-finite y ends the line (a gap)
  bool step = false;          // each point's y holds until the next point's x
  double width = 1.5;
  std::string dash;    // stroke-dasharray, "" = solid
  std::string legend;  // legend text, "" = name
};

// A vertical line at x (e.g. a release's "before" marker).
struct Marker {
  double x = 0;
  std::string kind;   // data-kind
  int index = 0;      // data-index
  std::string label;  // tooltip
  std::string color;
};

// A shaded x range (e.g. a release window).
struct Band {
  double x0 = 0;
  double x1 = 0;
  std::string kind;
  int index = 0;
  std::string label;
  std::string color;
  std::string legend;  // legend text, "" = kind + " window"
};

// Short tick marks along the bottom of the plot at each x, one row per kind.
struct EventTicks {
  std::string kind;   // data-kind: tlb-shootdown, other-ipi, timer, irq, ...
  std::string label;  // legend text
  std::string color;
  std::vector<double> x;
};

// One layer of a stacked step area: y[k] is bucket k's value; bucket k spans
// [x0 + k * dx, x0 + (k + 1) * dx]. Layers stack in the order given (first
// at the bottom).
struct StackLayer {
  std::string kind;   // data-kind
  std::string label;  // legend text
  std::string color;
  std::vector<double> y;
  double opacity = 1;  // < 1: a background layer (fill-opacity)
};
struct Stack {
  double x0 = 0;
  double dx = 0;
  std::vector<StackLayer> layers;
};

struct LineChart {
  std::string id;     // data-chart
  std::string title;  // <title> and caption
  int width = 960;
  int height = 320;
  Axis x;
  Axis y;
  std::vector<Series> series;
  std::vector<Marker> markers;
  std::vector<Band> bands;
  std::vector<EventTicks> ticks;
  // Stacked areas under the series. Buckets whose total exceeds y.max are
  // drawn to the top of the plot and marked (class "clipped").
  Stack stack;
  std::vector<std::string> notes;  // shown inside the plot (what is missing)
  // Extra data-* attributes on the <svg> (name without "data-", value).
  std::vector<std::pair<std::string, std::string>> attrs;
};

struct Bar {
  std::string label;
  std::string kind;  // data-kind
  double value = 0;
  std::string color;
  std::string detail;  // tooltip text after the value
};

struct BarChart {
  std::string id;
  std::string title;
  int width = 960;
  int bar_height = 22;
  Format format = Format::kDuration;
  std::vector<Bar> bars;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> attrs;
};

// Renders a chart as one standalone <svg> element.
std::string render(const LineChart& c);
std::string render(const BarChart& c);

// --- building blocks (public for tests and for the report) ---

// XML text/attribute escaping (&, <, >, ", ').
std::string escape(std::string_view s);

// "250 ns", "25.3 µs", "1.5 ms", "2 s"; trailing zeros trimmed; negative
// values keep their sign. precision = significant digits (>= 1).
std::string format_duration(double ns, int precision = 3);
std::string format_number(double v);
// log10(1/(1-p)) axis value -> "99.9%".
std::string format_percentile_axis(double x);
std::string format_value(Format f, double v);

// Nice ticks covering [lo, hi]: linear steps of 1, 2 or 5 x 10^k (about
// `target` of them), or for log axes the powers of ten (with 2 and 5 between
// them when the range spans fewer than three decades). Only ticks inside
// [lo, hi] are returned; lo and hi must be finite (log: > 0).
std::vector<double> nice_ticks(double lo, double hi, Scale scale, int target = 6);
// Rounds [lo, hi] outward to nice values for an axis.
std::pair<double, double> nice_range(double lo, double hi, Scale scale);

// Downsampling by pixel column: points (sorted by x) in [x0, x1] are grouped
// into `columns` equal columns and only each column's minimum and maximum
// (in x order) are kept, so a spike is never lost. Points outside [x0, x1]
// are dropped. Returns the input unchanged when it already fits.
std::vector<Point> downsample_minmax(const std::vector<Point>& pts, double x0, double x1, int columns);

// The HdrHistogram percentile axis: x = log10(1 / (1 - q)), q in [0, 1).
double percentile_axis_x(double q);
// A histogram as a step series on that axis: for each non-empty bucket the
// value (highest equivalent, ns) holds from the previous cumulative fraction
// to its own; the last bucket (q = 1) is drawn at 1 / N (x = log10 N).
std::vector<Point> percentile_curve(const hdr::Histogram& h);
// Same from a few known percentiles (p in 0..100, value): for reports that
// only have summaries. The 100th percentile is drawn at x = log10(count).
std::vector<Point> percentile_curve(const std::vector<std::pair<double, double>>& pct_values, std::int64_t count);

}  // namespace shootdown::sink::svg
