// SPDX-License-Identifier: Apache-2.0
// html_report: structure of the page for synthetic results (the Chromium
// integration test checks a real run).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/analysis.hpp"
#include "core/timeline.hpp"
#include "sink/console.hpp"
#include "sink/html_report.hpp"
#include "sink/json.hpp"

using namespace shootdown;

namespace {

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

// Victims writing 250 ns batches; each release adds a 30 us stall on every
// victim with a shootdown IPI inside it, plus one host-preemption stall.
Result synthetic(int victims, int releases, bool trace) {
  Result r;
  r.run_id = "test";
  r.started_at = "2024-01-01T00:00:00Z";
  r.plan.batch = 65536;
  r.plan.report_every = 65536 * 64;
  r.plan.chunk_size = 1LL << 30;
  r.plan.release = ReleaseStrategy::kMunmap;
  r.plan.culprit_cpu = 0;
  r.plan.settle_ns = 1000000;
  r.env.kernel = "6.1.0-test";
  r.env.virtualized = true;
  r.env.hypervisor = "KVM";
  r.env.warnings = {"victim CPU 1 is not isolated"};
  r.measure_start_ns = 1000;
  const std::int64_t n = 60000;  // 15 ms of samples
  for (int k = 0; k < releases; ++k) {
    Release rel;
    rel.index = k;
    rel.before_ns = 1000 + 2000000 + k * 6000000;
    rel.after_ns = rel.before_ns + 500000;
    rel.bytes = r.plan.chunk_size;
    r.releases.push_back(rel);
  }
  r.trace.enabled = trace;
  r.trace.status = trace ? "on" : "unavailable: not root";
  for (int c = 1; c <= victims; ++c) {
    r.plan.victim_cpus.push_back(c);
    VictimSamples v;
    v.cpu = c;
    v.pages_per_batch = 16;
    v.start_ns = 1000;
    std::int64_t t = 1000;
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t lat = 250;
      for (const auto& rel : r.releases)
        if (t >= rel.before_ns + 100000 && t < rel.before_ns + 100250) {
          lat = 30000;
          if (trace) {
            r.trace.events.push_back({t + 100, c, 0, 0, EventType::kCallFunctionEntry, 0, 0, 0, -1});
            r.trace.events.push_back({t + 200, c, 0, 0, EventType::kTlbFlush, kTlbRemoteShootdown, -1, 0, -1});
            r.trace.events.push_back({t + 300, c, 0, 0, EventType::kCallFunctionExit, 0, 0, 0, -1});
          }
        }
      if (i == 100) lat = 200000;  // host preemption in the baseline: no kernel event
      t += lat;
      v.end_ns.push_back(t);
      v.lat_ns.push_back(lat);
    }
    r.victims.push_back(std::move(v));
    r.counters.push_back({c, CpuRole::kVictim, releases, releases, 10, 1});
  }
  r.counters.push_back({0, CpuRole::kCulprit, 0, 3, 10, 0});
  if (trace) {
    std::sort(r.trace.events.begin(), r.trace.events.end(),
              [](const KernelEvent& a, const KernelEvent& b) { return a.mono_ns < b.mono_ns; });
    r.trace.callchains.push_back({{0x1, 0x2}, {"native_flush_tlb_multi+0x1f", "zap_page_range+0x80"}});
    r.trace.events.push_back({r.releases.empty() ? 5000 : r.releases[0].before_ns + 10, 0, 1, 1, EventType::kTlbFlush,
                              kTlbRemoteSendIpi, 100, 0, 0});
  }
  r.measure_end_ns = r.victims.empty() ? 0 : r.victims[0].end_ns.back();
  build_intervals(r);
  return r;
}

std::string render(const Result& r) {
  const Analysis a = analyze(r);
  return sink::html_report(r, a, build_timeline(r, a));
}

}  // namespace

TEST(HtmlReport, SelfContained) {
  const std::string h = render(synthetic(1, 1, true));
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("</html>"), std::string::npos);
  EXPECT_EQ(h.find("<script src"), std::string::npos);
  EXPECT_EQ(h.find("<img"), std::string::npos);
  EXPECT_EQ(h.find("stylesheet"), std::string::npos);
  EXPECT_EQ(h.find("url("), std::string::npos);
  EXPECT_EQ(h.find("@import"), std::string::npos);
  // The only absolute URL is the SVG namespace name (never fetched).
  EXPECT_EQ(count(h, "http"), count(h, "http://www.w3.org/2000/svg"));
}

TEST(HtmlReport, ChartsHaveSeriesAndMarkers) {
  const Result r = synthetic(1, 2, true);
  const std::string h = render(r);
  EXPECT_NE(h.find("data-releases=\"2\""), std::string::npos);
  EXPECT_NE(h.find("data-kernel-evidence=\"yes\""), std::string::npos);
  // Chart 1, log and linear: each has 4 series and before/after per release.
  EXPECT_EQ(count(h, "data-chart=\"timeseries\""), 2u);
  EXPECT_EQ(count(h, "data-series=\"p50\""), 2u);
  EXPECT_EQ(count(h, "data-series=\"max\""), 2u);
  // Markers: 2 per release in each time-series chart (x2) and stall
  // timeline (x2: zoomed and full), 2 per raw chart (x2 releases).
  EXPECT_EQ(count(h, "class=\"marker\" data-kind=\"before\""), 2u * 4 + 2);
  EXPECT_EQ(count(h, "class=\"marker\" data-kind=\"after\""), 2u * 4 + 2);
  // Stall timeline: attributed, the shootdown layer holds the attribution's
  // tlb-shootdown stall (2 x 29 750 ns) and the windows are shaded. The
  // 200 us unexplained stall towers over the 30 us shootdowns: a zoomed copy
  // (axis cut, shown by default) and the full-scale one.
  EXPECT_EQ(count(h, "data-chart=\"stall-timeline\""), 2u);
  EXPECT_EQ(count(h, "data-zoom=\"kernel\""), 1u);
  EXPECT_EQ(count(h, "data-zoom=\"full\""), 1u);
  // (spread over the two 100 us buckets it spans, each nearly full).
  EXPECT_NE(h.find("axis cut at 60 µs to show the shootdowns: 2 bucket(s) reach up to 99.9 µs"), std::string::npos);
  EXPECT_EQ(count(h, "class=\"clipped\" data-count=\"2\""), 1u);
  EXPECT_NE(h.find("data-attributed=\"yes\""), std::string::npos);
  EXPECT_NE(h.find("class=\"stack\" data-kind=\"tlb-shootdown\" data-total=\"59500\""), std::string::npos);
  EXPECT_NE(h.find("class=\"stack\" data-kind=\"unexplained\""), std::string::npos);
  EXPECT_EQ(count(h, "class=\"band\" data-kind=\"release\""), 2u * 4 + 2);
  // Chart 2: one per release, shootdown ticks present.
  EXPECT_EQ(count(h, "data-chart=\"raw\""), 2u);
  EXPECT_EQ(count(h, "class=\"ticks\" data-kind=\"tlb-shootdown\" data-count=\"1\""), 2u);
  // Chart 3 and 4.
  EXPECT_EQ(count(h, "data-chart=\"distribution\""), 1u);
  EXPECT_NE(h.find("data-series=\"baseline\""), std::string::npos);
  EXPECT_NE(h.find("data-series=\"release\""), std::string::npos);
  EXPECT_EQ(count(h, "data-chart=\"stalls\""), 1u);
  EXPECT_NE(h.find("class=\"bar\" data-kind=\"tlb-shootdown\" data-value=\"59500\""), std::string::npos);
  EXPECT_NE(h.find("class=\"bar\" data-kind=\"unexplained\""), std::string::npos);
  // Tables.
  EXPECT_EQ(count(h, "class=\"phase-row\""), 6u);  // 3 phases x (batch, page)
  EXPECT_NE(h.find("class=\"counter-row\" data-cpu=\"1\""), std::string::npos);
  EXPECT_NE(h.find("native_flush_tlb_multi+0x1f"), std::string::npos);
}

TEST(HtmlReport, MeaningIsGeneratedFromTheNumbers) {
  const std::string h = render(synthetic(1, 1, true));
  const auto s = h.find("<p class=\"meaning\">");
  ASSERT_NE(s, std::string::npos);
  const std::string m = h.substr(s, h.find("</p>", s) - s);
  EXPECT_NE(m.find("munmap of 1 GiB on CPU 0 took 500 µs"), std::string::npos) << m;
  EXPECT_NE(m.find("CPU 1 received 1 TLB shootdown IPIs of this process (kernel trace: tlb_flush reason 1 while the "
                   "victim ran; /proc/interrupts TLB delta 1);"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("p99.9 per batch"), std::string::npos) << m;
  EXPECT_NE(m.find("happened in the baseline"), std::string::npos) << m;  // the 200 us preemption
  EXPECT_NE(m.find("virtual machine"), std::string::npos) << m;
}

TEST(HtmlReport, ManyVictims) {
  const std::string h = render(synthetic(4, 1, true));
  EXPECT_EQ(count(h, "data-chart=\"timeseries\""), 8u);
  EXPECT_EQ(count(h, "data-chart=\"raw\""), 4u);
  EXPECT_EQ(count(h, "data-zoom=\"full\""), 4u);  // one stall timeline per victim at full scale
  EXPECT_EQ(count(h, "data-chart=\"distribution\""), 4u);
  EXPECT_EQ(count(h, "data-chart=\"stalls\""), 4u);
  for (int c = 1; c <= 4; ++c) EXPECT_NE(h.find("data-victim=\"" + std::to_string(c) + "\""), std::string::npos);
}

TEST(HtmlReport, NoKernelEvidenceSaysWhatIsMissing) {
  const std::string h = render(synthetic(1, 1, false));
  EXPECT_NE(h.find("data-kernel-evidence=\"no\""), std::string::npos);
  EXPECT_NE(h.find("no kernel evidence (unavailable: not root)"), std::string::npos);
  EXPECT_EQ(h.find("class=\"ticks\""), std::string::npos);
  EXPECT_NE(h.find("data-kind=\"unattributed\""), std::string::npos);
  EXPECT_NE(h.find("No kernel callchains were recorded"), std::string::npos);
  EXPECT_NE(h.find("this page cannot tell a shootdown stall from host preemption"), std::string::npos);
}

TEST(HtmlReport, NoReleaseAndZeroSamplePhases) {
  const std::string h = render(synthetic(1, 0, false));
  EXPECT_NE(h.find("No release was performed"), std::string::npos);
  EXPECT_NE(h.find("no samples in this phase"), std::string::npos);
  EXPECT_EQ(h.find("class=\"marker\""), std::string::npos);
  EXPECT_EQ(h.find("nan"), std::string::npos);
}

TEST(HtmlReport, EmptyResultStillRenders) {
  Result r;
  const std::string h = render(r);
  EXPECT_NE(h.find("</html>"), std::string::npos);
  EXPECT_NE(h.find("No victim samples were recorded"), std::string::npos);
}

TEST(HtmlReport, EscapesResultText) {
  Result r = synthetic(1, 1, false);
  r.command_line = "shootdown run --out '<x>&'";
  const std::string h = render(r);
  EXPECT_NE(h.find("&lt;x&gt;&amp;"), std::string::npos);
  EXPECT_EQ(h.find("<x>"), std::string::npos);
}

TEST(HtmlReport, ManyReleasesCapRawCharts) {
  Result r = synthetic(1, 3, false);
  for (int k = 3; k < 10; ++k) {
    Release rel = r.releases.back();
    rel.index = k;
    rel.before_ns += 1000;
    rel.after_ns += 1000;
    r.releases.push_back(rel);
  }
  const std::string h = render(r);
  EXPECT_EQ(count(h, "data-chart=\"raw\""), static_cast<std::size_t>(sink::kHtmlMaxReleaseCharts));
  EXPECT_NE(h.find("showing the first 6 of 10 releases"), std::string::npos);
}

TEST(HtmlReport, ReRenderedWithoutEventsDoesNotInventStalls) {
  // A result loaded from result.json: the trace was on, but only event
  // counts were kept. No attribution may be computed from "no events".
  Result r = synthetic(1, 1, true);
  r.trace.events.clear();
  r.trace.callchains.clear();
  const std::string h = render(r);
  EXPECT_NE(h.find("data-kernel-evidence=\"no\""), std::string::npos);
  EXPECT_NE(h.find("re-rendered from result.json"), std::string::npos);
  EXPECT_EQ(h.find("class=\"bar\" data-kind=\"unexplained\""), std::string::npos);
  EXPECT_NE(h.find("data-kind=\"unattributed\""), std::string::npos);
  EXPECT_NE(h.find("data-attributed=\"no\""), std::string::npos);
  EXPECT_EQ(h.find("class=\"stack\" data-kind=\"tlb-shootdown\""), std::string::npos);
}

TEST(HtmlReport, ChartOneIsBucketedByTime) {
  const Result r = synthetic(1, 1, true);
  const std::string h = render(r);
  // 15 ms of samples: 100 us buckets (the minimum), 151 of them; chart 1 says so.
  EXPECT_NE(h.find("data-bucket-ns=\"100000\""), std::string::npos);
  EXPECT_NE(h.find("per 100 µs bucket"), std::string::npos);
  EXPECT_NE(h.find("data-source=\"samples\""), std::string::npos);
  EXPECT_EQ(h.find("nan"), std::string::npos);
}

TEST(HtmlReport, PartialSamplesSayWhatTheyCover) {
  // As read back from result.json: every interval, samples only around the release.
  Result r = synthetic(1, 1, true);
  VictimSamples& v = r.victims[0];
  VictimSamples kept = v;
  kept.end_ns.clear();
  kept.lat_ns.clear();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v.end_ns[i] >= r.releases[0].before_ns - 1000000 && v.end_ns[i] <= r.releases[0].after_ns + 2000000) {
      kept.end_ns.push_back(v.end_ns[i]);
      kept.lat_ns.push_back(v.lat_ns[i]);
      kept.index.push_back(static_cast<std::int64_t>(i));
    }
  v = kept;
  const std::string h = render(r);
  EXPECT_NE(h.find("data-coverage=\"raw-windows\""), std::string::npos);
  EXPECT_NE(h.find("data-source=\"intervals\""), std::string::npos);
  EXPECT_NE(h.find("report intervals in result.json"), std::string::npos);
  EXPECT_NE(h.find("these charts are drawn from the intervals"), std::string::npos);
  EXPECT_NE(h.find("no data</text>"), std::string::npos);  // the legend of the grey bands
  EXPECT_NE(h.find("class=\"band\" data-kind=\"no-data\""), std::string::npos);
  EXPECT_NE(h.find("kept around the releases"), std::string::npos);
}

// One result through the console, JSON and HTML: the same decision whether
// there is an attribution to show (core's result_attribution), and where
// there is, the same facts per victim.
TEST(HtmlReport, ConsoleJsonAndHtmlStateTheSameFacts) {
  for (const bool events : {true, false}) {
    Result r = synthetic(2, 2, true);
    if (!events) {
      r.trace.events.clear();
      r.trace.callchains.clear();
    }
    const Analysis a = analyze(r);
    const std::string con = sink::console_summary(r, a);
    const auto j = nlohmann::json::parse(sink::result_to_string(r, a));
    const std::string h = sink::html_report(r, a, build_timeline(r, a));
    const bool shown = j["attribution"]["available"].get<bool>();
    EXPECT_EQ(shown, events);
    EXPECT_EQ(con.find("stall attribution, victim cpu") != std::string::npos, shown) << con;
    EXPECT_EQ(h.find("data-kernel-evidence=\"yes\"") != std::string::npos, shown);
    if (!shown) {
      EXPECT_NE(h.find("re-rendered from result.json"), std::string::npos);
      continue;
    }
    ASSERT_EQ(j["attribution"]["victims"].size(), 2u);
    for (const auto& v : j["attribution"]["victims"]) {
      const auto recv = v["shootdowns"]["received"].get<std::int64_t>();
      const auto matched = v["shootdowns"]["matched"].get<std::int64_t>();
      const double recall = 100 * v["shootdowns"]["recall"].get<double>();
      ASSERT_GT(recv, 0);
      EXPECT_NE(con.find(fmt::format("victim cpu{} (", v["cpu"].get<int>())), std::string::npos);
      EXPECT_NE(
          con.find(fmt::format("shootdown IPIs: {} received (kernel), {} in samples ({:.1f}%)", recv, matched, recall)),
          std::string::npos)
          << con;
      EXPECT_NE(h.find(fmt::format("shootdowns received (kernel count) {}, matched to a victim sample {} (recall "
                                   "{:.1f}%)",
                                   recv, matched, recall)),
                std::string::npos);
    }
  }
}
