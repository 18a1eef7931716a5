// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the HTTP request handling of `monitor --listen`. The
// input arrives in pieces (as over a socket); whatever it is, the parser
// never reports a complete request longer than the bound, and the reply is
// one of the statuses the server documents.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/http_request.hpp"

using shootdown::HttpParse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t max_bytes = 64 + data[0] * 8u;  // 64..2104
  const std::string all(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string got;
  HttpParse p = HttpParse::kIncomplete;
  shootdown::HttpRequest req;
  for (std::size_t at = 0; at < all.size() && p == HttpParse::kIncomplete;) {
    const std::size_t n = 1 + (static_cast<unsigned char>(all[at]) % 61);
    got += all.substr(at, n);
    at += n;
    p = shootdown::parse_http_request(got, max_bytes, &req);
  }
  if (p == HttpParse::kIncomplete && got.size() >= max_bytes) std::abort();  // the bound was not enforced
  const auto reply = shootdown::route_metrics_request(
      p, req, [] { return std::string("m 1\n"); }, "text/plain");
  switch (reply.status) {
    case 200:
    case 400:
    case 404:
    case 405:
    case 408:
    case 431:
      break;
    default:
      std::abort();
  }
  if (reply.status == 200 && req.target.substr(0, req.target.find('?')) != "/metrics" &&
      req.target.substr(0, req.target.find('?')) != "/")
    std::abort();
  const std::string text = shootdown::format_http_reply(reply, req.method == "HEAD");
  if (text.rfind("HTTP/1.1 ", 0) != 0) std::abort();
  return 0;
}
