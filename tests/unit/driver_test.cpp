// SPDX-License-Identifier: Apache-2.0
// The command driver (cmd/driver.hpp): the steps in one order, restore (the
// Tool's destructor) on every exit path, the stop signals held from prepare
// to report, and the one mapping of failures and signals to exit codes
// (docs/exit-codes.md).
#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "sys/signals.hpp"

using namespace shootdown;

namespace {

extern "C" void test_handler(int) {}

// The SIGINT handler in place now.
void (*sigint_handler())(int) {
  struct sigaction sa {};
  sigaction(SIGINT, nullptr, &sa);
  return sa.sa_handler;
}

// A Tool that records its steps, and whether the driver's signal handlers
// were in place during each; `fail_at` names the step that throws `error`.
class FakeTool final : public cmd::Tool {
 public:
  enum class Error { kNone, kUsage, kRuntime, kOther };

  FakeTool(std::vector<std::string>& steps, std::string fail_at = "", Error error = Error::kNone, int raise = 0,
           int code = cmd::kExitOk)
      : steps_(steps), fail_at_(std::move(fail_at)), error_(error), raise_(raise), code_(code) {}
  ~FakeTool() override { steps_.push_back("restore"); }
  FakeTool(const FakeTool&) = delete;
  FakeTool& operator=(const FakeTool&) = delete;

  void plan() override { step("plan"); }
  void prepare() override { step("prepare"); }
  void run() override {
    step("run");
    if (raise_) std::raise(raise_);  // the driver's handler turns it into a flag
  }
  void analyze() override { step("analyze"); }
  int report() override {
    step("report");
    return code_;
  }
  int interrupted_by() const override { return sys::StopSignals::pending(); }

 private:
  void step(const std::string& name) {
    steps_.push_back(name + (sigint_handler() == test_handler ? "" : " (signals held)"));
    if (name != fail_at_) return;
    switch (error_) {
      case Error::kUsage:
        throw UsageError("--x 'y': bad");
      case Error::kRuntime:
        throw RuntimeError("cannot pin");
      case Error::kOther:
        throw std::logic_error("unexpected");
      case Error::kNone:
        break;
    }
  }

  std::vector<std::string>& steps_;
  std::string fail_at_;
  Error error_;
  int raise_;
  int code_;
};

// A command as main_entry runs it: the Tool built and driven inside run_command.
int command(std::vector<std::string>& steps, std::string fail_at = "", FakeTool::Error error = FakeTool::Error::kNone,
            int raise = 0, int code = cmd::kExitOk) {
  return cmd::run_command("fake", [&] {
    FakeTool tool(steps, fail_at, error, raise, code);
    return cmd::drive(tool);
  });
}

class Driver : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction sa {};
    sa.sa_handler = test_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    sys::StopSignals::reset();
  }
  void TearDown() override {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sys::StopSignals::reset();
  }

  // What f writes on stderr.
  template <typename F>
  std::string stderr_of(F f) {
    ::testing::internal::CaptureStderr();
    f();
    return ::testing::internal::GetCapturedStderr();
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

TEST_F(Driver, StepsInOrderSignalsHeldFromPrepareToReportThenRestore) {
  std::vector<std::string> steps;
  EXPECT_EQ(command(steps), cmd::kExitOk);
  EXPECT_EQ(steps, (std::vector<std::string>{"plan", "prepare (signals held)", "run (signals held)",
                                             "analyze (signals held)", "report (signals held)", "restore"}));
  EXPECT_EQ(sigint_handler(), test_handler);  // the old handler is back
}

TEST_F(Driver, ReportReturnsTheExitCode) {
  std::vector<std::string> steps;
  EXPECT_EQ(command(steps, "", FakeTool::Error::kNone, 0, cmd::kExitGateFailed), cmd::kExitGateFailed);
  EXPECT_EQ(steps.back(), "restore");
}

TEST_F(Driver, UsageErrorInPlanIsExit2BeforeAnythingIsAcquired) {
  std::vector<std::string> steps;
  int code = -1;
  const std::string err = stderr_of([&] { code = command(steps, "plan", FakeTool::Error::kUsage); });
  EXPECT_EQ(code, cmd::kExitUsage);
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err, "shootdown fake: --x 'y': bad\n");
  EXPECT_EQ(steps, (std::vector<std::string>{"plan", "restore"}));
}

TEST_F(Driver, RuntimeErrorInAMiddleStepIsExit1AndRestores) {
  for (const std::string at : {"prepare", "run", "analyze", "report"}) {
    std::vector<std::string> steps;
    int code = -1;
    const std::string err = stderr_of([&] { code = command(steps, at, FakeTool::Error::kRuntime); });
    EXPECT_EQ(code, cmd::kExitError) << at;
    EXPECT_EQ(code, 1) << at;
    EXPECT_EQ(err, "shootdown fake: error: cannot pin\n") << at;
    ASSERT_GE(steps.size(), 2u);
    EXPECT_EQ(steps[steps.size() - 2], at + " (signals held)");  // nothing after the failing step
    EXPECT_EQ(steps.back(), "restore") << at;
    EXPECT_EQ(sigint_handler(), test_handler) << at;
  }
}

TEST_F(Driver, AnyOtherExceptionIsExit1) {
  std::vector<std::string> steps;
  int code = -1;
  const std::string err = stderr_of([&] { code = command(steps, "run", FakeTool::Error::kOther); });
  EXPECT_EQ(code, cmd::kExitError);
  EXPECT_EQ(err, "shootdown fake: error: unexpected\n");
  EXPECT_EQ(steps.back(), "restore");
}

TEST_F(Driver, UsageErrorBeforeTheToolIsExit2) {
  // run_command also maps what fails before drive(), as the option checks.
  int code = -1;
  const std::string err =
      stderr_of([&] { code = cmd::run_command("fake", []() -> int { throw UsageError("--out '': empty value"); }); });
  EXPECT_EQ(code, cmd::kExitUsage);
  EXPECT_EQ(err, "shootdown fake: --out '': empty value\n");
}

TEST_F(Driver, InterruptedBySigintIs130AndStillReportsAndRestores) {
  std::vector<std::string> steps;
  EXPECT_EQ(command(steps, "", FakeTool::Error::kNone, SIGINT), 130);
  EXPECT_EQ(steps, (std::vector<std::string>{"plan", "prepare (signals held)", "run (signals held)",
                                             "analyze (signals held)", "report (signals held)", "restore"}));
  EXPECT_EQ(sigint_handler(), test_handler);
}

TEST_F(Driver, InterruptedBySigtermIs143WhateverReportReturned) {
  std::vector<std::string> steps;
  EXPECT_EQ(command(steps, "", FakeTool::Error::kNone, SIGTERM, cmd::kExitError), 143);
  EXPECT_EQ(steps.back(), "restore");
}

TEST_F(Driver, WatchStopsOnTickDurationAndSignal) {
  cmd::Watch w;
  w.period_ms = 1;
  int ticks = 0;
  w.tick = [&ticks] { return ++ticks == 3; };
  EXPECT_EQ(cmd::watch(w), cmd::StopCause::kTick);
  EXPECT_EQ(ticks, 3);

  cmd::Watch d;
  d.period_ms = 1;
  d.duration_ns = 5'000'000;
  EXPECT_EQ(cmd::watch(d), cmd::StopCause::kDuration);

  sys::StopSignals signals;
  std::raise(SIGTERM);
  cmd::Watch s;
  s.period_ms = 1;
  EXPECT_EQ(cmd::watch(s), cmd::StopCause::kSignal);
}
