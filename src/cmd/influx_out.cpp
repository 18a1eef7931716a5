// SPDX-License-Identifier: Apache-2.0
#include "cmd/influx_out.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <fmt/format.h>

#include "cmd/commands.hpp"
#include "sink/influx_result.hpp"
#include "sys/net.hpp"

namespace shootdown::cmd {

namespace {
constexpr std::size_t kUdpBurst = 16;
constexpr int kUdpBurstPauseMs = 2;
}  // namespace

influx::Url parse_influx_option(const std::string& text) {
  auto u = influx::parse_url(text);
  if (!u)
    throw UsageError(fmt::format("--influx '{}': {} (accepted: http://HOST:PORT/write?db=NAME or udp://HOST:PORT)",
                                 text, u.error()));
  return *u;
}

InfluxReport send_to_influx(const Result& r, const Analysis& a, const influx::Url& url) {
  InfluxReport rep;
  const auto points = sink::result_points(r, a);
  std::string lines;
  for (const auto& p : points) {
    const auto l = influx::encode_line(p);
    if (!l) continue;
    lines += *l;
    ++rep.points;
  }
  if (url.scheme == influx::Url::Scheme::kUdp) {
    std::size_t oversized = 0;
    const auto datagrams = influx::split_datagrams(lines, influx::kUdpMaxPayload, &oversized);
    // UDP has no flow control: a burst of hundreds of datagrams overflows a
    // listener's default socket buffer (net.core.rmem_default, ~208 KiB) and
    // the kernel drops the rest silently. Send in small groups with a pause.
    for (std::size_t i = 0; i < datagrams.size(); i += kUdpBurst) {
      const std::size_t j = std::min(datagrams.size(), i + kUdpBurst);
      if (const Status sent =
              sys::udp_send(url.host, url.port,
                            std::vector<std::string>(datagrams.begin() + static_cast<std::ptrdiff_t>(i),
                                                     datagrams.begin() + static_cast<std::ptrdiff_t>(j)));
          !sent) {
        rep.error = sent.error();
        return rep;
      }
      rep.requests += j - i;
      if (j < datagrams.size()) std::this_thread::sleep_for(std::chrono::milliseconds(kUdpBurstPauseMs));
    }
    if (oversized) {
      rep.error = fmt::format("{} line(s) longer than {} bytes cannot go over UDP and were left out", oversized,
                              influx::kUdpMaxPayload);
      return rep;
    }
    rep.ok = true;
    return rep;
  }
  const std::string target =
      fmt::format("http://{}:{}{}", url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host, url.port,
                  url.target);
  // Whole lines per batch: the split_datagrams helper does exactly that.
  for (const auto& batch : influx::split_datagrams(lines, kHttpBatchBytes)) {
    const sys::HttpResult res = sys::http_post(target, batch);
    ++rep.requests;
    if (!res.ok) {
      rep.error = res.error;
      return rep;
    }
  }
  rep.ok = true;
  return rep;
}

void send_to_influx_or_warn(const Result& r, const Analysis& a, const influx::Url& url, const std::string& saved_dir,
                            bool quiet) {
  InfluxReport rep;
  try {
    rep = send_to_influx(r, a, url);
  } catch (const std::exception& e) {
    rep.ok = false;
    rep.error = e.what();
  }
  if (rep.ok) {
    if (!quiet)
      std::fprintf(stderr, "shootdown: influx: %zu points sent to %s (%zu %s)\n", rep.points, url.text.c_str(),
                   rep.requests, url.scheme == influx::Url::Scheme::kUdp ? "datagrams" : "requests");
    return;
  }
  const std::string where =
      saved_dir.empty()
          ? "it was printed above (keep it with --out DIR, send it later with 'shootdown report DIR --influx URL')"
          : fmt::format("it is in {}/result.json (send it later: shootdown report {} --influx {})", saved_dir,
                        saved_dir, url.text);
  std::fprintf(stderr, "shootdown: warning: influx %s: %s; the result is not lost: %s\n", url.text.c_str(),
               rep.error.c_str(), where.c_str());
}

}  // namespace shootdown::cmd
