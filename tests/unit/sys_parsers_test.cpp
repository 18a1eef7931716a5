#include <gtest/gtest.h>

#include <fstream>
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
  std::string why;
  EXPECT_FALSE(parse_interrupts("", &why));
  EXPECT_FALSE(parse_interrupts("hello world\n", &why));
  EXPECT_NE(why.find("hello"), std::string::npos);
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
  std::string why;
  EXPECT_FALSE(c.snapshot(&why));  // nothing captured yet
  ASSERT_TRUE(c.capture()) << c.error();
  auto s = c.snapshot(&why);
  ASSERT_TRUE(s) << why;
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
