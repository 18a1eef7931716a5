// SPDX-License-Identifier: Apache-2.0
// Stall attribution on synthetic event streams (src/core/attribution.hpp).
#include <gtest/gtest.h>

#include <tuple>

#include "core/attribution.hpp"
#include "core/event_counts.hpp"

namespace shootdown {
namespace {

constexpr std::uint64_t kFlushTlbFunc = 0xffffffff8134aec0ULL;
constexpr std::uint64_t kIpiMb = 0xffffffff813da600ULL;

// n gapless samples of `lat` ns each starting at t0 on `cpu`.
VictimSamples make_samples(int cpu, std::size_t n, std::int64_t lat = 1000, std::int64_t t0 = 1'000'000) {
  VictimSamples v;
  v.cpu = cpu;
  v.start_ns = t0;
  v.pages_per_batch = 16;
  std::int64_t t = t0;
  for (std::size_t i = 0; i < n; ++i) {
    t += lat;
    v.end_ns.push_back(t);
    v.lat_ns.push_back(lat);
  }
  return v;
}

// Make sample i last `lat` ns, shifting every later sample (stays gapless).
void stretch(VictimSamples& v, std::size_t i, std::int64_t lat) {
  const std::int64_t d = lat - v.lat_ns[i];
  v.lat_ns[i] = lat;
  for (std::size_t j = i; j < v.size(); ++j) v.end_ns[j] += d;
}

// Midpoint of sample i's span.
std::int64_t mid(const VictimSamples& v, std::size_t i) {
  return (v.span_start(i) + v.span_end(i)) / 2;
}

KernelEvent ev(std::int64_t t, int cpu, EventType type, std::int64_t a = 0, std::int64_t b = 0, std::int64_t c = 0) {
  KernelEvent e;
  e.mono_ns = t;
  e.cpu = cpu;
  e.type = type;
  e.a = a;
  e.b = b;
  e.c = c;
  return e;
}

KernelTrace make_trace(std::vector<KernelEvent> events) {
  KernelTrace t;
  t.enabled = true;
  t.status = "on";
  std::stable_sort(events.begin(), events.end(), [](auto& x, auto& y) { return x.mono_ns < y.mono_ns; });
  t.events = std::move(events);
  t.symbols[kFlushTlbFunc] = "flush_tlb_func+0x0";
  t.symbols[kIpiMb] = "ipi_mb+0x0";
  return t;
}

// A TLB-shootdown IPI on `cpu` starting at t: entry, csd flush_tlb_func, reason-1 flush, exit.
void add_shootdown(std::vector<KernelEvent>& e, int cpu, std::int64_t t, std::int64_t dur = 400, bool single = true) {
  e.push_back(ev(t, cpu, single ? EventType::kCallFunctionSingleEntry : EventType::kCallFunctionEntry, 251));
  e.push_back(ev(t + 10, cpu, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kFlushTlbFunc)));
  e.push_back(ev(t + dur - 20, cpu, EventType::kTlbFlush, kTlbRemoteShootdown, -1));
  e.push_back(ev(t + dur - 10, cpu, EventType::kCsdFunctionExit, 0, static_cast<std::int64_t>(kFlushTlbFunc)));
  e.push_back(ev(t + dur, cpu, single ? EventType::kCallFunctionSingleExit : EventType::kCallFunctionExit, 251));
}

StallLabel label(const VictimAttribution& a, std::size_t i) {
  return static_cast<StallLabel>(a.labels.at(i));
}

TEST(Attribution, ShootdownInsideCallFunctionSpanLabelsItsSample) {
  auto v = make_samples(1, 100);
  stretch(v, 40, 30'000);
  std::vector<KernelEvent> e;
  add_shootdown(e, 1, v.span_start(40) + 1000, 500);
  const Attribution at = attribute({v}, make_trace(e), {});
  ASSERT_TRUE(at.available);
  ASSERT_EQ(at.victims.size(), 1u);
  const auto& a = at.victims[0];
  EXPECT_EQ(a.cpu, 1);
  EXPECT_EQ(a.baseline_median_ns, 1000);
  EXPECT_EQ(a.stall_threshold_ns, 8000);
  EXPECT_EQ(label(a, 40), StallLabel::kTlbShootdown);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kTlbShootdown)], 1);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kClean)], 99);
  EXPECT_EQ(a.shootdowns_received, 1);
  EXPECT_EQ(a.shootdowns_matched, 1);
  EXPECT_EQ(a.shootdowns_stalled, 1);
  EXPECT_DOUBLE_EQ(a.recall, 1.0);
  EXPECT_EQ(a.shootdown_ipis, 1);
  EXPECT_EQ(a.other_ipis, 0);
  EXPECT_EQ(a.stall_ns[static_cast<int>(StallLabel::kTlbShootdown)], 29'000);
  EXPECT_EQ(a.stall_per_shootdown.count, 1);
  EXPECT_EQ(a.stall_per_shootdown.max, 29'000);
  EXPECT_EQ(a.handler_ns.count, 1);
  EXPECT_EQ(a.handler_ns.p50, 500);
}

TEST(Attribution, CsdFlushTlbFuncAloneIsAShootdown) {
  auto v = make_samples(1, 10);
  std::vector<KernelEvent> e;
  const std::int64_t t = mid(v, 3);
  e.push_back(ev(t, 1, EventType::kCallFunctionEntry, 251));
  e.push_back(ev(t + 5, 1, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kFlushTlbFunc)));
  e.push_back(ev(t + 50, 1, EventType::kCallFunctionExit, 251));
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(label(a, 3), StallLabel::kTlbShootdown);
  EXPECT_EQ(a.shootdown_ipis, 1);
  EXPECT_EQ(a.shootdowns_received, 0);  // the kernel count is reason-1 flushes (none here)
  EXPECT_DOUBLE_EQ(a.recall, 1.0);
}

TEST(Attribution, MembarrierIpiIsOtherIpiAndNamed) {
  auto v = make_samples(1, 50);
  std::vector<KernelEvent> e;
  for (std::size_t i : {5u, 15u, 25u}) {
    const std::int64_t t = mid(v, i);
    e.push_back(ev(t, 1, EventType::kCallFunctionSingleEntry, 251));
    e.push_back(ev(t + 5, 1, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kIpiMb)));
    e.push_back(ev(t + 9, 1, EventType::kCsdFunctionExit, 0, static_cast<std::int64_t>(kIpiMb)));
    e.push_back(ev(t + 100, 1, EventType::kCallFunctionSingleExit, 251));
  }
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(label(a, 5), StallLabel::kOtherIpi);
  EXPECT_EQ(label(a, 15), StallLabel::kOtherIpi);
  EXPECT_EQ(label(a, 25), StallLabel::kOtherIpi);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kOtherIpi)], 3);
  EXPECT_EQ(a.other_ipis, 3);
  EXPECT_EQ(a.shootdown_ipis, 0);
  ASSERT_EQ(a.ipi_functions.size(), 1u);
  EXPECT_EQ(a.ipi_functions[0].first, "ipi_mb");
  EXPECT_EQ(a.ipi_functions[0].second, 3);
  EXPECT_EQ(a.other_handler_ns.p50, 100);
}

TEST(Attribution, PriorityWhenEventsShareASample) {
  auto v = make_samples(2, 10, 10'000);
  std::vector<KernelEvent> e;
  // sample 1: timer + irq -> irq
  e.push_back(ev(mid(v, 1), 2, EventType::kLocalTimerEntry, 236));
  e.push_back(ev(mid(v, 1) + 100, 2, EventType::kLocalTimerExit, 236));
  e.push_back(ev(mid(v, 1) + 200, 2, EventType::kIrqHandlerEntry, 24));
  e.push_back(ev(mid(v, 1) + 300, 2, EventType::kIrqHandlerExit, 24, 1));
  // sample 2: irq + resched -> resched
  e.push_back(ev(mid(v, 2), 2, EventType::kIrqHandlerEntry, 24));
  e.push_back(ev(mid(v, 2) + 10, 2, EventType::kIrqHandlerExit, 24, 1));
  e.push_back(ev(mid(v, 2) + 20, 2, EventType::kReschedEntry, 253));
  e.push_back(ev(mid(v, 2) + 30, 2, EventType::kReschedExit, 253));
  // sample 3: resched + other ipi + timer -> other-ipi
  e.push_back(ev(mid(v, 3), 2, EventType::kReschedEntry, 253));
  e.push_back(ev(mid(v, 3) + 10, 2, EventType::kReschedExit, 253));
  e.push_back(ev(mid(v, 3) + 20, 2, EventType::kCallFunctionSingleEntry, 251));
  e.push_back(ev(mid(v, 3) + 25, 2, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kIpiMb)));
  e.push_back(ev(mid(v, 3) + 30, 2, EventType::kCallFunctionSingleExit, 251));
  e.push_back(ev(mid(v, 3) + 40, 2, EventType::kLocalTimerEntry, 236));
  e.push_back(ev(mid(v, 3) + 50, 2, EventType::kLocalTimerExit, 236));
  // sample 4: other ipi then shootdown -> tlb-shootdown
  e.push_back(ev(mid(v, 4) - 1000, 2, EventType::kCallFunctionSingleEntry, 251));
  e.push_back(ev(mid(v, 4) - 990, 2, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kIpiMb)));
  e.push_back(ev(mid(v, 4) - 900, 2, EventType::kCallFunctionSingleExit, 251));
  add_shootdown(e, 2, mid(v, 4));
  // sample 5: timer alone
  e.push_back(ev(mid(v, 5), 2, EventType::kLocalTimerEntry, 236));
  e.push_back(ev(mid(v, 5) + 100, 2, EventType::kLocalTimerExit, 236));
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(label(a, 0), StallLabel::kClean);
  EXPECT_EQ(label(a, 1), StallLabel::kIrq);
  EXPECT_EQ(label(a, 2), StallLabel::kResched);
  EXPECT_EQ(label(a, 3), StallLabel::kOtherIpi);
  EXPECT_EQ(label(a, 4), StallLabel::kTlbShootdown);
  EXPECT_EQ(label(a, 5), StallLabel::kTimer);
  EXPECT_GT(label_priority(StallLabel::kTlbShootdown), label_priority(StallLabel::kOtherIpi));
  EXPECT_GT(label_priority(StallLabel::kOtherIpi), label_priority(StallLabel::kResched));
  EXPECT_GT(label_priority(StallLabel::kResched), label_priority(StallLabel::kIrq));
  EXPECT_GT(label_priority(StallLabel::kIrq), label_priority(StallLabel::kTimer));
}

TEST(Attribution, StallsWithoutEventsAreUnexplainedAboveTheThreshold) {
  auto v = make_samples(1, 100);
  stretch(v, 10, 8000);  // == threshold: not above
  stretch(v, 20, 8001);  // above
  stretch(v, 30, 250'000);
  const auto a = attribute({v}, make_trace({}), {}).victims.at(0);
  EXPECT_EQ(label(a, 10), StallLabel::kClean);
  EXPECT_EQ(label(a, 20), StallLabel::kUnexplained);
  EXPECT_EQ(label(a, 30), StallLabel::kUnexplained);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kUnexplained)], 2);
  EXPECT_EQ(a.stall_ns[static_cast<int>(StallLabel::kUnexplained)], 7001 + 249'000);
  EXPECT_EQ(a.stall_ns[static_cast<int>(StallLabel::kClean)], 7000);
}

TEST(Attribution, ThresholdAndBaselineOptions) {
  auto v = make_samples(1, 100);
  for (std::size_t i = 50; i < 100; ++i) v.lat_ns[i] = 3000;  // only lat matters for the median
  AttributionOptions o;
  o.baseline_end_ns = v.span_end(49);
  auto a = attribute({v}, make_trace({}), o).victims.at(0);
  EXPECT_EQ(a.baseline_median_ns, 1000);
  EXPECT_EQ(label(a, 60), StallLabel::kClean);  // 3000 < 8000
  o.stall_factor = 2.0;
  a = attribute({v}, make_trace({}), o).victims.at(0);
  EXPECT_EQ(a.stall_threshold_ns, 2000);
  EXPECT_EQ(label(a, 60), StallLabel::kUnexplained);
  o.stall_threshold_ns = 5000;
  o.baseline_median_ns = 500;
  a = attribute({v}, make_trace({}), o).victims.at(0);
  EXPECT_EQ(a.stall_threshold_ns, 5000);
  EXPECT_EQ(a.baseline_median_ns, 500);
  EXPECT_EQ(label(a, 60), StallLabel::kClean);
}

TEST(Attribution, RecallCountsShootdownsOutsideSamplesAndSpan) {
  auto v = make_samples(1, 100);
  std::vector<KernelEvent> e;
  add_shootdown(e, 1, mid(v, 10));
  add_shootdown(e, 1, mid(v, 20));
  // Before the first sample but inside the given span: received, not matched.
  add_shootdown(e, 1, v.start_ns - 5000);
  // Outside the span: not counted at all.
  add_shootdown(e, 1, v.start_ns - 1'000'000);
  // Other CPU: ignored for this victim.
  add_shootdown(e, 3, mid(v, 30));
  AttributionOptions o;
  o.span_start_ns = v.start_ns - 10'000;
  o.span_end_ns = v.end_ns.back();
  const auto a = attribute({v}, make_trace(e), o).victims.at(0);
  EXPECT_EQ(a.shootdowns_received, 3);
  EXPECT_EQ(a.shootdowns_matched, 2);
  EXPECT_EQ(a.shootdowns_stalled, 0);  // samples at baseline latency
  EXPECT_NEAR(a.recall, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(label(a, 30), StallLabel::kClean);
}

TEST(Attribution, TwoShootdownsInOneSampleShareItsStall) {
  auto v = make_samples(1, 20);
  stretch(v, 7, 41'000);
  std::vector<KernelEvent> e;
  add_shootdown(e, 1, v.span_start(7) + 100);
  add_shootdown(e, 1, v.span_start(7) + 20'000);
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(a.shootdown_ipis, 2);
  EXPECT_EQ(a.stall_per_shootdown.count, 2);
  EXPECT_EQ(a.stall_per_shootdown.p50, 20'000);
  EXPECT_EQ(a.stall_per_shootdown.max, 20'000);
}

TEST(Attribution, DeliveryLatencyPairsCulpritSendsWithEntries) {
  auto v = make_samples(1, 300);  // 300 us: the last interrupt (190 + 40 us) inside the victim's span
  std::vector<KernelEvent> e;
  const std::int64_t cb = 0xffffffff814512d0LL;  // generic_smp_call_function_single_interrupt
  // cpu0 -> cpu1 three times, 20/25/30 us.
  std::int64_t lat = 20'000;
  for (std::size_t i : {10u, 80u, 150u}) {
    const std::int64_t t = v.span_start(i);
    e.push_back(ev(t, 0, EventType::kIpiSendCpu, 1, 0x1234, cb));
    add_shootdown(e, 1, t + lat);
    lat += 5000;
  }
  // A cpumask send from cpu0 with bit 1 set.
  e.push_back(ev(v.span_start(190), 0, EventType::kIpiSendCpumask, 0b10, 0x1234, cb));
  add_shootdown(e, 1, v.span_start(190) + 40'000, 400, false);
  // Reschedule kicks (no callback) and sends to other CPUs are ignored.
  e.push_back(ev(v.span_start(100), 0, EventType::kIpiSendCpu, 1, 0x99, 0));
  e.push_back(ev(v.span_start(101), 0, EventType::kIpiSendCpu, 3, 0x99, cb));
  AttributionOptions o;
  o.culprit_cpu = 0;
  const auto a = attribute({v}, make_trace(e), o).victims.at(0);
  EXPECT_EQ(a.delivery_ns.count, 4);
  EXPECT_EQ(a.delivery_ns.p50, 25'000);
  EXPECT_EQ(a.delivery_ns.max, 40'000);
  EXPECT_EQ(a.shootdown_ipis, 4);
}

// Interrupts, their functions and their deliveries count over the counted
// span only, as /proc/interrupts does: the tracer's own set-up before it
// (enabling events sends IPIs to every CPU) and the teardown after it are
// left out, never mixed in.
TEST(Attribution, InterruptsOutsideTheCountedSpanAreLeftOut) {
  auto v = make_samples(1, 200);
  std::vector<KernelEvent> e;
  const std::int64_t cb = 0xffffffff814512d0LL;
  const std::int64_t before = v.start_ns - 50'000, inside = v.span_start(100), after = v.end_ns.back() + 50'000;
  for (std::int64_t t : {before, inside, after}) {
    e.push_back(ev(t, 0, EventType::kIpiSendCpu, 1, 0x1234, cb));
    add_shootdown(e, 1, t + 20'000);
  }
  AttributionOptions o;
  o.culprit_cpu = 0;
  o.span_start_ns = v.start_ns;
  o.span_end_ns = v.end_ns.back();
  const auto a = attribute({v}, make_trace(e), o).victims.at(0);
  EXPECT_EQ(a.shootdown_ipis, 1);
  EXPECT_EQ(a.handler_ns.count, 1);
  EXPECT_EQ(a.delivery_ns.count, 1);
  std::int64_t functions = 0;
  for (const auto& [name, n] : a.ipi_functions) functions += n;
  EXPECT_LE(functions, 1);
}

// A 72-CPU machine: a cpumask send to CPUs 3, 65 and 70. The victim on CPU
// 70 finds its send in the whole mask (KernelTrace::cpumasks); the first
// word alone (`a`, CPUs 0-63) would not name it.
TEST(Attribution, DeliveryToAVictimAboveCpu63UsesTheWholeMask) {
  auto v = make_samples(70, 200);
  std::vector<KernelEvent> e;
  const std::int64_t cb = 0xffffffff814512d0LL;
  KernelEvent send = ev(v.span_start(50), 1, EventType::kIpiSendCpumask, 1 << 3, 0x1234, cb);
  send.cpumask = 0;
  e.push_back(send);
  add_shootdown(e, 70, v.span_start(50) + 30'000, 400, false);
  KernelEvent word_only = ev(v.span_start(120), 1, EventType::kIpiSendCpumask, 1 << 3, 0x1234, cb);
  e.push_back(word_only);  // no whole mask kept: CPUs 0-63 only, not a send to 70
  add_shootdown(e, 70, v.span_start(120) + 30'000, 400, false);
  KernelTrace t = make_trace(e);
  t.cpumasks.push_back(CpuMask::of({3, 65, 70}));
  EXPECT_TRUE(t.targets(t.events.front(), 70));
  EXPECT_FALSE(t.targets(t.events.front(), 64));
  AttributionOptions o;
  o.culprit_cpu = 1;
  const auto a = attribute({v}, t, o).victims.at(0);
  EXPECT_EQ(a.delivery_ns.count, 1);
  EXPECT_EQ(a.delivery_ns.max, 30'000);
  EXPECT_EQ(a.shootdowns_received, 2);
}

// The handler time a victim CPU spent in shootdown IPIs, in total (the
// figure monitor's per-CPU handler seconds are set against).
TEST(Attribution, HandlerTimeTotalIsTheSumOfTheShootdownIpis) {
  auto v = make_samples(1, 300);
  std::vector<KernelEvent> e;
  add_shootdown(e, 1, mid(v, 10), 400);
  add_shootdown(e, 1, mid(v, 100), 900);
  add_shootdown(e, 1, mid(v, 200), 2'500, false);
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(a.handler_ns.count, 3);
  EXPECT_EQ(a.handler_ns.total, 400 + 900 + 2'500);
  EXPECT_EQ(a.handler_ns.max, 2'500);
  EXPECT_EQ(a.other_handler_ns.total, 0);
}

TEST(Attribution, ShootdownFlushWithoutIpiTracepointsStillCounts) {
  auto v = make_samples(1, 10);
  std::vector<KernelEvent> e{ev(mid(v, 4), 1, EventType::kTlbFlush, kTlbRemoteShootdown, 12)};
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(label(a, 4), StallLabel::kTlbShootdown);
  EXPECT_EQ(a.shootdowns_received, 1);
  EXPECT_EQ(a.shootdowns_matched, 1);
  EXPECT_EQ(a.shootdown_ipis, 0);  // no call-function span seen
}

TEST(Attribution, ReuseControlHasNoShootdowns) {
  auto v = make_samples(1, 1000);
  std::vector<KernelEvent> e;
  for (std::size_t i = 0; i < 1000; i += 100) {
    e.push_back(ev(mid(v, i), 1, EventType::kLocalTimerEntry, 236));
    e.push_back(ev(mid(v, i) + 200, 1, EventType::kLocalTimerExit, 236));
  }
  e.push_back(ev(mid(v, 500), 1, EventType::kTlbFlush, kTlbLocalMmShootdown, 1));  // local flushes are not remote
  e.push_back(ev(mid(v, 501), 1, EventType::kTlbFlush, kTlbRemoteSendIpi, 1));
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(a.shootdowns_received, 0);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kTlbShootdown)], 0);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kTimer)], 10);
}

// The reuse control of a sanitizer build (make test's ASan tier): the
// culprit's first write to a page the zero page backs flushed our mm's CPUs
// as the counted span began. That shootdown reached the victim, but it is
// the tool's own, not the strategy's: counted apart, with its initiator
// named by thread and kernel path.
TEST(Attribution, AFlushOfOursOutsideTheReleaseCallsIsNamedNotTheStrategys) {
  auto v = make_samples(1, 1000);
  stretch(v, 10, 40'000);
  stretch(v, 600, 30'000);
  std::vector<KernelEvent> e;
  KernelEvent send = ev(v.span_start(10) + 100, 0, EventType::kTlbFlush, kTlbRemoteSendIpi, 1);
  send.pid = 4242;
  send.tid = 4242;
  send.callchain = 0;
  e.push_back(send);
  add_shootdown(e, 1, v.span_start(10) + 1000, 500);   // the stray one, in sample 10
  add_shootdown(e, 1, v.span_start(600) + 1000, 500);  // one during the release call
  KernelEvent inside = ev(v.span_start(600) + 100, 0, EventType::kTlbFlush, kTlbRemoteSendIpi, 512);
  inside.pid = inside.tid = 4242;
  e.push_back(inside);
  KernelEvent other = ev(v.span_start(700), 0, EventType::kTlbFlush, kTlbRemoteSendIpi, 1);
  other.pid = other.tid = 999;  // another process: not ours
  e.push_back(other);
  for (auto& x : e)
    if (x.cpu == 1) x.tid = 4243;  // the victim thread
  KernelTrace t = make_trace(e);
  t.callchains.push_back(Callchain{
      {1, 2, 3, 4},
      {"native_flush_tlb_multi+0x7f", "flush_tlb_mm_range+0x12a", "ptep_clear_flush+0x3c", "do_wp_page+0x2e1"}});
  AttributionOptions o;
  o.releases = {{v.span_start(590), v.span_end(620)}};
  o.own_pid = 4242;
  o.own_threads = {{4242, "culprit"}, {4243, "victim cpu1"}};
  const Attribution at = attribute({v}, t, o);
  const auto& a = at.victims.at(0);
  EXPECT_EQ(a.shootdowns_received, 2);
  EXPECT_EQ(a.shootdowns_outside_releases, 1);
  EXPECT_EQ(a.shootdowns_outside_matched, 1);
  EXPECT_EQ(a.shootdowns_outside_stall_ns, 39'000);
  ASSERT_EQ(at.own_flushes.size(), 1u);  // the release's own send and the foreign one are not listed
  const OwnFlush& f = at.own_flushes[0];
  EXPECT_EQ(f.tid, 4242);
  EXPECT_EQ(f.thread, "culprit");
  EXPECT_EQ(f.cpu, 0);
  EXPECT_EQ(f.pages, 1);
  EXPECT_EQ(f.cause, "kernel (do_wp_page)");
  EXPECT_EQ(f.kernel_path, (std::vector<std::string>{"native_flush_tlb_multi", "flush_tlb_mm_range", "ptep_clear_flush",
                                                     "do_wp_page"}));
  // Without the process (a probe, or a result from before): no split.
  const Attribution plain = attribute({v}, t, AttributionOptions{});
  EXPECT_EQ(plain.victims.at(0).shootdowns_outside_releases, 0);
  EXPECT_TRUE(plain.own_flushes.empty());
}

TEST(Attribution, EventOnSpanBoundaryBelongsToTheEndingSample) {
  auto v = make_samples(1, 3);
  std::vector<KernelEvent> e{ev(v.span_end(0), 1, EventType::kLocalTimerEntry, 236),
                             ev(v.span_end(0) + 1, 1, EventType::kLocalTimerExit, 236),
                             ev(v.start_ns, 1, EventType::kIrqHandlerEntry, 1)};  // (start, end]: start excluded
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(label(a, 0), StallLabel::kTimer);
  EXPECT_EQ(label(a, 1), StallLabel::kClean);
}

TEST(Attribution, UnavailableTraceGivesNoLabels) {
  KernelTrace t;
  t.status = "unavailable: not root";
  const auto at = attribute({make_samples(1, 5)}, t, {});
  EXPECT_FALSE(at.available);
  EXPECT_EQ(at.note, "unavailable: not root");
  EXPECT_TRUE(at.victims.empty());
}

TEST(Attribution, LabelNamesAndLatencyFilter) {
  EXPECT_STREQ(label_name(StallLabel::kTlbShootdown), "tlb-shootdown");
  EXPECT_STREQ(label_name(StallLabel::kOtherIpi), "other-ipi");
  EXPECT_STREQ(label_name(StallLabel::kUnexplained), "unexplained");
  EXPECT_STREQ(label_name(StallLabel::kClean), "clean");
  auto v = make_samples(1, 10);
  stretch(v, 2, 50'000);
  const auto a = attribute({v}, make_trace({}), {}).victims.at(0);
  const auto clean = latencies_with_label(v, a, StallLabel::kClean);
  EXPECT_EQ(clean.size(), 9u);
  EXPECT_EQ(latencies_with_label(v, a, StallLabel::kUnexplained), std::vector<std::int64_t>{50'000});
}

TEST(Attribution, ForeignTaskOrTaskSwitchMeansPreempted) {
  auto v = make_samples(1, 20);
  stretch(v, 5, 2'000'000);
  stretch(v, 9, 900'000);
  std::vector<KernelEvent> e;
  for (std::size_t i = 0; i < 20; i += 2) {  // the victim's own timer ticks: tid 77
    e.push_back(ev(mid(v, i), 1, EventType::kLocalTimerEntry, 236));
    e.back().tid = 77;
    e.push_back(ev(mid(v, i) + 100, 1, EventType::kLocalTimerExit, 236));
    e.back().tid = 77;
  }
  // Sample 5: a shootdown, but another task (tid 500) ran here too.
  add_shootdown(e, 1, mid(v, 5));
  for (auto& x : e)
    if (x.mono_ns >= mid(v, 5) && x.mono_ns <= mid(v, 5) + 400) x.tid = 77;
  e.push_back(ev(mid(v, 5) + 1000, 1, EventType::kReschedEntry, 253));
  e.back().tid = 500;
  // Sample 9: a task-switch flush (reason 0).
  e.push_back(ev(mid(v, 9), 1, EventType::kTlbFlush, kTlbFlushOnTaskSwitch, -1));
  e.back().tid = 77;
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(a.victim_tid, 77);
  EXPECT_EQ(label(a, 5), StallLabel::kPreempted);
  EXPECT_EQ(label(a, 9), StallLabel::kPreempted);
  EXPECT_EQ(label(a, 0), StallLabel::kTimer);
  EXPECT_EQ(a.shootdowns_matched, 1);         // still seen by the samples
  EXPECT_EQ(a.stall_per_shootdown.count, 0);  // but its stall belongs to the scheduler
  EXPECT_STREQ(label_name(StallLabel::kPreempted), "preempted");
}

TEST(Attribution, LocalCsdRunIsNotAnIpiAndWrongCpuFlushesAreCounted) {
  auto v = make_samples(1, 20);
  std::vector<KernelEvent> e;
  // The victim CPU initiating its own flush: csd_do_func runs flush_tlb_func locally.
  e.push_back(ev(mid(v, 3), 1, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kFlushTlbFunc)));
  e.push_back(ev(mid(v, 3) + 5, 1, EventType::kTlbFlush, kTlbLocalMmShootdown, 1));
  e.push_back(ev(mid(v, 3) + 9, 1, EventType::kCsdFunctionExit, 0, static_cast<std::int64_t>(kFlushTlbFunc)));
  // An IPI for another mm that last ran here: reason 5 inside a call-function span.
  const std::int64_t t = mid(v, 8);
  e.push_back(ev(t, 1, EventType::kCallFunctionSingleEntry, 251));
  e.push_back(ev(t + 5, 1, EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(kFlushTlbFunc)));
  e.push_back(ev(t + 8, 1, EventType::kTlbFlush, kTlbRemoteWrongCpu, 0));
  e.push_back(ev(t + 20, 1, EventType::kCallFunctionSingleExit, 251));
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(label(a, 3), StallLabel::kClean);
  // It interrupted the victim, but it flushed another process's mm: not a
  // shootdown our culprit caused (the reuse control arm must show none).
  EXPECT_EQ(label(a, 8), StallLabel::kOtherIpi);
  EXPECT_EQ(a.shootdowns_received, 0);  // reason 1 only
  EXPECT_EQ(a.wrong_cpu_flushes, 1);
  EXPECT_EQ(a.flush_ipis, 0);
  EXPECT_EQ(a.shootdown_ipis, 0);
  EXPECT_EQ(a.other_ipis, 1);
}

TEST(Attribution, ReasonOneInAnotherTaskIsForeign) {
  auto v = make_samples(1, 20);
  std::vector<KernelEvent> e;
  // The victim's own interrupts (tid 77) in short samples identify it.
  for (int i = 0; i < 5; ++i) {
    auto x = ev(mid(v, static_cast<std::size_t>(i)), 1, EventType::kLocalTimerEntry);
    x.tid = 77;
    e.push_back(x);
  }
  // A shootdown IPI that arrived while task 99 ran on the victim CPU.
  const std::int64_t t = mid(v, 12);
  for (auto [dt, type, a] :
       {std::tuple{0, EventType::kCallFunctionEntry, 0}, std::tuple{4, EventType::kTlbFlush, kTlbRemoteShootdown},
        std::tuple{9, EventType::kCallFunctionExit, 0}}) {
    auto x = ev(t + dt, 1, type, a);
    x.tid = 99;
    e.push_back(x);
  }
  const auto a = attribute({v}, make_trace(e), {}).victims.at(0);
  EXPECT_EQ(a.victim_tid, 77);
  EXPECT_EQ(a.shootdowns_received, 0);
  EXPECT_EQ(a.wrong_cpu_flushes, 1);
  EXPECT_EQ(label(a, 12), StallLabel::kPreempted);
}

TEST(Quantiles, NearestRank) {
  std::vector<std::int64_t> v;
  for (int i = 1; i <= 10; ++i) v.push_back(11 - i);  // unsorted input
  const Quantiles q = quantiles(v);
  EXPECT_EQ(q.count, 10);
  EXPECT_EQ(q.p50, 5);
  EXPECT_EQ(q.p90, 9);
  EXPECT_EQ(q.max, 10);
  EXPECT_EQ(quantiles({}).count, 0);
  EXPECT_EQ(quantiles({7}).p90, 7);
}

// sched:sched_switch on `cpu` at t: prev -> next (the event runs in prev).
KernelEvent sw(std::int64_t t, int cpu, std::int32_t prev, std::int32_t next) {
  KernelEvent e = ev(t, cpu, EventType::kSchedSwitch, prev, next, 0);
  e.tid = e.pid = prev;
  return e;
}

TEST(AttributionOffCpu, SchedSwitchIntervalsLabelOverlappingSamplesPreempted) {
  auto v = make_samples(1, 100);
  v.tid = 77;
  stretch(v, 40, 3'000'000);  // preempted inside sample 40 for ~3 ms
  stretch(v, 60, 2'000'000);
  std::vector<KernelEvent> e;
  const std::int64_t out1 = v.span_start(40) + 1000, in1 = v.span_end(40) - 1000;
  e.push_back(sw(out1, 1, 77, 500));
  e.push_back(sw(in1, 1, 500, 77));
  const std::int64_t out2 = mid(v, 60), in2 = v.span_end(60) - 300;
  e.push_back(sw(out2, 1, 77, 0));
  e.push_back(sw(in2, 1, 0, 77));
  // Another task's switches while the victim is off, and on another CPU: ignored.
  e.push_back(sw(out1 + 10, 1, 500, 600));
  e.push_back(sw(out1 + 20, 1, 600, 500));
  e.push_back(sw(mid(v, 80), 0, 77, 900));
  // A shootdown inside sample 40 (in another task): the scheduler owns that sample.
  add_shootdown(e, 1, out1 + 500, 400);
  // An event in another task's context outside any interval: with sched_switch
  // traced the tid heuristic is off, so sample 20 is a timer sample.
  e.push_back(ev(mid(v, 20), 1, EventType::kLocalTimerEntry));
  e.back().tid = 999;
  const Attribution at = attribute({v}, make_trace(e), {});
  const auto& a = at.victims.at(0);
  EXPECT_TRUE(a.sched_switch);
  EXPECT_EQ(a.offcpu_intervals, 2);
  EXPECT_EQ(a.offcpu_ns, (in1 - out1) + (in2 - out2));
  for (std::size_t i : {40u, 60u}) EXPECT_EQ(label(a, i), StallLabel::kPreempted) << i;
  for (std::size_t i : {39u, 41u, 59u, 61u, 80u}) EXPECT_EQ(label(a, i), StallLabel::kClean) << i;
  EXPECT_EQ(label(a, 20), StallLabel::kTimer);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kPreempted)], 2);
  EXPECT_EQ(a.releases_on_cpu, 0);  // no releases given
  EXPECT_TRUE(a.release_on_cpu.empty());
}

// Switches out of the idle task can be missing (events in idle context on an
// idle CPU are not delivered on some kernels): the victim's own context and
// samples end the interval.
TEST(AttributionOffCpu, MissingSwitchInIsBoundedByVictimEventsAndSamples) {
  auto v = make_samples(1, 100);
  v.tid = 77;
  stretch(v, 50, 2'000'000);
  stretch(v, 70, 1'000'000);
  std::vector<KernelEvent> e;
  const std::int64_t out1 = v.span_start(50) + 1000, seen1 = v.span_end(50) - 300;
  e.push_back(sw(out1, 1, 77, 0));  // to idle (RT throttling)
  e.push_back(ev(out1 + 50, 1, EventType::kTlbFlush, kTlbFlushOnTaskSwitch, -1));
  e.back().tid = 77;  // switch_mm, still in the victim's context: not evidence
  e.push_back(ev(seen1, 1, EventType::kLocalTimerEntry));
  e.back().tid = 77;  // the victim's tick: it runs again
  const std::int64_t out2 = v.span_start(70) + 500;
  e.push_back(sw(out2, 1, 77, 0));  // no evidence at all until its sample ends
  e.push_back(ev(mid(v, 90), 1, EventType::kLocalTimerEntry));
  e.back().tid = 77;
  AttributionOptions o;
  o.releases = {{out1 + 100, out1 + 200},
                {seen1 + 100, seen1 + 200},
                {out2 + 100, out2 + 200},
                {v.span_end(70) + 1, v.span_end(70) + 100}};
  const Attribution at = attribute({v}, make_trace(e), o);
  const auto& a = at.victims.at(0);
  EXPECT_EQ(a.offcpu_intervals, 2);
  EXPECT_EQ(a.offcpu_ns, (seen1 - out1) + (v.span_end(70) - out2));
  EXPECT_EQ(a.release_on_cpu, (std::vector<std::optional<bool>>{false, true, false, true}));
  EXPECT_EQ(label(a, 50), StallLabel::kPreempted);
  EXPECT_EQ(label(a, 70), StallLabel::kPreempted);
  EXPECT_EQ(label(a, 71), StallLabel::kClean);
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kPreempted)], 2);
}

TEST(AttributionOffCpu, ReleasesOnCpuOnlyWhenNoOffCpuIntervalOverlapsTheCall) {
  // Samples are abstract here: the switches lie on sample boundaries, so only
  // the sched_switch events bound the intervals.
  auto v = make_samples(1, 1000);
  v.tid = 77;
  std::vector<KernelEvent> e;
  const std::int64_t t0 = v.start_ns;
  e.push_back(sw(t0 + 300'000, 1, 77, 500));  // off 300..400 us
  e.push_back(sw(t0 + 400'000, 1, 500, 77));
  e.push_back(sw(t0 + 700'000, 1, 77, 500));  // off 700..701 us
  e.push_back(sw(t0 + 701'000, 1, 500, 77));
  AttributionOptions o;
  o.releases = {{t0 + 100'000, t0 + 120'000},   // before any interval: on
                {t0 + 320'000, t0 + 330'000},   // inside the first: off
                {t0 + 390'000, t0 + 410'000},   // straddles its end: off (partly)
                {t0 + 500'000, t0 + 600'000},   // between: on
                {t0 + 690'000, t0 + 710'000},   // contains the second: off
                {t0 + 800'000, t0 + 801'000}};  // after: on
  const Attribution at = attribute({v}, make_trace(e), o);
  const auto& a = at.victims.at(0);
  EXPECT_EQ(a.release_on_cpu, (std::vector<std::optional<bool>>{true, false, false, true, false, true}));
  EXPECT_EQ(a.releases_on_cpu, 3);
  EXPECT_EQ(a.offcpu_intervals, 2);
  EXPECT_EQ(a.offcpu_ns, 101'000);
}

TEST(AttributionOffCpu, BeforeItsFirstEvidenceAndAfterItsLastSwitchOutTheVictimIsOff) {
  auto v = make_samples(1, 100);  // span t0 .. t0 + 100 us
  v.tid = 77;
  const std::int64_t t0 = v.start_ns;
  std::vector<KernelEvent> e;
  e.push_back(sw(t0 - 10'000, 1, 500, 77));               // pinned to its CPU, switched in
  e.push_back(sw(v.end_ns.back() + 10'000, 1, 77, 500));  // done
  AttributionOptions o;
  o.releases = {
      {t0 - 12'000, t0 - 11'000}, {t0 + 50'000, t0 + 51'000}, {v.end_ns.back() + 20'000, v.end_ns.back() + 21'000}};
  const Attribution at = attribute({v}, make_trace(e), o);
  const auto& a = at.victims.at(0);
  EXPECT_EQ(a.offcpu_intervals, 0);  // neither overlaps the samples' span
  EXPECT_EQ(a.offcpu_ns, 0);
  EXPECT_EQ(a.release_on_cpu, (std::vector<std::optional<bool>>{false, true, false}));
  EXPECT_EQ(a.samples[static_cast<int>(StallLabel::kPreempted)], 0);
}

// Remote flush delivery: the culprit's reason-4 requests during releases, at
// moments the victim ran, against the reason-1 flushes the victim got then.
// While it is switched out its CPU has left the mm's cpumask: not counted,
// nor are requests outside the releases or on other CPUs.
TEST(AttributionOffCpu, FlushRequestsCountOnlyWhileTheVictimRan) {
  auto v = make_samples(1, 1000);
  v.tid = 77;
  const std::int64_t t0 = v.start_ns;
  std::vector<KernelEvent> e;
  e.push_back(sw(t0 + 300'000, 1, 77, 500));  // off 300..400 us
  e.push_back(sw(t0 + 400'000, 1, 500, 77));
  // Release 1 (on CPU): 3 requests, 1 delivered (a paravirtual flush took two).
  for (std::int64_t t : {110'000, 112'000, 114'000})
    e.push_back(ev(t0 + t, 0, EventType::kTlbFlush, kTlbRemoteSendIpi));
  e.push_back(ev(t0 + 112'500, 1, EventType::kTlbFlush, kTlbRemoteShootdown));
  // Release 2 (victim switched out): not counted.
  e.push_back(ev(t0 + 325'000, 0, EventType::kTlbFlush, kTlbRemoteSendIpi));
  // Release 3 (on CPU): 2 requests, 2 delivered; a request on cpu 2 is not the culprit's.
  for (std::int64_t t : {510'000, 520'000}) e.push_back(ev(t0 + t, 0, EventType::kTlbFlush, kTlbRemoteSendIpi));
  for (std::int64_t t : {510'500, 520'500}) e.push_back(ev(t0 + t, 1, EventType::kTlbFlush, kTlbRemoteShootdown));
  e.push_back(ev(t0 + 530'000, 2, EventType::kTlbFlush, kTlbRemoteSendIpi));
  // Release 4 straddles the switch back in at 400 us: the request at 395 us
  // is not counted, the one at 405 us is (and was not delivered).
  e.push_back(ev(t0 + 395'000, 0, EventType::kTlbFlush, kTlbRemoteSendIpi));
  e.push_back(ev(t0 + 405'000, 0, EventType::kTlbFlush, kTlbRemoteSendIpi));
  // Outside any release: not counted.
  e.push_back(ev(t0 + 900'000, 0, EventType::kTlbFlush, kTlbRemoteSendIpi));
  AttributionOptions o;
  o.culprit_cpu = 0;
  o.releases = {{t0 + 100'000, t0 + 120'000},
                {t0 + 320'000, t0 + 330'000},
                {t0 + 500'000, t0 + 600'000},
                {t0 + 390'000, t0 + 410'000}};
  const Attribution at = attribute({v}, make_trace(e), o);
  const auto& a = at.victims.at(0);
  EXPECT_EQ(a.release_on_cpu, (std::vector<std::optional<bool>>{true, false, true, false}));
  EXPECT_EQ(a.flush_requests, 6);
  EXPECT_EQ(a.flush_requests_delivered, 3);
  o.culprit_cpu = -1;  // unknown culprit: nothing to count
  EXPECT_EQ(attribute({v}, make_trace(e), o).victims.at(0).flush_requests, 0);
}

TEST(AttributionOffCpu, TracedButNeverSwitchedMeansAlwaysOnCpu) {
  auto v = make_samples(1, 100);
  v.tid = 77;
  KernelTrace t = make_trace({});
  t.tracepoints = {"sched:sched_switch (1 of 2 CPUs)"};
  AttributionOptions o;
  o.releases = {{v.start_ns + 1000, v.start_ns + 2000}};
  const Attribution at = attribute({v}, t, o);
  const auto& a = at.victims.at(0);
  EXPECT_TRUE(a.sched_switch);
  EXPECT_EQ(a.offcpu_intervals, 0);
  EXPECT_EQ(a.offcpu_ns, 0);
  EXPECT_EQ(a.releases_on_cpu, 1);
}

// Issue 19: a release whose raw samples were folded (a gap in a partial
// series, or before the first sample kept) has no sched_switch evidence left:
// unknown, not "on CPU", and not counted either way.
TEST(AttributionOffCpu, AReleaseWhoseRawWindowWasFoldedIsUnknown) {
  auto v = make_samples(1, 200);
  v.tid = 77;
  // Samples 0-99 were folded away: the series starts at the old sample 100,
  // and 150-179 were folded too (a gap).
  const std::int64_t folded_from = v.end_ns[99];
  VictimSamples p = v;
  p.start_ns = folded_from;
  p.end_ns.clear();
  p.lat_ns.clear();
  for (std::size_t i = 100; i < 200; ++i) {
    if (i >= 150 && i < 180) continue;
    p.end_ns.push_back(v.end_ns[i]);
    p.lat_ns.push_back(v.lat_ns[i]);
    p.index.push_back(static_cast<std::int64_t>(i));
  }
  KernelTrace t = make_trace({});
  t.tracepoints = {"sched:sched_switch (1 of 2 CPUs)"};
  AttributionOptions o;
  o.releases = {{v.span_start(20), v.span_end(22)},    // before the first kept sample
                {v.span_start(120), v.span_end(125)},  // inside kept samples
                {v.span_start(160), v.span_end(162)},  // inside the gap
                {v.span_start(148), v.span_end(185)},  // across the gap
                {v.span_start(190), v.span_end(195)}};
  const Attribution at = attribute({p}, t, o);
  const auto& a = at.victims.at(0);
  EXPECT_EQ(a.release_on_cpu, (std::vector<std::optional<bool>>{std::nullopt, true, std::nullopt, std::nullopt, true}));
  EXPECT_EQ(a.releases_on_cpu, 2);
}

TEST(AttributionOffCpu, WithoutSchedSwitchTheTidHeuristicStaysAndReleasesAreUnknown) {
  auto v = make_samples(1, 100);
  v.tid = 77;
  stretch(v, 30, 2'000'000);
  std::vector<KernelEvent> e;
  e.push_back(ev(mid(v, 30), 1, EventType::kLocalTimerEntry));
  e.back().tid = 500;  // another task ran in sample 30
  AttributionOptions o;
  o.releases = {{v.start_ns + 1000, v.start_ns + 2000}};
  const Attribution at = attribute({v}, make_trace(e), o);
  const auto& a = at.victims.at(0);
  EXPECT_FALSE(a.sched_switch);
  EXPECT_EQ(label(a, 30), StallLabel::kPreempted);
  EXPECT_EQ(a.releases_on_cpu, -1);
  EXPECT_TRUE(a.release_on_cpu.empty());
  EXPECT_NE(at.note.find("sched_switch"), std::string::npos);
}

}  // namespace
}  // namespace shootdown

namespace shootdown {
namespace {

// A run past its memory limit folds the events of the dropped stretch into
// counts (KernelTrace::folded): the event counts and the TLB accounting must
// come out exactly as if every event had been kept.
TEST(FoldedEvents, CountsAndTlbAccountingAsIfKept) {
  Result r;
  r.trace.enabled = true;
  r.interrupts_start_ns = 1'000;
  r.interrupts_span_ns = 10'000'000;
  r.counters = {CpuCounters{1, CpuRole::kVictim, 700, 0, 0, 0}, CpuCounters{2, CpuRole::kVictim, 50, 0, 0, 0}};
  // Events every 1 us over the span on CPUs 0..2, blocks of six per CPU: a
  // tlb_flush inside a call-function interrupt and one outside, reasons 0..5.
  const EventType types[] = {EventType::kLocalTimerEntry,  EventType::kCallFunctionEntry, EventType::kTlbFlush,
                             EventType::kCallFunctionExit, EventType::kSchedSwitch,       EventType::kTlbFlush};
  for (std::int64_t i = 0; i < 9000; ++i) {
    KernelEvent e;
    e.mono_ns = 500 + i * 1000;  // the first one before the span: never folded
    e.cpu = static_cast<int>((i / 6) % 3);
    e.type = types[i % 6];
    e.a = e.type == EventType::kTlbFlush ? (i / 18 + i % 6) % kTlbFlushReasons : 0;
    r.trace.events.push_back(e);
  }
  Attribution kept;
  kept.victims = {VictimAttribution{}, VictimAttribution{}};
  kept.victims[0].cpu = 1;
  kept.victims[1].cpu = 2;
  Attribution folded = kept;
  account_tlb(r, kept);
  const auto counts_kept = count_events(r.trace);

  // Fold [from, until) as the experiment does: from the span's start.
  const std::int64_t from = r.interrupts_start_ns, until = 6'000'000;
  std::vector<KernelEvent> rest;
  r.trace.folded.from_ns = from;
  r.trace.folded.until_ns = until;
  for (const auto& e : r.trace.events)
    if (e.mono_ns >= from && e.mono_ns < until)
      r.trace.folded.add(e);
    else
      rest.push_back(e);
  ASSERT_GT(r.trace.folded.events, 5000);
  r.trace.events = rest;
  account_tlb(r, folded);
  const auto counts_folded = count_events(r.trace);

  ASSERT_EQ(counts_kept.size(), counts_folded.size());
  for (std::size_t i = 0; i < counts_kept.size(); ++i) {
    EXPECT_EQ(counts_kept[i].cpu, counts_folded[i].cpu);
    EXPECT_EQ(counts_kept[i].event, counts_folded[i].event);
    EXPECT_EQ(counts_kept[i].count, counts_folded[i].count);
  }
  for (std::size_t v = 0; v < 2; ++v) {
    EXPECT_GT(kept.victims[v].tlb_traced_remote, 0);
    EXPECT_EQ(kept.victims[v].tlb_traced_remote, folded.victims[v].tlb_traced_remote);
    EXPECT_EQ(kept.victims[v].tlb_traced_wrong_cpu, folded.victims[v].tlb_traced_wrong_cpu);
    EXPECT_EQ(kept.victims[v].tlb_untraced, folded.victims[v].tlb_untraced);
    EXPECT_GT(kept.victims[v].tlb_lazy, 0);
    EXPECT_GT(kept.victims[v].tlb_local_wrong_cpu, 0);
    EXPECT_EQ(kept.victims[v].tlb_lazy, folded.victims[v].tlb_lazy);
    EXPECT_EQ(kept.victims[v].tlb_local_wrong_cpu, folded.victims[v].tlb_local_wrong_cpu);
    EXPECT_EQ(kept.victims[v].tlb_traced_beyond, folded.victims[v].tlb_traced_beyond);
  }
}

// A victim CPU where the tracer could not open its tracepoints (72 CPUs x 16
// events against RLIMIT_NOFILE 1024, lab 2026-12-07): its zero shootdowns
// are no evidence, and the note says so.
TEST(Attribution, NotesAVictimCpuWithoutTracepoints) {
  VictimSamples v;
  v.cpu = 64;
  KernelTrace t;
  t.enabled = true;
  t.missing = {"tlb:tlb_flush on cpu64: perf_event_open: Too many open files",
               "irq_vectors:call_function_entry on cpu64: perf_event_open: Too many open files",
               "tlb:tlb_flush on cpu640: perf_event_open: Too many open files"};
  const Attribution at = attribute({v}, t, AttributionOptions{});
  EXPECT_NE(at.note.find("cpu64: 2 tracepoint(s) not opened there (tlb:tlb_flush on cpu64: perf_event_open: Too many "
                         "open files): its kernel evidence is incomplete"),
            std::string::npos)
      << at.note;
  v.cpu = 3;
  EXPECT_EQ(attribute({v}, t, AttributionOptions{}).note.find("not opened"), std::string::npos);
}

// The TLB row by evidence (6.18 guest, a reuse run: 9 reason-5 flushes traced
// on the victim CPU against a TLB row of 8 made "counted, not traced -1"):
// a reason 5 inside a call-function interrupt or a queued csd run is in the
// row; one the CPU traced running its own flush (csd NULL) is apart; a
// reason 0 inside an interrupt is a lazy-TLB CPU switching to init_mm.
TEST(TlbAccounting, SplitsByEvidenceNeverNegative) {
  Result r;
  r.trace.enabled = true;
  r.interrupts_start_ns = 1'000;
  r.interrupts_span_ns = 1'000'000;
  const std::uint64_t flush = 0xffffffff81000000ULL, other = 0xffffffff82000000ULL;
  r.trace.symbols = {{flush, "flush_tlb_func+0x0"}, {other, "generic_smp_call_function_single_interrupt+0x0"}};
  std::int64_t t = 2'000;
  auto ev = [&](EventType type, std::int64_t a = 0, std::int64_t b = 0, std::int64_t c = 0) {
    KernelEvent e;
    e.mono_ns = t += 100;
    e.cpu = 1;
    e.type = type;
    e.a = a;
    e.b = b;
    e.c = c;
    r.trace.events.push_back(e);
  };
  // 8 interrupts that ran flush_tlb_func for an mm this CPU left: reason 5 each.
  for (int i = 0; i < 8; ++i) {
    ev(EventType::kCallFunctionEntry);
    ev(EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(flush), 0x1000 + i);
    ev(EventType::kTlbFlush, kTlbRemoteWrongCpu);
    ev(EventType::kCsdFunctionExit, 0, static_cast<std::int64_t>(flush), 0x1000 + i);
    ev(EventType::kCallFunctionExit);
  }
  // The CPU's own flush for a stale mm: csd NULL, no interrupt, reason 5.
  ev(EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(flush), 0);
  ev(EventType::kTlbFlush, kTlbRemoteWrongCpu);
  ev(EventType::kCsdFunctionExit, 0, static_cast<std::int64_t>(flush), 0);
  // A lazy CPU: the interrupt switches to init_mm (reason 0 inside it).
  ev(EventType::kCallFunctionSingleEntry);
  ev(EventType::kTlbFlush, kTlbFlushOnTaskSwitch);
  ev(EventType::kCallFunctionSingleExit);
  // A queued flush run from the idle loop, no interrupt: reason 1.
  ev(EventType::kCsdFunctionEntry, 0, static_cast<std::int64_t>(flush), 0x2000);
  ev(EventType::kTlbFlush, kTlbRemoteShootdown);
  ev(EventType::kCsdFunctionExit, 0, static_cast<std::int64_t>(flush), 0x2000);
  // A task switch outside any interrupt: not a flush of the row.
  ev(EventType::kTlbFlush, kTlbFlushOnTaskSwitch);
  // An interrupt that returned early (a later flush caught up): untraced.
  ev(EventType::kCallFunctionEntry);
  ev(EventType::kCallFunctionExit);
  r.counters = {CpuCounters{1, CpuRole::kVictim, 11, 0, 0, 0}};

  Attribution a;
  a.victims = {VictimAttribution{}};
  a.victims[0].cpu = 1;
  account_tlb(r, a);
  const VictimAttribution& v = a.victims[0];
  EXPECT_EQ(v.tlb_counted, 11);
  EXPECT_EQ(v.tlb_traced_remote, 1);
  EXPECT_EQ(v.tlb_traced_wrong_cpu, 8);
  EXPECT_EQ(v.tlb_lazy, 1);
  EXPECT_EQ(v.tlb_untraced, 1);
  EXPECT_EQ(v.tlb_traced_beyond, 0);
  EXPECT_EQ(v.tlb_local_wrong_cpu, 1);
  EXPECT_EQ(v.tlb_local_flush_runs, 1);

  // A row smaller than the evidence (a flush at the window's edge): the
  // excess is stated, never a negative untraced count.
  r.counters[0].tlb = 9;
  a.victims[0] = VictimAttribution{};
  a.victims[0].cpu = 1;
  account_tlb(r, a);
  EXPECT_EQ(a.victims[0].tlb_untraced, 0);
  EXPECT_EQ(a.victims[0].tlb_traced_beyond, 1);

  // Without csd tracepoints (before 6.3) the CPU's own runs are unknown.
  std::erase_if(r.trace.events, [](const KernelEvent& e) {
    return e.type == EventType::kCsdFunctionEntry || e.type == EventType::kCsdFunctionExit;
  });
  a.victims[0] = VictimAttribution{};
  a.victims[0].cpu = 1;
  account_tlb(r, a);
  EXPECT_EQ(a.victims[0].tlb_local_flush_runs, -1);
  EXPECT_EQ(a.victims[0].tlb_traced_wrong_cpu, 8);
  EXPECT_EQ(a.victims[0].tlb_local_wrong_cpu, 1);
}

}  // namespace
}  // namespace shootdown
