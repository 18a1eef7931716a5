// SPDX-License-Identifier: Apache-2.0
// Influx line protocol encoder, URL forms, UDP datagram splitting, the
// Prometheus exposition encoder, and http_post's retry rules against a local
// cpp-httplib server on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <httplib.h>
#include <thread>

#include "sink/influx.hpp"
#include "sink/prometheus.hpp"
#include "sys/net.hpp"

using namespace shootdown;

TEST(Influx, EscapesEveryElement) {
  EXPECT_EQ(influx::escape_measurement("a b,c=d"), "a\\ b\\,c=d");
  EXPECT_EQ(influx::escape_key("k e,y=v"), "k\\ e\\,y\\=v");
  EXPECT_EQ(influx::escape_string_field(R"(say "hi" \o/)"), R"(say \"hi\" \\o/)");
  influx::Point p;
  p.measurement = "my meas,x";
  p.tag("zone", "eu west").tag("host", "a=b,c").tag("empty", "");
  p.field("msg", std::string("line\nbreak \"q\"")).integer("n", -42).field("x", 1.5).field("up", true);
  p.timestamp_ns = 1700000000123456789;
  EXPECT_EQ(influx::encode_line(p).value(),
            "my\\ meas\\,x,host=a\\=b\\,c,zone=eu\\ west msg=\"line break \\\"q\\\"\",n=-42i,x=1.5,up=true "
            "1700000000123456789\n");
}

TEST(Influx, IntegerSuffixAndFloats) {
  influx::Point p;
  p.measurement = "m";
  p.integer("count", 0).integer("big", INT64_MAX).field("f", 2.0).field("g", 1e20).field("h", 0.000125);
  EXPECT_EQ(influx::encode_line(p).value(), "m count=0i,big=9223372036854775807i,f=2,g=1e+20,h=0.000125\n");
}

TEST(Influx, DropsUnrepresentable) {
  influx::Point p;
  p.measurement = "m";
  p.field("nan", std::numeric_limits<double>::quiet_NaN()).field("inf", std::numeric_limits<double>::infinity());
  const auto none = influx::encode_line(p);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("no representable field"), std::string::npos);
  p.integer("ok", 1);
  EXPECT_EQ(influx::encode_line(p).value(), "m ok=1i\n");
  influx::Point q;
  q.integer("x", 1);
  EXPECT_FALSE(influx::encode_line(q).ok());  // no measurement
}

TEST(Influx, NewlineOnlyLineEndings) {
  std::vector<influx::Point> pts(3);
  for (int i = 0; i < 3; ++i) {
    pts[i].measurement = "m";
    pts[i].integer("i", i);
    pts[i].timestamp_ns = 1000 + i;
  }
  const std::string s = influx::encode_lines(pts);
  EXPECT_EQ(s, "m i=0i 1000\nm i=1i 1001\nm i=2i 1002\n");
  EXPECT_EQ(s.find('\r'), std::string::npos);
}

TEST(Influx, SplitsDatagramsOnLineBoundaries) {
  std::string lines;
  for (int i = 0; i < 100; ++i)
    lines += "shootdown_monitor,cpu=" + std::to_string(i) +
             " tlb_total=123456789i,cal_total=987654321i 1700000000000000000\n";
  std::size_t oversized = 99;
  auto grams = influx::split_datagrams(lines, influx::kUdpMaxPayload, &oversized);
  EXPECT_EQ(oversized, 0u);
  ASSERT_GT(grams.size(), 1u);
  std::string joined;
  for (const auto& g : grams) {
    EXPECT_LE(g.size(), influx::kUdpMaxPayload);
    EXPECT_LT(g.size(), 1500u);
    EXPECT_EQ(g.back(), '\n');  // whole lines only
    joined += g;
  }
  EXPECT_EQ(joined, lines);
  // A line longer than a datagram is counted, not sent.
  auto grams2 = influx::split_datagrams("a x=1i\n" + std::string(50, 'b') + " x=1i\nc x=1i\n", 20, &oversized);
  EXPECT_EQ(oversized, 1u);
  ASSERT_EQ(grams2.size(), 1u);
  EXPECT_EQ(grams2[0], "a x=1i\nc x=1i\n");
  EXPECT_TRUE(influx::split_datagrams("", 100).empty());
}

TEST(Influx, UrlForms) {
  auto h = influx::parse_url("http://127.0.0.1:8086/write?db=shootdown");
  ASSERT_TRUE(h) << h.error();
  EXPECT_EQ(h->scheme, influx::Url::Scheme::kHttp);
  EXPECT_EQ(h->host, "127.0.0.1");
  EXPECT_EQ(h->port, 8086);
  EXPECT_EQ(h->db, "shootdown");
  EXPECT_EQ(h->target, "/write?db=shootdown&precision=ns");
  auto u = influx::parse_url("udp://localhost:8089");
  ASSERT_TRUE(u) << u.error();
  EXPECT_EQ(u->scheme, influx::Url::Scheme::kUdp);
  EXPECT_EQ(u->port, 8089);
  auto v6 = influx::parse_url("http://[::1]:8086/write?db=x&precision=ns");
  ASSERT_TRUE(v6) << v6.error();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->target, "/write?db=x&precision=ns");
  for (const char* bad :
       {"influx:8086", "http://h/write?db=x", "http://h:0/write?db=x", "http://h:70000/write?db=x",
        "http://h:8086/query?db=x", "http://h:8086/write", "udp://h:8089/db", "https://h:1/write?db=x",
        "http://h:8086/write?db=x&precision=s", "http://:8086/write?db=x", "udp://h:12ab"}) {
    const auto url = influx::parse_url(bad);
    ASSERT_FALSE(url.ok()) << bad;
    EXPECT_FALSE(url.error().empty()) << bad;
  }
}

TEST(Prometheus, Exposition) {
  prom::Family f{"shootdown_tlb_flush_total", "tlb:tlb_flush events\nby reason", "counter", {}};
  f.samples.push_back({{{"cpu", "0"}, {"reason", "remote \"shootdown\"\\"}}, 12});
  f.samples.push_back({{}, 3});
  prom::Family bad{"0bad", "x", "counter", {{{}, 1}}};
  EXPECT_EQ(prom::encode({f, bad}),
            "# HELP shootdown_tlb_flush_total tlb:tlb_flush events\\nby reason\n"
            "# TYPE shootdown_tlb_flush_total counter\n"
            "shootdown_tlb_flush_total{cpu=\"0\",reason=\"remote \\\"shootdown\\\"\\\\\"} 12\n"
            "shootdown_tlb_flush_total 3\n");
  EXPECT_TRUE(prom::valid_metric_name("a:b_c1"));
  EXPECT_FALSE(prom::valid_label_name("__reserved"));
}

namespace {
std::vector<std::int64_t> g_sleeps;
void record_sleep(std::int64_t ms) {
  g_sleeps.push_back(ms);
}

struct LocalServer {
  httplib::Server svr;
  int port = 0;
  std::thread th;
  LocalServer() {
    port = svr.bind_to_any_port("127.0.0.1");
    th = std::thread([this] { svr.listen_after_bind(); });
    for (int i = 0; i < 200 && !svr.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~LocalServer() {
    svr.stop();
    th.join();
  }
};
}  // namespace

TEST(HttpPost, RetriesOn5xxThenSucceeds) {
  LocalServer s;
  std::atomic<int> calls{0};
  std::string got;
  s.svr.Post("/write", [&](const httplib::Request& req, httplib::Response& res) {
    if (++calls < 3) {
      res.status = 503;
      res.set_content("busy", "text/plain");
      return;
    }
    got = req.body;
    res.status = 204;
  });
  g_sleeps.clear();
  auto r = sys::http_post("http://127.0.0.1:" + std::to_string(s.port) + "/write?db=x", "m v=1i\n", "text/plain", {},
                          record_sleep);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(got, "m v=1i\n");
  EXPECT_EQ(g_sleeps, (std::vector<std::int64_t>{100, 200}));
}

TEST(HttpPost, FourXxIsFinalAndReturnsBody) {
  LocalServer s;
  s.svr.Post("/write", [](const httplib::Request&, httplib::Response& res) {
    res.status = 400;
    res.set_content("{\"error\":\"unable to parse 'x': missing fields\"}", "application/json");
  });
  g_sleeps.clear();
  auto r = sys::http_post("http://127.0.0.1:" + std::to_string(s.port) + "/write?db=x", "x\n", "text/plain", {},
                          record_sleep);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_TRUE(g_sleeps.empty());
  EXPECT_NE(r.error.find("missing fields"), std::string::npos) << r.error;
}

TEST(HttpPost, ConnectionRefusedIsRetriedAndBounded) {
  int port = 0;
  {
    LocalServer s;  // take a free port, then close it
    port = s.port;
  }
  g_sleeps.clear();
  sys::RetryPolicy pol;
  pol.max_attempts = 3;
  pol.first_backoff_ms = 10;
  auto r = sys::http_post("http://127.0.0.1:" + std::to_string(port) + "/write?db=x", "m v=1i\n", "text/plain", pol,
                          record_sleep);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(g_sleeps, (std::vector<std::int64_t>{10, 20}));
  EXPECT_NE(r.error.find("after 3 attempts"), std::string::npos) << r.error;
}

TEST(UdpSend, SendsDatagrams) {
  const auto sent = sys::udp_send("127.0.0.1", 9, {"m v=1i\n"});
  EXPECT_TRUE(sent) << sent.error();  // discard port: sent, not received
  const auto unresolved = sys::udp_send("no-such-host.invalid", 9, {"x"});
  EXPECT_FALSE(unresolved);
  EXPECT_NE(unresolved.error().find("resolve"), std::string::npos);
}
