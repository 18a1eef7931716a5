// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/analysis.hpp"
#include "core/timeline.hpp"
#include "core/errors.hpp"
#include "sink/atomic_writer.hpp"
#include "sink/blame_out.hpp"
#include "sink/console.hpp"
#include "sink/csv.hpp"
#include "sink/html_report.hpp"
#include "sink/json.hpp"

using namespace shootdown;

namespace {
Result small() {
  Result r;
  r.plan.batch = 65536;
  r.plan.report_every = 65536 * 2;
  r.plan.chunk_size = 1 << 30;
  r.plan.release = ReleaseStrategy::kMunmap;
  r.plan.culprit_cpu = 0;
  r.plan.victim_cpus = {1};
  VictimSamples v;
  v.cpu = 1;
  v.pages_per_batch = 16;
  for (int i = 1; i <= 4; ++i) {
    v.end_ns.push_back(i * 1000);
    v.lat_ns.push_back(1000);
  }
  r.victims.push_back(v);
  Release rel;
  rel.before_ns = 2500;
  rel.after_ns = 2600;
  r.releases.push_back(rel);
  build_intervals(r);
  return r;
}
}  // namespace

TEST(Sink, JsonHasSchemaAndPhases) {
  Result r = small();
  const auto j = nlohmann::json::parse(sink::result_to_string(r, analyze(r)));
  EXPECT_EQ(j["schema_version"], kResultSchemaVersion);
  EXPECT_EQ(j["victims"][0]["phases"]["baseline"]["per_batch_ns"]["count"], 2);
  EXPECT_EQ(j["releases"][0]["duration_ns"], 100);
  EXPECT_EQ(j["intervals"].size(), 2u);
  EXPECT_EQ(j["raw_windows"][0]["latency_ns"].size(), 4u);
}

TEST(Sink, CsvOneRowPerInterval) {
  Result r = small();
  const std::string csv = sink::timeline_csv(r);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("victim_cpu,interval,start_ns", 0), 0u);
}

TEST(Sink, ConsoleTablesFitIn110Columns) {
  Result r = small();
  const std::string out = sink::console_summary(r, analyze(r));
  std::size_t start = 0;
  while (start < out.size()) {
    auto nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    if (out.compare(start, 2, "  ") == 0) {
      EXPECT_LE(nl - start, 110u) << out.substr(start, nl - start);
    }
    start = nl + 1;
  }
  EXPECT_NE(out.find("baseline"), std::string::npos);
  EXPECT_NE(out.find("p99.99 "), std::string::npos);
  EXPECT_NE(out.find("stall lost"), std::string::npos);
  EXPECT_EQ(out.find("p99.999"), std::string::npos);  // 4 samples: no column for it
}

namespace {
// The article's default: 4 GiB munmap taking 464 ms, 108 shootdowns on cpu1.
std::pair<Result, Analysis> verdict_case(ReleaseStrategy s, std::int64_t shootdowns) {
  Result r = small();
  r.plan.release = s;
  r.plan.chunk_size = std::int64_t{4} << 30;
  r.releases[0].before_ns = 1000;
  r.releases[0].after_ns = 1000 + 464000000;
  Analysis a = analyze(r);
  a.attribution.available = true;
  VictimAttribution v;
  v.cpu = 1;
  v.shootdowns_received = shootdowns;
  v.shootdowns_matched = shootdowns;
  v.stall_ns[static_cast<int>(StallLabel::kTlbShootdown)] = shootdowns ? 3712000 : 0;
  v.stall_per_shootdown.p50 = shootdowns ? 29100 : 0;
  v.wrong_cpu_flushes = shootdowns ? 0 : 2;
  a.attribution.victims = {v};
  a.verdict = make_verdict(r, a);
  return {r, a};
}
}  // namespace

TEST(Sink, VerdictLineStatesShootdownsAndStall) {
  auto [r, a] = verdict_case(ReleaseStrategy::kMunmap, 108);
  const auto lines = sink::verdict_lines(r, a);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "munmap of 4 GiB (464.0 ms) sent 108 shootdown IPIs to cpu1: 3712.0 us stalled, 29.1 us each (p50), "
            "0.8 % of the release window; compare with the reuse control: shootdown compare");
  // Right after the two header lines, and the same sentence in result.json.
  const std::string out = sink::console_summary(r, a);
  const auto third = out.find('\n', out.find('\n') + 1) + 1;
  EXPECT_EQ(out.compare(third, lines[0].size(), lines[0]), 0) << out;
  const auto j = nlohmann::json::parse(sink::result_to_string(r, a));
  EXPECT_EQ(j["summary"]["lines"][0], lines[0]);
  EXPECT_EQ(j["summary"]["victims"][0]["shootdowns"], 108);
  EXPECT_EQ(j["summary"]["victims"][0]["stall_ns"], 3712000);
  // And at the top of report.html, before the facts.
  const std::string html = sink::html_report(r, a, build_timeline(r, a));
  const auto at = html.find("<p class=\"verdict\">" + lines[0] + "</p>");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(at, html.find("<table class=\"facts\">"));
}

TEST(Sink, VerdictLineForTheControlAndWithoutEvidence) {
  auto [r, a] = verdict_case(ReleaseStrategy::kReuse, 0);
  EXPECT_EQ(sink::verdict_lines(r, a)[0],
            "reuse of 4 GiB (464.0 ms) sent no shootdown IPI to cpu1 (its 2 other TLB flushes were for other "
            "processes)");
  Result r2 = small();
  r2.trace.status = "unavailable: tracefs not mounted";
  r2.counters.push_back({1, CpuRole::kVictim, 5, 0, 0, 0});
  const Analysis a2 = analyze(r2);
  EXPECT_EQ(sink::verdict_lines(r2, a2)[0],
            "munmap of 1 GiB (100 ns): shootdowns to cpu1 unknown (kernel trace unavailable: tracefs not mounted); "
            "/proc/interrupts counted 5 TLB IPIs on cpu1 over the span, from any process");
}

// A paravirtual flush: the culprit asked for remote flushes while the victim
// ran, none arrived as an IPI. "No shootdown IPI" must not read as "free".
TEST(Sink, VerdictLineSaysWhenRemoteFlushesBypassIpis) {
  auto [r, a] = verdict_case(ReleaseStrategy::kMunmap, 0);
  a.attribution.victims[0].wrong_cpu_flushes = 0;
  a.attribution.victims[0].flush_requests = 7;
  a.attribution.victims[0].flush_requests_delivered = 0;
  a.verdict = make_verdict(r, a);
  EXPECT_TRUE(a.verdict.victims[0].flushes_unseen);
  const std::string line = sink::verdict_lines(r, a)[0];
  EXPECT_EQ(line,
            "munmap of 4 GiB (464.0 ms) sent no shootdown IPI to cpu1; but the kernel made 7 remote TLB flush requests "
            "while cpu1 ran this process and none arrived as an IPI: remote flushes bypass IPIs here (a hypervisor's "
            "paravirtual flush), so their cost to cpu1 is unseen, not zero (shootdown doctor: pv_tlb_flush)");
  const auto j = nlohmann::json::parse(sink::result_to_string(r, a));
  EXPECT_EQ(j["summary"]["victims"][0]["flushes_unseen"], true);
  EXPECT_EQ(j["summary"]["victims"][0]["flush_requests"], 7);
  // Half or more delivered (an IPI kernel, one lost to a preempted vCPU): no clause.
  a.attribution.victims[0].flush_requests_delivered = 4;
  a.verdict = make_verdict(r, a);
  EXPECT_FALSE(a.verdict.victims[0].flushes_unseen);
  EXPECT_EQ(sink::verdict_lines(r, a)[0].find("bypass"), std::string::npos);
}

// A shootdown of the tool's own outside the release calls (the ASan reuse
// control): the verdict never counts it as the strategy's, and names who sent it.
TEST(Sink, VerdictLineNamesAFlushOfTheToolsOwnApart) {
  auto [r, a] = verdict_case(ReleaseStrategy::kReuse, 1);
  a.attribution.victims[0].shootdowns_outside_releases = 1;
  a.attribution.victims[0].shootdowns_outside_matched = 1;
  a.attribution.victims[0].shootdowns_outside_stall_ns = 3712000;
  OwnFlush f;
  f.mono_ns = 5000;
  f.cpu = 0;
  f.tid = 77;
  f.thread = "culprit";
  f.pages = 1;
  f.cause = "page fault: write to a read-only page";
  f.kernel_path = {"native_flush_tlb_multi", "flush_tlb_mm_range", "ptep_clear_flush", "wp_page_copy", "do_wp_page"};
  a.attribution.own_flushes = {f};
  a.verdict = make_verdict(r, a);
  EXPECT_EQ(a.verdict.victims[0].shootdowns, 0);
  EXPECT_EQ(a.verdict.victims[0].stall_ns, 0);
  EXPECT_EQ(sink::verdict_lines(r, a)[0],
            "reuse of 4 GiB (464.0 ms) sent no shootdown IPI to cpu1; 1 shootdown IPI of the tool's own reached cpu1 "
            "outside the release calls (3712.0 us stalled, not counted above; initiated by culprit: page fault: write "
            "to a read-only page, native_flush_tlb_multi <- flush_tlb_mm_range <- ptep_clear_flush <- wp_page_copy "
            "<- ...: a defect of shootdown run, please report it)");
  const std::string out = sink::console_summary(r, a);
  EXPECT_NE(out.find("remote TLB flushes of the tool's own outside the release calls (not the strategy's): 1"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("culprit (tid 77) on cpu0, 1 page: page fault: write to a read-only page"), std::string::npos);
  // result.json keeps them.
  const std::string text = sink::result_to_string(r, a);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["summary"]["victims"][0]["own_outside_releases"], 1);
  EXPECT_EQ(j["attribution"]["own_flushes"][0]["thread"], "culprit");
  EXPECT_EQ(j["attribution"]["own_flushes"][0]["kernel_path"][4], "do_wp_page");
  EXPECT_EQ(j["attribution"]["victims"][0]["shootdowns"]["outside_releases"], 1);
}

// INVLPGB (6.15+ on AMD Zen 3 and later): the releases flush without IPIs
// and without tlb_flush events. With doctor's finding, the verdict says so
// instead of letting "sent no shootdown IPI" read as "free".
TEST(Sink, VerdictSaysBroadcastFlushesSendNoIpi) {
  auto [r, a] = verdict_case(ReleaseStrategy::kMunmap, 0);
  a.verdict = make_verdict(r, a);
  EXPECT_FALSE(a.verdict.victims[0].broadcast_flush);  // no finding: no clause
  EXPECT_EQ(sink::verdict_lines(r, a)[0].find("INVLPGB"), std::string::npos);
  DoctorFinding f;
  f.status = DoctorStatus::kWarn;
  f.name = "tlb_broadcast";
  f.found = "AMD INVLPGB broadcast flush on (Linux 6.15, CPUID 0x80000008 EBX[3])";
  r.doctor = {f};
  a.verdict = make_verdict(r, a);
  ASSERT_TRUE(a.verdict.victims[0].broadcast_flush);
  const std::string line = sink::verdict_lines(r, a)[0];
  EXPECT_NE(
      line.find("; this CPU and kernel flush remote TLBs by AMD INVLPGB broadcast (shootdown doctor: tlb_broadcast)"),
      std::string::npos)
      << line;
  EXPECT_NE(line.find("TLBSYNC"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(sink::result_to_string(r, a))["summary"]["victims"][0]["broadcast_flush"], true);
  // A shootdown that arrived after all: not a broadcast-only run.
  auto [r2, a2] = verdict_case(ReleaseStrategy::kMunmap, 2);
  r2.doctor = {f};
  a2.verdict = make_verdict(r2, a2);
  EXPECT_FALSE(a2.verdict.victims[0].broadcast_flush);
  // Intel RAR (a kernel with RAR code): its own clause, no TLBSYNC.
  f.found = "Intel RAR remote flush on (kernel 7.9.0-1-amd64 carries RAR code, its BTF names it; CPU flag rar)";
  r.doctor = {f};
  a.verdict = make_verdict(r, a);
  ASSERT_TRUE(a.verdict.victims[0].broadcast_flush);
  EXPECT_EQ(a.verdict.broadcast_by, "Intel RAR");
  const std::string rar = sink::verdict_lines(r, a)[0];
  EXPECT_NE(rar.find("; this kernel may flush remote TLBs by Intel RAR remote action requests"), std::string::npos)
      << rar;
  EXPECT_EQ(rar.find("TLBSYNC"), std::string::npos) << rar;
}

TEST(Sink, TuningWarningsInOneLineUnlessVerbose) {
  Result r = small();
  r.env.warnings = {"isolcpus: none", "nohz_full: off", "vm: KVM"};
  r.warnings = {"victim cpu1: sample ring full, measurement ended early"};
  const Analysis a = analyze(r);
  const std::string quiet = sink::console_summary(r, a);
  EXPECT_NE(quiet.find("warning: 3 tuning warnings undermine these numbers: shootdown doctor"), std::string::npos);
  EXPECT_EQ(quiet.find("isolcpus: none"), std::string::npos);
  EXPECT_NE(quiet.find("sample ring full"), std::string::npos);  // the run's own warnings stay
  const std::string verbose = sink::console_summary(r, a, true);
  EXPECT_NE(verbose.find("warning: isolcpus: none"), std::string::npos);
  EXPECT_NE(verbose.find("warning: vm: KVM"), std::string::npos);
}

TEST(Sink, AtomicWriterReplacesAndRejectsUnwritable) {
  const auto dir = std::filesystem::temp_directory_path() / ("sd-sink-" + std::to_string(::getpid()));
  sink::OutputDir out(dir.string());
  out.write("a.txt", "one");
  out.write("a.txt", "two");
  std::ifstream in(dir / "a.txt");
  std::string s;
  in >> s;
  EXPECT_EQ(s, "two");
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);  // no temp files left
  std::filesystem::remove_all(dir);
  EXPECT_THROW(sink::OutputDir("/proc/self/no/such"), UsageError);
}

TEST(Sink, AtomicStreamPublishesWholeOrNothing) {
  const auto dir = std::filesystem::temp_directory_path() / ("sd-stream-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.txt").string();
  { std::ofstream(path) << "old\n"; }
  auto read_all = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto count = [&] {
    std::size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(dir)) {
      (void)e;
      ++n;
    }
    return n;
  };
  {
    sink::AtomicStream s(path);
    std::fputs("line 1\n", s.file());
    std::fflush(s.file());
    EXPECT_EQ(read_all(path), "old\n");  // the stream is not visible before commit
    EXPECT_EQ(count(), 2u);
    std::fputs("line 2\n", s.file());
    s.commit();
    EXPECT_EQ(read_all(path), "line 1\nline 2\n");
    EXPECT_THROW(s.commit(), std::runtime_error);
  }
  EXPECT_EQ(count(), 1u);  // no temporary left
  {
    sink::AtomicStream s(path);
    std::fputs("abandoned\n", s.file());
  }  // no commit: the temporary is removed, the file untouched
  EXPECT_EQ(read_all(path), "line 1\nline 2\n");
  EXPECT_EQ(count(), 1u);
  std::filesystem::remove_all(dir);
  EXPECT_THROW(sink::AtomicStream("/proc/self/no/such/file"), std::runtime_error);
}

// blame: flushes initiated (reason 4: another CPU was in the mm's cpumask)
// with no flush IPI after them say why there may be none.
TEST(Sink, BlameSaysWhyFlushesSentNoIpi) {
  BlameReport r;
  r.pid = 42;
  r.duration_ns = 1'000'000;
  r.flushes = 1002;
  const std::string none = sink::blame_text(r, BlameOptions{});
  EXPECT_NE(none.find("(none: the process's other CPUs were idle or lazy, or remote flushes bypass IPIs"),
            std::string::npos)
      << none;
  r.ipis = 1000;
  EXPECT_EQ(sink::blame_text(r, BlameOptions{}).find("bypass IPIs"), std::string::npos);
}

// Issue 19: a 9-digit sample count ran into the max column
// ("4165631268435456"); every cell keeps at least one space before it.
TEST(Sink, ConsoleTableCellsNeverRunTogether) {
  Result r = small();
  Analysis a = analyze(r);
  ASSERT_FALSE(a.victims.empty());
  ASSERT_FALSE(a.victims[0].phases.empty());
  auto& ps = a.victims[0].phases[0];
  ps.per_batch.count = 268435456;
  ps.per_batch.max = 4165631;
  const std::string t = sink::summary_table("t", a.victims[0], false);
  EXPECT_EQ(t.find("4165631268435456"), std::string::npos) << t;
  EXPECT_NE(t.find(" 268435456"), std::string::npos) << t;
}
