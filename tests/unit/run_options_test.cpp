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

// Every rule of validate_run_options: a value it accepts and one it refuses,
// with the refusal's exact line.
TEST(RunOptions, EachRuleAcceptsOneValueAndRefusesAnotherWithItsLine) {
  using Change = std::function<void(RunOptions&, MachineFacts&)>;
  struct Rule {
    std::string name;
    Change accepted;
    Change refused;
    std::string line;
  };
  const std::string pace_accepted =
      "accepted: SIZE/DURATION, a step that is a multiple of the page size (4 KiB) up to the chunk (64 MiB) and a "
      "pause from 0 to 1s after each step, like 64KiB/100us or 64MiB/10ms";
  const std::vector<Rule> rules = {
      {"culprit CPU a number", [](RunOptions& o, MachineFacts&) { o.culprit_cpu = "2"; },
       [](RunOptions& o, MachineFacts&) { o.culprit_cpu = "x"; },
       "--culprit-cpu 'x': not a CPU number (online CPUs: 0-3)"},
      {"culprit CPU online", [](RunOptions& o, MachineFacts&) { o.culprit_cpu = "3"; },
       [](RunOptions& o, MachineFacts&) { o.culprit_cpu = "7"; },
       "--culprit-cpu 7: CPU 7 is not online (online CPUs: 0-3)"},
      {"victim CPUs a list", [](RunOptions& o, MachineFacts&) { o.victim_cpus = "1-2"; },
       [](RunOptions& o, MachineFacts&) { o.victim_cpus = "1-"; },
       "--victim-cpus '1-': '1-' is not a CPU range like 2-5 (accepted: a CPU list like 1 or 1,3-5)"},
      {"victim CPUs online", [](RunOptions& o, MachineFacts&) { o.victim_cpus = "3"; },
       [](RunOptions& o, MachineFacts&) { o.victim_cpus = "2,9"; },
       "--victim-cpus 2,9: CPU 9 is not online (online CPUs: 0-3)"},
      {"culprit not a victim",
       [](RunOptions& o, MachineFacts&) {
         o.culprit_cpu = "1";
         o.victim_cpus = "2";
       },
       [](RunOptions& o, MachineFacts&) {
         o.culprit_cpu = "1";
         o.victim_cpus = "1,2";
       },
       "--victim-cpus 1-2: includes the culprit CPU 1; culprit and victims must be distinct CPUs"},
      {"a CPU left for the culprit", [](RunOptions& o, MachineFacts&) { o.victim_cpus = "1-2"; },
       [](RunOptions& o, MachineFacts&) { o.victim_cpus = "0-3"; },
       "--victim-cpus 0-3: leaves no online CPU for the culprit"},
      {"a CPU left for a victim", [](RunOptions& o, MachineFacts&) { o.culprit_cpu = "0"; },
       [](RunOptions& o, MachineFacts& m) {
         o.culprit_cpu = "0";
         m.online = {0};
       },
       "--culprit-cpu 0: no other online CPU for a victim"},
      {"default CPUs", [](RunOptions&, MachineFacts&) {}, [](RunOptions&, MachineFacts& m) { m.default_cpus = {0}; },
       "--culprit-cpu/--victim-cpus: cannot choose defaults: test machine; give them explicitly"},
      {"--pages", [](RunOptions& o, MachineFacts&) { o.pages = "thp"; },
       [](RunOptions& o, MachineFacts&) { o.pages = "8k"; },
       "--pages '8k': unknown page mode (accepted: 4k, thp, hugetlb)"},
      {"--release", [](RunOptions& o, MachineFacts&) { o.release = "munmap"; },
       [](RunOptions& o, MachineFacts&) { o.release = "probe"; },
       "--release 'probe': unknown strategy (accepted: free, munmap, madvise-dontneed, madvise-free, mprotect, "
       "madvise-ranges, process-madvise, paced, chunked, glibc-malloc, jemalloc, tcmalloc, mimalloc, reuse, "
       "membarrier)"},
      {"--trace", [](RunOptions& o, MachineFacts&) { o.trace = "off"; },
       [](RunOptions& o, MachineFacts&) { o.trace = "bpf"; }, "--trace 'bpf': unknown mode (accepted: auto, on, off)"},
      {"--pace only when paced",
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "64KiB/1ms";
       },
       [](RunOptions& o, MachineFacts&) { o.pace = "64KiB/1ms"; },
       "--pace '64KiB/1ms': the release free has no pace (accepted with --release paced or chunked)"},
      {"--pace SIZE/DURATION",
       [](RunOptions& o, MachineFacts&) {
         o.release = "chunked";
         o.pace = "2MiB/1ms";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "chunked";
         o.pace = "2MiB";
       },
       "--pace '2MiB': not SIZE/DURATION (" + pace_accepted + ")"},
      {"--pace step", [](RunOptions& o, MachineFacts&) { o.release = "paced"; },
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "lots/1ms";
       },
       "--pace 'lots/1ms': step 'lots': expected a number (" + pace_accepted + ")"},
      {"--pace pause", [](RunOptions& o, MachineFacts&) { o.release = "paced"; },
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "64KiB/soon";
       },
       "--pace '64KiB/soon': pause 'soon': expected a number (" + pace_accepted + ")"},
      {"--pace step in pages",
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "8KiB/0ms";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "6KiB/0ms";
       },
       "--pace '6KiB/0ms': the step must be a positive multiple of the 4 KiB page size with --pages 4k (" +
           pace_accepted + ")"},
      {"--pace step within the chunk",
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "64MiB/1ms";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "128MiB/1ms";
       },
       "--pace '128MiB/1ms': the step is larger than the chunk (" + pace_accepted + ")"},
      {"--pace pause range",
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "32MiB/1s";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "32MiB/2s";
       },
       "--pace '32MiB/2s': the pause is out of range (" + pace_accepted + ")"},
      {"--pace within 1h",
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "4KiB/200us";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "paced";
         o.pace = "4KiB/1s";
       },
       "--pace '4KiB/1s': 16384 steps with that pause take 16383.00 s (more than 1h); use a larger step or a shorter "
       "pause (accepted: a release within 1h)"},
      {"--allocator-conf only for allocators", [](RunOptions& o, MachineFacts&) { o.release = "glibc-malloc"; },
       [](RunOptions& o, MachineFacts&) { o.allocator_conf = "x:1"; },
       "--allocator-conf 'x:1': the release free uses no allocator (accepted with --release glibc-malloc, jemalloc, "
       "tcmalloc or mimalloc)"},
      {"--allocator-purge only for allocators",
       [](RunOptions& o, MachineFacts&) {
         o.release = "jemalloc";
         o.allocator_purge = "off";
       },
       [](RunOptions& o, MachineFacts&) { o.allocator_purge = "off"; },
       "--allocator-purge 'off': the release free uses no allocator (accepted with --release glibc-malloc, "
       "jemalloc, tcmalloc or mimalloc)"},
      {"--allocator-conf syntax",
       [](RunOptions& o, MachineFacts&) {
         o.release = "jemalloc";
         o.allocator_conf = "dirty_decay_ms:0";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "jemalloc";
         o.allocator_conf = "dirty_decay_ms";
       },
       "--allocator-conf 'dirty_decay_ms' for jemalloc: 'dirty_decay_ms': not NAME:VALUE (accepted: jemalloc's "
       "MALLOC_CONF syntax key:value,..., e.g. dirty_decay_ms:0,background_thread:true)"},
      {"--allocator-purge on or off",
       [](RunOptions& o, MachineFacts&) {
         o.release = "tcmalloc";
         o.allocator_purge = "on";
       },
       [](RunOptions& o, MachineFacts&) {
         o.release = "tcmalloc";
         o.allocator_purge = "maybe";
       },
       "--allocator-purge 'maybe': not on or off (accepted: on, off)"},
      {"--trigger", [](RunOptions& o, MachineFacts&) { o.trigger = "enter"; },
       [](RunOptions& o, MachineFacts&) { o.trigger = "soon"; },
       "--trigger 'soon': unknown trigger (accepted: enter or after=DURATION like after=2s)"},
      {"--trigger after=", [](RunOptions& o, MachineFacts&) { o.trigger = "after=250ms"; },
       [](RunOptions& o, MachineFacts&) { o.trigger = "after=fast"; },
       "--trigger 'after=fast': expected a number (accepted: enter or after=DURATION like after=2s)"},
      {"--repeat", [](RunOptions& o, MachineFacts&) { o.repeat = 100000; },
       [](RunOptions& o, MachineFacts&) { o.repeat = 0; }, "--repeat 0: out of range [1, 100000]"},
      {"--every", [](RunOptions& o, MachineFacts&) { o.every = "2s"; },
       [](RunOptions& o, MachineFacts&) { o.every = "2x"; },
       "--every '2x': unknown time unit (use ns, us, ms, s, m) (accepted: a duration like 250ms, 2s, 50us)"},
      {"--baseline", [](RunOptions& o, MachineFacts&) { o.baseline = "150ms"; },
       [](RunOptions& o, MachineFacts&) { o.baseline = "-1s"; },
       "--baseline '-1s': negative values are not accepted (accepted: a duration like 250ms, 2s, 50us)"},
      {"--settle", [](RunOptions& o, MachineFacts&) { o.settle = "0ms"; },
       [](RunOptions& o, MachineFacts&) { o.settle = "5"; },
       "--settle '5': missing time unit (use ns, us, ms, s) (accepted: a duration like 250ms, 2s, 50us)"},
      {"--after", [](RunOptions& o, MachineFacts&) { o.after = "60m"; },
       [](RunOptions& o, MachineFacts&) { o.after = "61m"; }, "--after 61m: out of range [0, 1h]"},
      {"--stall-threshold", [](RunOptions& o, MachineFacts&) { o.stall_threshold = "50us"; },
       [](RunOptions& o, MachineFacts&) { o.stall_threshold = "x"; },
       "--stall-threshold 'x': expected a number (accepted: a duration like 250ms, 2s, 50us)"},
      {"--stall-factor", [](RunOptions& o, MachineFacts&) { o.stall_factor = 1000; },
       [](RunOptions& o, MachineFacts&) { o.stall_factor = 0.5; }, "--stall-factor 0.5: out of range [1, 1000]"},
      {"--open needs --out",
       [](RunOptions& o, MachineFacts&) {
         o.open = true;
         o.out = "dir";
       },
       [](RunOptions& o, MachineFacts&) { o.open = true; },
       "--open: needs --out DIR (the report is written to DIR/report.html)"},
      {"--batch a size", [](RunOptions& o, MachineFacts&) { o.batch = "1MiB"; },
       [](RunOptions& o, MachineFacts&) { o.batch = "lots"; },
       "--batch 'lots': expected a number (accepted: a size like 64KiB, 512MiB, 4GiB)"},
      {"--batch whole pages", [](RunOptions& o, MachineFacts&) { o.batch = "8KiB"; },
       [](RunOptions& o, MachineFacts&) { o.batch = "6000"; },
       "--batch 6000: must be a positive multiple of the 4 KiB page size (e.g. 64KiB)"},
      {"--report-every", [](RunOptions& o, MachineFacts&) { o.report_every = "1ms"; },
       [](RunOptions& o, MachineFacts&) { o.report_every = "500us"; },
       "--report-every '500us': out of range (accepted: a duration from 1ms to 1h like 10ms, or a size of victim "
       "writes like 32MiB)"},
      {"--report-every a size or a duration", [](RunOptions& o, MachineFacts&) { o.report_every = "32MiB"; },
       [](RunOptions& o, MachineFacts&) { o.report_every = "often"; },
       "--report-every 'often': neither a duration nor a size (accepted: a duration from 1ms to 1h like 10ms, or a "
       "size of victim writes like 32MiB)"},
      {"--chunk-size a size", [](RunOptions& o, MachineFacts&) { o.chunk_size = "512MiB"; },
       [](RunOptions& o, MachineFacts&) { o.chunk_size = "big"; },
       "--chunk-size 'big': expected a number (accepted: a size like 64KiB, 512MiB, 4GiB)"},
      {"--chunk-size at least 4KiB",
       [](RunOptions& o, MachineFacts&) {
         o.chunk_size = "4KiB";
         o.batch = "4KiB";
       },
       [](RunOptions& o, MachineFacts&) { o.chunk_size = "1KiB"; },
       "--chunk-size 1KiB: must be at least 4KiB (accepted: a size like 512MiB, 4GiB)"},
      {"--memory-limit a size", [](RunOptions& o, MachineFacts&) { o.memory_limit = "1GiB"; },
       [](RunOptions& o, MachineFacts&) { o.memory_limit = "1GB?"; },
       "--memory-limit '1GB?': unknown size unit (use B, KiB, MiB, GiB, TiB) (accepted: a size like 64KiB, 512MiB, "
       "4GiB)"},
      {"--memory-limit per victim", [](RunOptions& o, MachineFacts&) { o.memory_limit = "256MiB"; },
       [](RunOptions& o, MachineFacts&) {
         o.victim_cpus = "1,2";
         o.memory_limit = "256MiB";
       },
       "--memory-limit 256MiB: below the least for 2 victims (512 MiB: a 32 MiB sample store per victim, 8 bytes "
       "of analysis per stored byte) (accepted: a size like 512MiB, 2GiB)"},
      {"--chunk-size given must fit",
       [](RunOptions& o, MachineFacts&) {
         o.chunk_size = "16GiB";
         o.chunk_size_given = true;
       },
       [](RunOptions& o, MachineFacts&) {
         o.chunk_size = "32GiB";
         o.chunk_size_given = true;
       },
       "--chunk-size 32GiB: 2 chunks (A + one B per victim) need 64 GiB but MemAvailable is 64 GiB (keep 6.40 GiB "
       "free); use at most 28.80 GiB"},
      {"--chunk-size within the memory cgroup",
       [](RunOptions& o, MachineFacts& m) {
         o.chunk_size_given = true;
         m.cgroup_limit = 1LL << 30;
         m.cgroup_path = "/test.slice";
       },
       [](RunOptions& o, MachineFacts& m) {
         o.chunk_size = "512MiB";
         o.chunk_size_given = true;
         m.cgroup_limit = 1LL << 30;
         m.cgroup_path = "/test.slice";
       },
       "--chunk-size 512MiB: 2 chunks (A + one B per victim) need 1 GiB but the memory cgroup /test.slice allows "
       "1 GiB more (limit 1 GiB, 0 B in use) (keep 341.33 MiB free); use at most 340 MiB"},
      {"default chunks fit", [](RunOptions& o, MachineFacts&) { o.chunk_size = "4GiB"; },
       [](RunOptions& o, MachineFacts& m) {
         o.chunk_size = "4GiB";
         m.mem_available = 1LL << 30;
       },
       "--chunk-size: not enough memory for the default chunks (MemAvailable is 1 GiB); free memory or give a "
       "smaller size"},
      {"--batch within the chunk", [](RunOptions& o, MachineFacts&) { o.batch = "64MiB"; },
       [](RunOptions& o, MachineFacts&) { o.batch = "128MiB"; },
       "--batch 128MiB: larger than the chunk (64 MiB); use a batch of at most the chunk size"},
      {"--report-every at least a batch", [](RunOptions& o, MachineFacts&) { o.report_every = "64KiB"; },
       [](RunOptions& o, MachineFacts&) { o.report_every = "32KiB"; },
       "--report-every 32KiB: smaller than the batch (64 KiB); use at least one batch"},
      {"--pages hugetlb needs free huge pages",
       [](RunOptions& o, MachineFacts& m) {
         o.pages = "hugetlb";
         m.hugepages_free = 64;
       },
       [](RunOptions& o, MachineFacts& m) {
         o.pages = "hugetlb";
         m.hugepages_free = 63;
       },
       "--pages hugetlb: needs 64 free huge pages of 2 MiB but HugePages_Free is 63; reserve them with 'echo 64 > "
       "/proc/sys/vm/nr_hugepages' or use --pages thp"},
  };
  for (const Rule& r : rules) {
    MachineFacts ok_machine = machine(4);
    RunOptions ok = small();
    r.accepted(ok, ok_machine);
    EXPECT_NO_THROW((void)cli::validate_run_options(ok, ok_machine, nullptr)) << r.name;
    MachineFacts bad_machine = machine(4);
    RunOptions bad = small();
    r.refused(bad, bad_machine);
    try {
      (void)cli::validate_run_options(bad, bad_machine, nullptr);
      ADD_FAILURE() << r.name << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(e.what(), r.line) << r.name;
    }
  }
}

// A default chunk that does not fit is capped, with a warning, not refused.
TEST(RunOptions, DefaultChunkIsCappedToFitWithAWarning) {
  RunOptions o = small();
  o.chunk_size = "64GiB";
  std::vector<std::string> warnings;
  const Plan p = cli::validate_run_options(o, machine(4), &warnings);
  EXPECT_TRUE(p.chunk_capped);
  EXPECT_EQ(p.chunk_size, 30922506240);  // (64 GiB - 6.4 GiB) / 2 in whole 2 MiB
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "chunk size capped from 64 GiB to 28.80 GiB so 2 chunks fit: MemAvailable is 64 GiB (keep 6.40 GiB free)");
}
