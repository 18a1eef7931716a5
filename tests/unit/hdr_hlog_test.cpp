// SPDX-License-Identifier: Apache-2.0
// .hlog writer and reader: the Java HistogramLogWriter's exact text, reading
// a log the Java writer produced, round trips, and malformed lines.
#include <gtest/gtest.h>

#include <sstream>

#include "core/hdr/hlog.hpp"
#include "hdr_test_util.hpp"

namespace shootdown::hdr {
namespace {

using test::read_text;

Histogram make(int n, std::int64_t base) {
  Histogram h(1, 3600LL * 1000 * 1000 * 1000, 3);
  for (int i = 0; i < n; ++i) h.record(base + (i * 37) % 5000);
  return h;
}

TEST(HdrHlog, HeaderLinesAsJavaWritesThem) {
  LogHeader header;
  header.comments = {"Logged with GenGolden"};
  header.start_time_msec = 1700000000123;
  header.base_time_msec = 1700000000123;
  header.max_value_divisor = 1.0;  // Java writes no divisor line
  const HlogWriter w(header);
  // The Java writer's header of tests/fixtures/hdr/java_intervals.hlog.
  const std::string java = read_text("java_intervals.hlog");
  EXPECT_EQ(w.text(), java.substr(0, w.text().size()));
  LogHeader ours;
  EXPECT_NE(HlogWriter(ours).text().find("#[MaxValueDivisor: 1000.000]\n"), std::string::npos);
}

TEST(HdrHlog, IntervalLineFormat) {
  const Histogram h = make(100, 2000);
  auto line = format_interval_line("cpu3", 0.0005, 0.25, h, 1000.0);
  ASSERT_TRUE(line.ok()) << line.error();
  EXPECT_EQ(line->rfind("Tag=cpu3,0.001,0.250,", 0), 0u) << *line;
  EXPECT_NE(line->find(",HISTF"), std::string::npos);  // base64 of cookie 0x1c849314
  auto untagged = format_interval_line("", 1.5, 1.0, h, 1000.0);
  ASSERT_TRUE(untagged.ok());
  EXPECT_EQ(untagged->rfind("1.500,1.000,", 0), 0u);
  EXPECT_FALSE(format_interval_line("a,b", 0, 1, h, 1).ok());
  EXPECT_FALSE(format_interval_line("a b", 0, 1, h, 1).ok());
}

TEST(HdrHlog, ReadsJavaWrittenLog) {
  auto log = parse_log(read_text("java_intervals.hlog"));
  ASSERT_TRUE(log.ok()) << log.error();
  EXPECT_DOUBLE_EQ(*log->start_time_sec, 1700000000.123);
  EXPECT_DOUBLE_EQ(*log->base_time_sec, 1700000000.123);
  ASSERT_EQ(log->intervals.size(), 5u);
  std::istringstream expected(read_text("java_intervals.expected"));
  for (std::size_t i = 0; i < log->intervals.size(); ++i) {
    const LogInterval& iv = log->intervals[i];
    std::string tag;
    std::int64_t total = 0, min = 0, max = 0, p50 = 0, p999 = 0;
    expected >> tag >> total >> min >> max >> p50 >> p999;
    EXPECT_EQ(iv.tag, tag == "-" ? "" : tag) << i;
    EXPECT_EQ(iv.histogram.total_count(), total) << i;
    EXPECT_EQ(iv.histogram.min(), min) << i;
    EXPECT_EQ(iv.histogram.max(), max) << i;
    EXPECT_EQ(iv.histogram.value_at_percentile(50.0), p50) << i;
    EXPECT_EQ(iv.histogram.value_at_percentile(99.9), p999) << i;
    EXPECT_NEAR(iv.start_sec, 0.25 * static_cast<double>(i) + 0.001, 1e-9);
    EXPECT_DOUBLE_EQ(iv.length_sec, 0.25);
    EXPECT_NEAR(iv.max_field, static_cast<double>(max) / 1000.0, 0.0005);
  }
}

TEST(HdrHlog, RoundTrip) {
  LogHeader header;
  header.start_time_msec = 1700000000000;
  header.base_time_msec = 1700000000000;
  HlogWriter w(header);
  std::vector<Histogram> hs = {make(10, 1000), make(2000, 50000), Histogram(1, 1000, 2)};
  ASSERT_TRUE(w.add("", 0.0, 1.0, hs[0]).ok());
  ASSERT_TRUE(w.add("victim1", 1.0, 1.0, hs[1]).ok());
  ASSERT_TRUE(w.add("", 2.0, 0.5, hs[2]).ok());
  EXPECT_FALSE(w.add("bad tag", 3.0, 1.0, hs[0]).ok());
  auto log = parse_log(w.text());
  ASSERT_TRUE(log.ok()) << log.error();
  ASSERT_EQ(log->intervals.size(), 3u);
  EXPECT_DOUBLE_EQ(*log->max_value_divisor, 1000.0);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(log->intervals[i].histogram == hs[i]) << i;
  EXPECT_EQ(log->intervals[1].tag, "victim1");
  EXPECT_DOUBLE_EQ(log->intervals[2].length_sec, 0.5);
}

void expect_log_error(std::string_view text, const std::string& needle) {
  auto r = parse_log(text);
  ASSERT_FALSE(r.ok()) << "expected error containing " << needle;
  EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
}

TEST(HdrHlog, MalformedLines) {
  const std::string b64 = encode_compressed_base64(make(10, 1000));
  expect_log_error("0.0,1.0,2.0\n", "hlog line 1: expected 4");
  expect_log_error("#c\nx,1.0,2.0," + b64 + "\n", "hlog line 2: start timestamp");
  expect_log_error("0.0,y,2.0," + b64 + "\n", "interval length");
  expect_log_error("0.0,1.0,,," + b64 + "\n", "more than 4 fields");
  expect_log_error("0.0,1.0,2.0,HISTF!!!\n", "bad base64");
  expect_log_error("0.0,1.0,2.0,AAAAAAAA\n", "wrong cookie");
  expect_log_error("Tag=x\n", "Tag=");
  expect_log_error("#[StartTime: abc]\n", "StartTime");
  // Comments, legend, blank lines and CRLF are fine.
  auto ok = parse_log("#hello\r\n\r\n" + std::string(kLogLegend) + "\r\n0.0,1.0,2.0," + b64 + "\r\n");
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok->intervals.size(), 1u);
  ReadLimits tight;
  tight.max_intervals = 1;
  auto capped = parse_log("0,1,2," + b64 + "\n0,1,2," + b64 + "\n", tight);
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.error().find("more than 1 intervals"), std::string::npos) << capped.error();
}

}  // namespace
}  // namespace shootdown::hdr
