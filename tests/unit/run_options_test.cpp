// SPDX-License-Identifier: Apache-2.0
// `run`'s option validation without the binary: a Plan from strings and the
// machine's facts, or one line naming the option, the value and what is
// accepted.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "cli/run_options.hpp"
#include "core/errors.hpp"

using namespace shootdown;
using cli::MachineFacts;
using cli::RunOptions;

namespace {

MachineFacts machine(int cpus) {
  MachineFacts m;
  for (int c = 0; c < cpus; ++c) m.online.push_back(c);
  m.default_cpus = {0, 1};
  m.default_cpus_why = "test machine";
  m.cpu_node.assign(static_cast<std::size_t>(cpus), 0);
  m.mem_available = 64LL << 30;
  return m;
}

RunOptions small() {
  RunOptions o;
  o.chunk_size = "64MiB";
  o.trigger = "after=1s";
  return o;
}

// The one line validation throws for `change` applied to small(), or "" when
// it is accepted.
std::string error_of(const std::function<void(RunOptions&)>& change, const MachineFacts& m = machine(4)) {
  RunOptions o = small();
  change(o);
  try {
    (void)cli::validate_run_options(o, m, nullptr);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunOptions, DefaultsAndGivenCpus) {
  std::vector<std::string> warnings;
  const Plan p = cli::validate_run_options(small(), machine(4), &warnings);
  EXPECT_EQ(p.culprit_cpu, 0);
  EXPECT_EQ(p.victim_cpus, std::vector<int>{1});
  EXPECT_EQ(p.release, ReleaseStrategy::kFree);
  EXPECT_EQ(p.trigger, Trigger::kAfter);
  EXPECT_EQ(p.trace, TraceMode::kAuto);
  EXPECT_EQ(p.trigger_after_ns, 1'000'000'000);
  EXPECT_EQ(p.repeat, 1);

  RunOptions o = small();
  o.culprit_cpu = "1";
  o.victim_cpus = "3,65,70";  // a 72-CPU machine: victims past the first cpumask word
  o.release = "munmap";
  o.repeat = 3;
  const Plan big = cli::validate_run_options(o, machine(72), nullptr);
  EXPECT_EQ(big.culprit_cpu, 1);
  EXPECT_EQ(big.victim_cpus, (std::vector<int>{3, 65, 70}));
  EXPECT_EQ(big.release, ReleaseStrategy::kMunmap);
  EXPECT_EQ(big.repeat, 3);
}

TEST(RunOptions, SmtSiblingsAndOtherNodesAreWarnedNotRefused) {
  MachineFacts m = machine(4);
  m.smt_pairs = {{0, 1}};
  m.cpu_node = {0, 0, 1, 1};
  RunOptions o = small();
  o.culprit_cpu = "0";
  o.victim_cpus = "1,2";
  std::vector<std::string> warnings;
  (void)cli::validate_run_options(o, m, &warnings);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("CPUs 0 and 1 are SMT siblings"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("victim CPU 2 is on another NUMA node"), std::string::npos) << warnings[1];
}

// Each bad value: one line that starts with the option and its value and
// says what is accepted.
TEST(RunOptions, BadInputIsOneLineNamingTheOption) {
  struct Case {
    std::function<void(RunOptions&)> change;
    std::string starts;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](RunOptions& o) { o.release = "bogus"; }, "--release 'bogus'", "accepted:"},
      {[](RunOptions& o) { o.pages = "8k"; }, "--pages '8k'", "accepted:"},
      {[](RunOptions& o) { o.trace = "bpf"; }, "--trace 'bpf'", "accepted: auto, on, off"},
      {[](RunOptions& o) { o.trace = "maybe"; }, "--trace 'maybe'", "accepted: auto, on, off"},
      {[](RunOptions& o) { o.trigger = "soon"; }, "--trigger 'soon'", "accepted: enter or after=DURATION"},
      {[](RunOptions& o) { o.trigger = "after=fast"; }, "--trigger 'after=fast'", "accepted: enter or after="},
      {[](RunOptions& o) { o.repeat = 0; }, "--repeat 0", "out of range [1, 100000]"},
      {[](RunOptions& o) { o.stall_factor = 0.5; }, "--stall-factor 0.5", "out of range [1, 1000]"},
      {[](RunOptions& o) { o.after = "61m"; }, "--after 61m", "out of range [0, 1h]"},
      {[](RunOptions& o) { o.every = "soon"; }, "--every 'soon'", "accepted: a duration"},
      {[](RunOptions& o) { o.batch = "lots"; }, "--batch 'lots'", "accepted: a size"},
      {[](RunOptions& o) { o.pace = "64KiB/1ms"; }, "--pace '64KiB/1ms'", "accepted with --release paced or chunked"},
      {[](RunOptions& o) { o.allocator_conf = "x:1"; }, "--allocator-conf 'x:1'", "accepted with --release"},
      {[](RunOptions& o) { o.open = true; }, "--open", "needs --out DIR"},
      {[](RunOptions& o) { o.victim_cpus = "9"; }, "--victim-cpus 9", "not online (online CPUs: 0-3)"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.change);
    EXPECT_EQ(e.rfind(c.starts, 0), 0u) << "got: " << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << "got: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_EQ(error_of([](RunOptions&) {}), "");
}
