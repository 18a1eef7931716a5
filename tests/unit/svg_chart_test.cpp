// SPDX-License-Identifier: Apache-2.0
// svg_chart: checked on its output (structure and numbers, not pixels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include "core/stats.hpp"
#include "sink/svg_chart.hpp"

using namespace shootdown;
using namespace shootdown::sink;

namespace {

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

// Every opened element is closed (or self-closed): a cheap well-formedness check.
bool balanced(const std::string& s) {
  std::vector<std::string> stack;
  const std::regex tag("<(/?)([a-zA-Z]+)[^>]*?(/?)>");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), tag); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[3] == "/") continue;
    if (m[1] == "/") {
      if (stack.empty() || stack.back() != m[2]) return false;
      stack.pop_back();
    } else {
      stack.push_back(m[2]);
    }
  }
  return stack.empty();
}

svg::LineChart sample_chart() {
  svg::LineChart c;
  c.id = "timeseries";
  c.title = "t <&> \"q\"";
  c.x = {"time", svg::Scale::kLinear, svg::Format::kDuration, std::nullopt, std::nullopt};
  c.y = {"latency", svg::Scale::kLog, svg::Format::kDuration, std::nullopt, std::nullopt};
  for (const char* name : {"p50", "p99", "max"}) {
    svg::Series s;
    s.name = name;
    s.color = "#000";
    s.step = true;
    for (int i = 0; i < 100; ++i) s.points.push_back({i * 1e6, 200.0 + i});
    c.series.push_back(s);
  }
  for (int k = 0; k < 3; ++k) {
    c.markers.push_back({k * 30e6, "before", k, "b", ""});
    c.markers.push_back({k * 30e6 + 5e6, "after", k, "a", ""});
    c.bands.push_back({k * 30e6, k * 30e6 + 6e6, "release", k, "w", "", ""});
  }
  c.ticks.push_back({"tlb-shootdown", "TLB", "#c00", {1e6, 2e6, 2e6 + 1}});
  c.ticks.push_back({"timer", "timer", "#00c", {}});
  return c;
}

}  // namespace

TEST(SvgFormat, DurationsPickTheUnit) {
  EXPECT_EQ(svg::format_duration(0), "0");
  EXPECT_EQ(svg::format_duration(250), "250 ns");
  EXPECT_EQ(svg::format_duration(1000), "1 µs");
  EXPECT_EQ(svg::format_duration(25300), "25.3 µs");
  EXPECT_EQ(svg::format_duration(1.5e6), "1.5 ms");
  EXPECT_EQ(svg::format_duration(2e9), "2 s");
  EXPECT_EQ(svg::format_duration(-2e6), "-2 ms");
  // Rounding moves to the next unit instead of printing "1000 ns".
  EXPECT_EQ(svg::format_duration(999.7), "1 µs");
}

TEST(SvgFormat, PercentileAxisLabels) {
  EXPECT_EQ(svg::format_percentile_axis(0), "0%");
  EXPECT_EQ(svg::format_percentile_axis(1), "90%");
  EXPECT_EQ(svg::format_percentile_axis(2), "99%");
  EXPECT_EQ(svg::format_percentile_axis(3), "99.9%");
  EXPECT_EQ(svg::format_percentile_axis(4), "99.99%");
  EXPECT_NEAR(svg::percentile_axis_x(0.999), 3.0, 1e-9);
  EXPECT_NEAR(svg::percentile_axis_x(0.9), 1.0, 1e-9);
  EXPECT_EQ(svg::percentile_axis_x(0), 0);
}

TEST(SvgFormat, EscapesMarkup) {
  EXPECT_EQ(svg::escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST(SvgTicks, LinearStepsAreNice) {
  const auto t = svg::nice_ticks(0, 1000, svg::Scale::kLinear, 5);
  ASSERT_EQ(t, (std::vector<double>{0, 200, 400, 600, 800, 1000}));
  const auto u = svg::nice_ticks(-3e6, 5e6, svg::Scale::kLinear, 8);
  ASSERT_FALSE(u.empty());
  EXPECT_NE(std::find(u.begin(), u.end(), 0.0), u.end());  // zero exactly, not -0 or 1e-10
  for (std::size_t i = 1; i < u.size(); ++i) EXPECT_DOUBLE_EQ(u[i] - u[i - 1], 1e6);
}

TEST(SvgTicks, LogTicksArePowersOfTen) {
  const auto t = svg::nice_ticks(100, 1e7, svg::Scale::kLog);
  ASSERT_EQ(t, (std::vector<double>{100, 1e3, 1e4, 1e5, 1e6, 1e7}));
  // Fewer than three decades: 2 and 5 in between.
  const auto u = svg::nice_ticks(100, 1e4, svg::Scale::kLog);
  EXPECT_EQ(u, (std::vector<double>{100, 200, 500, 1e3, 2e3, 5e3, 1e4}));
  const auto r = svg::nice_range(230, 101119, svg::Scale::kLog);
  EXPECT_EQ(r.first, 100);
  EXPECT_EQ(r.second, 1e6);
}

TEST(SvgDownsample, KeepsMinAndMaxPerColumn) {
  std::vector<svg::Point> pts;
  for (int i = 0; i < 1000000; ++i) pts.push_back({static_cast<double>(i), 250.0 + (i % 7)});
  pts[777777].y = 1e8;  // one spike among a million samples
  pts[123456].y = 1;    // one dip
  const auto d = svg::downsample_minmax(pts, 0, 999999, 800);
  EXPECT_LE(d.size(), 1600u);
  const auto mx = std::max_element(d.begin(), d.end(), [](auto a, auto b) { return a.y < b.y; });
  const auto mn = std::min_element(d.begin(), d.end(), [](auto a, auto b) { return a.y < b.y; });
  EXPECT_EQ(mx->y, 1e8);
  EXPECT_EQ(mx->x, 777777);
  EXPECT_EQ(mn->y, 1);
  EXPECT_TRUE(std::is_sorted(d.begin(), d.end(), [](auto a, auto b) { return a.x < b.x; }));
}

TEST(SvgDownsample, SmallInputUnchangedAndOutOfRangeDropped) {
  std::vector<svg::Point> pts{{0, 1}, {1, 5}, {2, 3}, {10, 9}};
  const auto d = svg::downsample_minmax(pts, 0, 5, 100);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[1].y, 5);
}

TEST(SvgPercentile, CurveFromHistogram) {
  hdr::Histogram h = make_latency_histogram();
  for (int i = 0; i < 999; ++i) h.record(100);
  h.record(50000);
  const auto c = svg::percentile_curve(h);
  ASSERT_EQ(c.size(), 4u);  // two buckets, two points each
  EXPECT_EQ(c[0].x, 0);
  EXPECT_EQ(c[0].y, 100);
  EXPECT_NEAR(c[1].x, 3.0, 1e-9);  // 999/1000 -> 99.9%
  EXPECT_EQ(c[3].y, static_cast<double>(h.max()));
  EXPECT_NEAR(c[3].x, 3.0, 1e-9);  // the max is drawn at 1/N
  EXPECT_TRUE(svg::percentile_curve(make_latency_histogram()).empty());
}

TEST(SvgLineChart, StructureCanBeCounted) {
  const std::string s = svg::render(sample_chart());
  EXPECT_TRUE(balanced(s)) << s.substr(0, 400);
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_NE(s.find("data-chart=\"timeseries\""), std::string::npos);
  EXPECT_NE(s.find("data-scale=\"log\""), std::string::npos);
  EXPECT_EQ(count(s, "class=\"series\""), 3u);
  EXPECT_EQ(count(s, "data-series=\"p99\""), 1u);
  EXPECT_EQ(count(s, "class=\"marker\" data-kind=\"before\""), 3u);
  EXPECT_EQ(count(s, "class=\"marker\" data-kind=\"after\""), 3u);
  EXPECT_EQ(count(s, "class=\"band\""), 3u);
  EXPECT_NE(s.find("class=\"ticks\" data-kind=\"tlb-shootdown\" data-count=\"3\""), std::string::npos);
  EXPECT_NE(s.find("data-kind=\"timer\" data-count=\"0\""), std::string::npos);
  // The title is escaped; no raw markup from data leaks in.
  EXPECT_NE(s.find("t &lt;&amp;&gt; &quot;q&quot;"), std::string::npos);
  EXPECT_EQ(s.find("t <&>"), std::string::npos);
  // Log axis in duration units.
  EXPECT_NE(s.find(">100 ns<"), std::string::npos);
  EXPECT_NE(s.find(">1 µs<"), std::string::npos);
}

TEST(SvgLineChart, HugeSeriesStaysSmall) {
  svg::LineChart c = sample_chart();
  c.series.resize(1);
  c.series[0].points.clear();
  for (int i = 0; i < 2000000; ++i) c.series[0].points.push_back({i * 10.0, 200.0 + (i % 13)});
  c.series[0].points[1500000].y = 5e7;
  const std::string s = svg::render(c);
  EXPECT_LT(s.size(), 60000u);
  EXPECT_NE(s.find("data-points=\"2000000\""), std::string::npos);
  // The spike is drawn: some y coordinate near the top of the plot (10 ms..100 ms decade).
  EXPECT_NE(s.find(">100 ms<"), std::string::npos);
}

TEST(SvgLineChart, EmptyChartSaysWhy) {
  svg::LineChart c;
  c.id = "raw";
  c.x = {"t", svg::Scale::kLinear, svg::Format::kDuration, std::nullopt, std::nullopt};
  c.y = {"lat", svg::Scale::kLog, svg::Format::kDuration, std::nullopt, std::nullopt};
  c.notes.push_back("no kernel evidence (off)");
  const std::string s = svg::render(c);
  EXPECT_TRUE(balanced(s));
  EXPECT_NE(s.find("class=\"note\""), std::string::npos);
  EXPECT_NE(s.find("no kernel evidence (off)"), std::string::npos);
  EXPECT_EQ(s.find("nan"), std::string::npos);
  EXPECT_EQ(s.find("inf"), std::string::npos);
}

TEST(SvgLineChart, PercentileAxisTicks) {
  svg::LineChart c;
  c.id = "distribution";
  c.x = {"percentile", svg::Scale::kLinear, svg::Format::kPercentile, 0.0, 4.0};
  c.y = {"lat", svg::Scale::kLog, svg::Format::kDuration, std::nullopt, std::nullopt};
  svg::Series s;
  s.name = "baseline";
  s.color = "#00f";
  s.points = {{0, 100}, {3, 100}, {3, 5000}, {4, 5000}};
  c.series.push_back(s);
  const std::string o = svg::render(c);
  for (const char* t : {">0%<", ">90%<", ">99%<", ">99.9%<", ">99.99%<"}) EXPECT_NE(o.find(t), std::string::npos) << t;
}

TEST(SvgBarChart, BarsCarryKindAndValue) {
  svg::BarChart b;
  b.id = "stalls";
  b.title = "stall";
  b.bars = {{"TLB", "tlb-shootdown", 25000, "#c00", "3 samples"}, {"timer", "timer", 0, "", ""}};
  const std::string s = svg::render(b);
  EXPECT_TRUE(balanced(s));
  EXPECT_EQ(count(s, "class=\"bar\""), 2u);
  EXPECT_NE(s.find("data-kind=\"tlb-shootdown\" data-value=\"25000\""), std::string::npos);
  EXPECT_NE(s.find(">25 µs  3 samples<"), std::string::npos);
}

TEST(SvgBarChart, LongValueOfTheLongestBarStaysInsideTheChart) {
  // report.html chart 5 in CI: "79.7 ms  · 5282 samples" after a full-width
  // bar ran 16 px past the chart; it now goes inside the bar.
  svg::BarChart b;
  b.id = "stalls";
  b.bars = {{"unexplained", "unexplained", 100000000, "", "· 5282 samples"}, {"timer", "timer", 1000, "", ""}};
  const std::string s = svg::render(b);
  const auto at = s.find("class=\"bar-value\" x=\"");
  ASSERT_NE(at, std::string::npos);
  const double x = std::stod(s.substr(at + std::string("class=\"bar-value\" x=\"").size()));
  EXPECT_LE(x, b.width - 4);
  EXPECT_NE(s.find("text-anchor=\"end\" style=\"fill:#fff\"", at), std::string::npos) << s.substr(at, 200);
}

TEST(SvgLineChart, StackedLayersCarryTotalsAndClippedBucketsAreMarked) {
  svg::LineChart c;
  c.id = "stack";
  c.x = {"t", svg::Scale::kLinear, svg::Format::kDuration, std::nullopt, std::nullopt};
  c.y = {"stall", svg::Scale::kLinear, svg::Format::kDuration, 0.0, 100.0};
  c.stack.x0 = 0;
  c.stack.dx = 10;
  // Bottom layer: two runs of non-zero buckets; top layer towers in bucket 3.
  c.stack.layers.push_back({"tlb-shootdown", "tlb-shootdown", "#c92a2a", {30, 0, 20, 25, 0}, 1.0});
  c.stack.layers.push_back({"preempted", "preempted", "#a61e4d", {0, 0, 0, 500, 10}, 0.3});
  const std::string s = svg::render(c);
  EXPECT_TRUE(balanced(s));
  EXPECT_NE(s.find("class=\"stack\" data-kind=\"tlb-shootdown\" data-total=\"75\" data-buckets=\"3\""),
            std::string::npos);
  EXPECT_NE(s.find("class=\"stack\" data-kind=\"preempted\" data-total=\"510\" data-buckets=\"2\""), std::string::npos);
  EXPECT_NE(s.find("fill-opacity=\"0.3\""), std::string::npos);
  // The bottom layer has two runs: two closed outlines.
  const auto p = s.find("data-kind=\"tlb-shootdown\"");
  const std::string d = s.substr(p, s.find("</path>", p) - p);
  EXPECT_EQ(count(d, "M"), 2u);
  EXPECT_EQ(count(d, "Z"), 2u);
  // Only bucket 3 (525 > 100) goes above the axis.
  EXPECT_NE(s.find("class=\"clipped\" data-count=\"1\""), std::string::npos);
}

TEST(SvgLineChart, NonFiniteYBreaksTheLine) {
  svg::LineChart c;
  c.id = "gap";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  c.series.push_back({"max", "#000", {{0, 1}, {1, 2}, {2, nan}, {5, 3}, {6, 3}}, true, 1, "", ""});
  const std::string s = svg::render(c);
  const auto p = s.find("data-series=\"max\"");
  ASSERT_NE(p, std::string::npos);
  const auto d0 = s.find(" d=\"", p) + 4;
  const std::string d = s.substr(d0, s.find('"', d0) - d0);
  EXPECT_EQ(count(d, "M"), 2u) << d;  // two pieces, no line across the gap
  EXPECT_EQ(s.find("nan"), std::string::npos);
  EXPECT_EQ(s.find("NaN"), std::string::npos);
}
