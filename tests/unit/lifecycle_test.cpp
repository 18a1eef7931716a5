// SPDX-License-Identifier: Apache-2.0
// The pieces every subcommand shares: the strategy/page-mode table, the one
// event-counting rule, the shootdown-mark rule, the trial order, the owned
// child process.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/attribution.hpp"
#include "core/compare.hpp"
#include "core/event_counts.hpp"
#include "core/plan_warnings.hpp"
#include "core/strategy.hpp"
#include "sys/child.hpp"

using namespace shootdown;

TEST(StrategyTable, ExtentStrategiesReleaseEveryOtherExtent) {
  // 128 MiB = 2048 extents of 64 KiB: extents 0, 2, ..., 2046 are released.
  EXPECT_EQ(released_bytes(ReleaseStrategy::kMadviseRanges, 128LL << 20), 64LL << 20);
  EXPECT_EQ(released_bytes(ReleaseStrategy::kProcessMadvise, 128LL << 20), 64LL << 20);
  // An odd count: the last extent is released too; a partial extent counts whole.
  EXPECT_EQ(released_bytes(ReleaseStrategy::kMadviseRanges, 3 * 65536), 2 * 65536);
  EXPECT_EQ(released_bytes(ReleaseStrategy::kMadviseRanges, 4 * 65536 + 32768), 2 * 65536 + 32768);
  EXPECT_EQ(released_what(ReleaseStrategy::kMadviseRanges, 4 * 65536 + 32768), "160 KiB in 3 extents of 64 KiB");
  EXPECT_EQ(released_bytes(ReleaseStrategy::kMunmap, 128LL << 20), 128LL << 20);
  EXPECT_EQ(released_what(ReleaseStrategy::kProcessMadvise, 128LL << 20), "64 MiB in 1024 extents of 64 KiB");
  EXPECT_EQ(released_what(ReleaseStrategy::kMunmap, 4LL << 30), "4 GiB");
}

TEST(StrategyTable, NamesRoundTripAndListsComeFromTheTable) {
  for (const auto& s : strategies()) {
    ASSERT_TRUE(find_strategy(s.name).has_value()) << s.name;
    EXPECT_EQ(*find_strategy(s.name), s.id);
    EXPECT_EQ(strategy_name(s.id), s.name);
  }
  EXPECT_FALSE(find_strategy("munmapp").has_value());
  EXPECT_EQ(run_strategy_list(),
            "free, munmap, madvise-dontneed, madvise-free, mprotect, madvise-ranges, process-madvise, paced, chunked, "
            "glibc-malloc, jemalloc, tcmalloc, mimalloc, reuse, membarrier");
  EXPECT_EQ(
      run_strategy_help(),
      "free, munmap, madvise-dontneed, madvise-free, mprotect, madvise-ranges, process-madvise, paced, chunked, "
      "glibc-malloc (allocator), jemalloc (allocator), tcmalloc (allocator), mimalloc (allocator), reuse (control), "
      "membarrier (IPI validation)");
  EXPECT_EQ(compare_arm_list(Workload::kMemory),
            "free, munmap, madvise-dontneed, madvise-free, mprotect, madvise-ranges, process-madvise, paced, chunked, "
            "glibc-malloc, jemalloc, tcmalloc, mimalloc, reuse");
  EXPECT_EQ(compare_arm_list(Workload::kJournal), "journal-unmap, journal-recycle");
  EXPECT_FALSE(is_compare_arm(ReleaseStrategy::kMembarrier, Workload::kMemory));
  EXPECT_FALSE(is_compare_arm(ReleaseStrategy::kProbe, Workload::kMemory));
  EXPECT_EQ(strategy_info(ReleaseStrategy::kMunmap).rearm, Rearm::kReallocate);
  EXPECT_EQ(strategy_info(ReleaseStrategy::kMadviseFree).rearm, Rearm::kRefault);
  EXPECT_EQ(strategy_info(ReleaseStrategy::kMprotect).rearm, Rearm::kRestoreProtection);
  EXPECT_EQ(strategy_info(ReleaseStrategy::kReuse).rearm, Rearm::kNothing);
}

TEST(StrategyTable, PageModes) {
  EXPECT_EQ(page_mode_list(), "4k, thp, hugetlb");
  EXPECT_EQ(page_mode_help(), "4k, thp (madvise) or hugetlb (MAP_HUGETLB)");
  EXPECT_EQ(find_page_mode("thp"), PageMode::kThp);
  EXPECT_FALSE(find_page_mode("2m").has_value());
  EXPECT_EQ(page_mode_name(PageMode::kHugetlb), "hugetlb");
}

namespace {
KernelEvent ev(std::int64_t t, int cpu, EventType type, std::int64_t a = 0, std::int64_t b = 0, int pid = 10) {
  KernelEvent e;
  e.mono_ns = t;
  e.cpu = cpu;
  e.type = type;
  e.a = a;
  e.b = b;
  e.pid = pid;
  return e;
}
}  // namespace

TEST(TallyEvents, CountsByCpuReasonAndInitiatorInsideTheFilter) {
  const std::vector<KernelEvent> events = {
      ev(100, 1, EventType::kTlbFlush, kTlbRemoteShootdown),
      ev(110, 1, EventType::kCallFunctionEntry),
      ev(120, 1, EventType::kCsdFunctionEntry, 0, 0xabc),
      ev(130, 0, EventType::kTlbFlush, kTlbRemoteSendIpi, 0, 42),
      ev(140, 0, EventType::kTlbFlush, kTlbRemoteSendIpi, 0, 43),
      ev(150, 1, EventType::kLocalTimerEntry),
      ev(500, 1, EventType::kTlbFlush, kTlbRemoteShootdown),  // outside [0, 400]
      ev(160, 1, EventType::kTlbFlush, 9),                    // unknown reason: not counted by reason
  };
  EventTally t;
  TallyFilter f;
  f.from_ns = 0;
  f.to_ns = 400;
  tally_events(events, f, t);
  EXPECT_EQ(t.cpus[1].tlb_flush[kTlbRemoteShootdown], 1);
  EXPECT_EQ(t.cpus[1].call_function, 1);
  EXPECT_EQ(t.cpus[1].csd[0xabc], 1);
  EXPECT_EQ(t.cpus[1].timer, 1);
  EXPECT_EQ(t.cpus[0].tlb_flush[kTlbRemoteSendIpi], 2);
  EXPECT_EQ(t.initiators[42], 1);
  EXPECT_EQ(t.initiators[43], 1);

  EventTally only42;
  TallyFilter p;
  p.pid = 42;
  tally_events(events, p, only42);
  EXPECT_EQ(only42.cpus[0].tlb_flush[kTlbRemoteSendIpi], 1);
  EXPECT_EQ(only42.cpus.count(1), 0u);
}

TEST(TlbFlushReasons, OneSpellingEach) {
  EXPECT_STREQ(tlb_flush_reason_name(kTlbRemoteShootdown), "remote_shootdown");
  EXPECT_STREQ(tlb_flush_reason_text(kTlbRemoteShootdown), "remote shootdown");
  EXPECT_STREQ(tlb_flush_reason_name(kTlbRemoteWrongCpu), "remote_wrong_cpu");
  EXPECT_STREQ(tlb_flush_reason_name(17), "unknown");
  EXPECT_STREQ(tlb_flush_reason_text(-1), "?");
}

// The report's marks use attribution's rule: a csd function is a shootdown
// only when it is flush_tlb_func, not any "flush_tlb" prefix.
TEST(EventMarks, ShootdownRuleIsFlushTlbFunc) {
  KernelTrace tr;
  tr.symbols[0x1] = "flush_tlb_func+0x0";
  tr.symbols[0x2] = "flush_tlb_mm_range+0x10";
  tr.events = {
      ev(100, 1, EventType::kCallFunctionEntry),
      ev(101, 1, EventType::kCsdFunctionEntry, 0, 0x1),
      ev(102, 1, EventType::kCallFunctionExit),
      ev(200, 1, EventType::kCallFunctionEntry),
      ev(201, 1, EventType::kCsdFunctionEntry, 0, 0x2),
      ev(202, 1, EventType::kCallFunctionExit),
      ev(300, 1, EventType::kTlbFlush, kTlbRemoteShootdown),  // outside any span: a mark of its own
      ev(400, 2, EventType::kLocalTimerEntry),                // not a requested CPU
  };
  const auto marks = event_marks(tr, {1});
  ASSERT_EQ(marks.count(1), 1u);
  ASSERT_EQ(marks.at(1).size(), 3u);
  EXPECT_EQ(marks.at(1)[0].cause, MarkCause::kTlbShootdown);
  EXPECT_EQ(marks.at(1)[1].cause, MarkCause::kOtherIpi);
  EXPECT_EQ(marks.at(1)[2].cause, MarkCause::kTlbShootdown);
  EXPECT_EQ(marks.count(2), 0u);
  Result r;
  Release rel;
  rel.before_ns = 250;
  rel.after_ns = 350;
  r.releases.push_back(rel);
  EXPECT_EQ(shootdown_marks(r, marks, 1, false), 2);
  EXPECT_EQ(shootdown_marks(r, marks, 1, true), 1);
}

TEST(TrialOrder, EveryBlockIsAPermutationAndTheSeedFixesIt) {
  const auto o = compare::trial_order(3, 5, 7);
  ASSERT_EQ(o.size(), 15u);
  for (std::size_t b = 0; b < 5; ++b) {
    std::set<int> block(o.begin() + static_cast<std::ptrdiff_t>(b * 3),
                        o.begin() + static_cast<std::ptrdiff_t>(b * 3 + 3));
    EXPECT_EQ(block, (std::set<int>{0, 1, 2}));
  }
  EXPECT_EQ(o, compare::trial_order(3, 5, 7));
  EXPECT_NE(o, compare::trial_order(3, 5, 8));
}

TEST(PlanWarnings, DebugBuildTscAndThp) {
  Environment env;
  env.build_type = "Debug";
  env.thp_enabled = "always";
  Plan plan;
  plan.pages = PageMode::k4k;
  const auto w = plan_warnings(env, plan);
  ASSERT_EQ(w.size(), 3u);
  env.build_type = "Release";
  env.constant_tsc = env.nonstop_tsc = true;
  plan.pages = PageMode::kThp;
  EXPECT_TRUE(plan_warnings(env, plan).empty());
  DoctorFinding f;
  f.name = "smt";
  f.found = "on";
  f.status = DoctorStatus::kWarn;
  f.undermines_numbers = true;
  EXPECT_EQ(doctor_warnings({f}), std::vector<std::string>{"smt: on (see shootdown doctor)"});
}

TEST(ChildProcess, ExitStatusAndNeverLeftBehind) {
  auto ok = sys::ChildProcess::spawn({"true"});
  while (!ok.poll()) {}
  EXPECT_TRUE(ok.exited_ok());
  EXPECT_EQ(ok.describe_exit(), "");
  auto bad = sys::ChildProcess::spawn({"sh", "-c", "exit 3"});
  while (!bad.poll()) {}
  EXPECT_EQ(bad.describe_exit(), "exited with status 3");
  pid_t pid = -1;
  {
    auto sleeper = sys::ChildProcess::spawn({"sleep", "30"});
    pid = sleeper.pid();
    EXPECT_FALSE(sleeper.poll());
  }  // destructor: SIGTERM and reaped
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_THROW(sys::ChildProcess::spawn({"/nonexistent/shootdown-test"}), std::runtime_error);
}
