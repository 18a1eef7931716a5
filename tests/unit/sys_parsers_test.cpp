// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "sys/cpus.hpp"
#include "sys/fs.hpp"
#include "sys/interrupts.hpp"
#include "sys/meminfo.hpp"

using namespace shootdown::sys;

namespace {
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SHOOTDOWN_FIXTURES) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Interrupts, ParsesRowsAndCpus) {
  auto s = parse_interrupts(fixture("proc/interrupts.txt"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(s->get("TLB", 0), 587);
  EXPECT_EQ(s->get("TLB", 1), 657);
  EXPECT_EQ(s->get("CAL", 1), 18036);
  EXPECT_EQ(s->get("36", 1), 6585);
  EXPECT_EQ(s->get("ERR", 0), 0);
  EXPECT_FALSE(s->get("ERR", 1));
  EXPECT_FALSE(s->get("TLB", 5));
  EXPECT_EQ(s->descriptions["TLB"], "TLB shootdowns");
}

TEST(Interrupts, Delta) {
  auto a = parse_interrupts("  CPU0 CPU1\nTLB: 10 20 TLB shootdowns\n");
  auto b = parse_interrupts("  CPU0 CPU1\nTLB: 15 90 TLB shootdowns\n");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(interrupts_delta(*a, *b, "TLB", 1), 70);
  EXPECT_EQ(interrupts_delta(*a, *b, "CAL", 1), 0);
}

TEST(Interrupts, RejectsGarbage) {
  EXPECT_FALSE(parse_interrupts(""));
  const auto garbage = parse_interrupts("hello world\n");
  EXPECT_FALSE(garbage);
  EXPECT_NE(garbage.error().find("hello"), std::string::npos);
}

TEST(RereadableFile, RereadsChangedContentAndGrows) {
  const std::string path = ::testing::TempDir() + "/rereadable.txt";
  { std::ofstream(path) << "first"; }
  RereadableFile f(path);
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(f.read());
  EXPECT_EQ(f.text(), "first");
  const std::string big(200 * 1024, 'x');  // beyond the 64 KiB reserve: read() grows
  { std::ofstream(path) << big; }
  ASSERT_TRUE(f.read());
  EXPECT_EQ(f.text().size(), big.size());
  { std::ofstream(path) << "short"; }
  ASSERT_TRUE(f.read());
  EXPECT_EQ(f.text(), "short");
}

TEST(RereadableFile, MissingFileSaysWhich) {
  RereadableFile f("/nonexistent/shootdown-test");
  EXPECT_FALSE(f.ok());
  EXPECT_FALSE(f.read());
  EXPECT_NE(f.error().find("/nonexistent/shootdown-test"), std::string::npos);
}

TEST(Interrupts, CaptureParsesLater) {
  InterruptsCapture c;
  EXPECT_FALSE(c.snapshot());  // nothing captured yet
  ASSERT_TRUE(c.capture()) << c.error();
  auto s = c.snapshot();
  ASSERT_TRUE(s) << s.error();
  EXPECT_GT(s->mono_ns, 0);
  EXPECT_FALSE(s->cpus.empty());
}

TEST(MemInfo, Parses) {
  auto m = parse_meminfo(
      "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\nHugePages_Free:  7\nHugepagesize:    2048 kB\n");
  EXPECT_EQ(m.mem_available(), 1000 * 1024);
  EXPECT_EQ(m.hugepages_free(), 7);
  EXPECT_EQ(m.hugepage_size(), 2048 * 1024);
  EXPECT_EQ(parse_bracketed("always [madvise] never\n"), "madvise");
}

namespace {
// A reader of cgroup files from a map (absolute path -> content).
std::function<std::optional<std::string>(const std::string&)> files(std::map<std::string, std::string> m) {
  return [m](const std::string& p) -> std::optional<std::string> {
    auto it = m.find(p);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST(CgroupMemory, V1MemoryControllerUsesTheHierarchicalLimit) {
  // This machine's layout: hybrid, the memory controller on v1, the process
  // in /process_api/X; hierarchical_memory_limit is the lowest on the way up.
  const std::string cg = "9:name=systemd:/\n4:memory:/process_api/x/sd\n0::/\n";
  const std::string mi =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  const auto c = parse_cgroup_memory(
      cg, mi,
      files({{"/sys/fs/cgroup/memory/process_api/x/sd/memory.stat", "cache 0\nhierarchical_memory_limit 314572800\n"},
             {"/sys/fs/cgroup/memory/process_api/x/sd/memory.limit_in_bytes", "9223372036854771712\n"},
             {"/sys/fs/cgroup/memory/process_api/x/sd/memory.usage_in_bytes", "1708032\n"}}));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->version, 1);
  EXPECT_EQ(c->path, "/process_api/x/sd");
  EXPECT_EQ(c->limit, 314572800);
  EXPECT_EQ(c->usage, 1708032);
  // Unlimited (the kernel's "no limit" is a page-rounded LLONG_MAX): -1.
  const auto u = parse_cgroup_memory(
      cg, mi,
      files({{"/sys/fs/cgroup/memory/process_api/x/sd/memory.limit_in_bytes", "9223372036854771712\n"},
             {"/sys/fs/cgroup/memory/process_api/x/sd/memory.usage_in_bytes", "5\n"}}));
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->limit, -1);
}

TEST(CgroupMemory, V2TakesTheLowestMaxUpToTheMountRoot) {
  // A container: its cgroup namespace root is /docker/c, mounted at /sys/fs/cgroup.
  const std::string cg = "0::/docker/c/app\n";
  const std::string mi = "50 40 0:40 /docker/c /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
  const auto c = parse_cgroup_memory(cg, mi,
                                     files({{"/sys/fs/cgroup/app/memory.current", "1048576\n"},
                                            {"/sys/fs/cgroup/app/memory.max", "max\n"},
                                            {"/sys/fs/cgroup/memory.max", "536870912\n"}}));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->version, 2);
  EXPECT_EQ(c->limit, 536870912);
  EXPECT_EQ(c->usage, 1048576);
  // No memory controller enabled (no memory.current): nothing to say.
  EXPECT_FALSE(parse_cgroup_memory(cg, mi, files({})).has_value());
  // A cgroup outside the mount's root (another namespace): not ours to read.
  EXPECT_FALSE(
      parse_cgroup_memory("0::/elsewhere\n", mi, files({{"/sys/fs/cgroup/memory.current", "1\n"}})).has_value());
  // Nothing mounted.
  EXPECT_FALSE(parse_cgroup_memory(cg, "", files({})).has_value());
}
