// SPDX-License-Identifier: Apache-2.0
// Regression tests for hostile input found by the fuzz targets (docs/fuzzing.md):
// perf ring records with lengths that wrap, tracepoint field offsets that
// overflow, the HTTP request handling of monitor --listen, and symbol names
// carrying terminal control bytes.
#include <array>
#include <gtest/gtest.h>

#include <sstream>

#include <fstream>

#include <cstring>
#include <linux/perf_event.h>
#include <string>
#include <vector>

#include "core/http_request.hpp"
#include "sink/json_read.hpp"
#include "sys/perf_fuzz.hpp"
#include "core/cpulist.hpp"
#include "sys/perf_ring.hpp"
#include "sys/tracefs.hpp"

namespace sd = shootdown;
namespace sys = shootdown::sys;

namespace {

struct Ring {
  std::vector<std::uint8_t> mem;
  explicit Ring(const std::vector<std::uint8_t>& records, std::uint64_t head_extra = 0)
      : mem(sizeof(perf_event_mmap_page) + std::max<std::size_t>(64, records.size()), 0) {
    std::memcpy(mem.data() + sizeof(perf_event_mmap_page), records.data(), records.size());
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(mem.data());
    meta->data_tail = 0;
    meta->data_head = records.size() + head_extra;
  }
  std::size_t data_size() const { return mem.size() - sizeof(perf_event_mmap_page); }
};

void put64(std::vector<std::uint8_t>& v, std::uint64_t x) {
  for (int i = 0; i < 8; ++i) v.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
}
void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
  for (int i = 0; i < 4; ++i) v.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
}

// A PERF_RECORD_SAMPLE of sample id 1 (flush send, with callchain) whose
// callchain length is nr.
std::vector<std::uint8_t> flush_sample(std::uint64_t nr, std::size_t ips_present) {
  std::vector<std::uint8_t> body;
  put64(body, 1);            // identifier
  put64(body, 0x100000001);  // pid, tid
  put64(body, 1000);         // time
  put64(body, 0);            // cpu
  put64(body, nr);
  for (std::size_t i = 0; i < ips_present; ++i) put64(body, 0xffffffff81000000ULL + i);
  put32(body, 32);  // raw size
  for (int i = 0; i < 32; ++i) body.push_back(0);
  while (body.size() % 8) body.push_back(0);
  std::vector<std::uint8_t> rec;
  put32(rec, PERF_RECORD_SAMPLE);
  rec.push_back(0);
  rec.push_back(0);
  const auto size = static_cast<std::uint16_t>(8 + body.size());
  rec.push_back(static_cast<std::uint8_t>(size));
  rec.push_back(static_cast<std::uint8_t>(size >> 8));
  rec.insert(rec.end(), body.begin(), body.end());
  return rec;
}

}  // namespace

TEST(HostilePerfRing, SaneCallchainDecodes) {
  Ring r(flush_sample(2, 2));
  const auto d = sys::decode_sampler_ring(r.mem.data(), sizeof(perf_event_mmap_page), r.data_size());
  ASSERT_EQ(d.flushes.size(), 1u);
  ASSERT_LT(d.flushes[0].stack, d.stacks.size());
  EXPECT_EQ(d.stacks[d.flushes[0].stack].kernel_ips.size(), 2u);
}

// nr * 8 wrapped to 0 for nr = 2^61: the record passed the bounds check and
// the decoder then read 2^61 callchain entries past the record.
TEST(HostilePerfRing, CallchainLengthThatWrapsIsRejected) {
  Ring r(flush_sample(std::uint64_t{1} << 61, 0));
  const auto d = sys::decode_sampler_ring(r.mem.data(), sizeof(perf_event_mmap_page), r.data_size());
  EXPECT_TRUE(d.flushes.empty());
  Ring t(flush_sample(std::uint64_t{1} << 61, 0));
  EXPECT_EQ(sys::decode_tracer_ring(t.mem.data(), sizeof(perf_event_mmap_page), t.data_size()), 0u);
}

// A head far beyond the tail (corrupt or hostile ring page) must not make the
// reader walk the ring forever, nor read a record bigger than what is there.
TEST(HostilePerfRing, HeadBeyondOneRingTerminates) {
  Ring r(flush_sample(2, 2), std::uint64_t{1} << 40);
  const auto d = sys::decode_sampler_ring(r.mem.data(), sizeof(perf_event_mmap_page), r.data_size());
  EXPECT_LE(d.flushes.size(), 2u);
}

TEST(HostilePerfRing, FieldOffsetsThatOverflowReadNothing) {
  std::uint8_t raw[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  sys::Field f{0x7ffffffc, 8, false, false, false};  // offset + size overflows int
  EXPECT_EQ(sys::read_field(raw, sizeof raw, f), 0);
  sys::Field d{0x7ffffffe, 4, false, true, true};
  std::array<std::uint64_t, sys::kMaxCpumaskWords> words{};
  EXPECT_EQ(sys::read_dynamic_words(raw, sizeof raw, d, words), 0u);
  sys::Field ok{8, 4, false, false, false};
  EXPECT_EQ(sys::read_field(raw, sizeof raw, ok), 0x0c0b0a09);
}

// ipi_send_cpumask on a 72-CPU kernel: __data_loc u32 (len 16 << 16 | offset
// 32) at offset 8, the mask two longs long. Every word is read, a length that
// runs past the record is cut at its end, a mask longer than `out` at `out`.
TEST(HostilePerfRing, DynamicCpumaskBeyondCpu63) {
  std::uint8_t raw[48] = {};
  const std::uint32_t loc = (16u << 16) | 32u;
  std::memcpy(raw + 8, &loc, 4);
  const std::uint64_t w0 = 1ULL << 3, w1 = (1ULL << 1) | (1ULL << 6);  // CPUs 3, 65, 70
  std::memcpy(raw + 32, &w0, 8);
  std::memcpy(raw + 40, &w1, 8);
  const sys::Field f{8, 4, false, true, false};
  std::array<std::uint64_t, sys::kMaxCpumaskWords> words{};
  ASSERT_EQ(sys::read_dynamic_words(raw, sizeof raw, f, words), 2u);
  EXPECT_EQ(sd::CpuMask({words[0], words[1]}), sd::CpuMask::of({3, 65, 70}));
  // A length beyond the record: only the bytes that are there.
  const std::uint32_t long_loc = (64u << 16) | 32u;
  std::memcpy(raw + 8, &long_loc, 4);
  ASSERT_EQ(sys::read_dynamic_words(raw, sizeof raw, f, words), 2u);
  // Room for one word only: CPUs 0-63.
  std::array<std::uint64_t, 1> one{};
  EXPECT_EQ(sys::read_dynamic_words(raw, sizeof raw, f, one), 1u);
  EXPECT_EQ(one[0], w0);
  // __rel_loc: the offset counts from the end of the field (8 + 4 = 12).
  const std::uint32_t rel = (16u << 16) | 20u;
  std::memcpy(raw + 8, &rel, 4);
  const sys::Field r{8, 4, false, true, true};
  ASSERT_EQ(sys::read_dynamic_words(raw, sizeof raw, r, words), 2u);
  EXPECT_EQ(words[1], w1);
}

TEST(HostileHttp, ParsesAndRoutes) {
  sd::HttpRequest req;
  EXPECT_EQ(sd::parse_http_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 8192, &req), sd::HttpParse::kComplete);
  EXPECT_EQ(req.target, "/metrics");
  const auto metrics = [] { return std::string("m 1\n"); };
  EXPECT_EQ(sd::route_metrics_request(sd::HttpParse::kComplete, req, metrics, "text/plain").status, 200);
  EXPECT_EQ(sd::parse_http_request("GET /metrics HTTP/1.1\r\nHost", 8192, &req), sd::HttpParse::kIncomplete);
  EXPECT_EQ(sd::parse_http_request(std::string(9000, 'a'), 8192, &req), sd::HttpParse::kTooLarge);
  EXPECT_EQ(sd::parse_http_request("GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a'), 8192, &req),
            sd::HttpParse::kTooLarge);
  EXPECT_EQ(sd::parse_http_request("GET  /metrics HTTP/1.1\r\n\r\n", 8192, &req), sd::HttpParse::kBad);
  EXPECT_EQ(sd::parse_http_request("GET /metrics HTTP/2\r\n\r\n", 8192, &req), sd::HttpParse::kBad);
  EXPECT_EQ(sd::parse_http_request("GET /a\x1b[2J HTTP/1.1\r\n\r\n", 8192, &req), sd::HttpParse::kBad);
  sd::HttpRequest other{"GET", "/admin", "HTTP/1.1"};
  EXPECT_EQ(sd::route_metrics_request(sd::HttpParse::kComplete, other, metrics, "text/plain").status, 404);
  sd::HttpRequest post{"POST", "/metrics", "HTTP/1.1"};
  EXPECT_EQ(sd::route_metrics_request(sd::HttpParse::kComplete, post, metrics, "text/plain").status, 405);
  sd::HttpRequest root{"GET", "/", "HTTP/1.1"};
  const auto page = sd::route_metrics_request(sd::HttpParse::kComplete, root, metrics, "text/plain");
  EXPECT_NE(page.body.find("href=\"/metrics\""), std::string::npos);
  const auto throwing = []() -> std::string { throw std::runtime_error("boom"); };
  EXPECT_EQ(sd::route_metrics_request(sd::HttpParse::kComplete, req, throwing, "text/plain").status, 500);
}

// A number nlohmann cannot hold threw json::out_of_range past the
// parse_error handler: `report DIR` died by std::terminate (found by
// fuzz_result_json).
TEST(HostileResultJson, OverflowingNumberIsAReadError) {
  EXPECT_THROW((void)shootdown::sink::result_from_json("6e1226"), shootdown::sink::JsonReadError);
  EXPECT_THROW((void)shootdown::sink::result_from_json("{\"tool\": \"shootdown\", \"schema_version\": 1e999}"),
               shootdown::sink::JsonReadError);
}

// libtraceevent dereferenced NULL on a field whose array size is not ASCII
// (fuzz_tracefs_format); such a format never reaches it now.
TEST(HostileTracefs, NonAsciiFormatIsRefusedBeforeLibtraceevent) {
  const std::string good =
      "name: tlb_flush\nID: 188\nformat:\n\tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n\n"
      "print fmt: \"reason:%d\", REC->reason\n";
  EXPECT_TRUE(sys::plausible_event_format(good));
  std::string bad = good;
  bad.replace(bad.find("int reason"), 3, "char reason[\xe9\xe9]");
  EXPECT_FALSE(sys::plausible_event_format(bad));
  EXPECT_FALSE(sys::plausible_event_format(""));
  EXPECT_FALSE(sys::plausible_event_format("ID: 1\n"));
  // fuzz_tracefs_format's libtraceevent SIGFPE: a mangled field line.
  std::string mangled = good;
  const auto at = mangled.find("offset:");
  ASSERT_NE(at, std::string::npos);
  mangled.replace(at, 8, "offset:2t");
  EXPECT_FALSE(sys::plausible_event_format(mangled));
  // libtraceevent never sees a print fmt (its parser divided by zero on "RE%C->callsite").
  const std::string fields = sys::fields_only_format(good);
  EXPECT_EQ(fields.substr(fields.size() - 14), "print fmt: \"\"\n");
  EXPECT_NE(fields.find("\tfield:int reason;"), std::string::npos);
  // Every real format file of this machine's tracefs we load passes.
  for (const char* ev :
       {"tlb/tlb_flush", "irq_vectors/call_function_entry", "sched/sched_switch", "ipi/ipi_send_cpumask"}) {
    for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
      std::ifstream f(std::string(root) + ev + "/format");
      if (!f) continue;
      std::stringstream ss;
      ss << f.rdbuf();
      EXPECT_TRUE(sys::plausible_event_format(ss.str())) << ev;
      break;
    }
  }
}
