// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HTTP/1.x request handling of `monitor --listen`, pure: parse what a
// client sent so far, decide the reply. The socket side (bounded buffers,
// deadlines, connection count) is sys/metrics_server.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace shootdown {

struct HttpRequest {
  std::string method;   // "GET"
  std::string target;   // "/metrics"
  std::string version;  // "HTTP/1.1"
};

enum class HttpParse {
  kIncomplete,  // no end of headers yet, within the size bound
  kComplete,    // request line valid, headers ended (a body, if any, is ignored)
  kBad,         // not HTTP/1.x: reply 400 and close
  kTooLarge,    // headers did not end within max_bytes: reply 431 and close
};

HttpParse parse_http_request(std::string_view received, std::size_t max_bytes, HttpRequest* out);

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Only GET/HEAD of "/metrics" (the exposition from metrics()) and "/" (a page
// linking to it) are served; everything else is 404/405 (or 400/431 from the
// parse). metrics() may throw: 500 with its message.
HttpReply route_metrics_request(HttpParse parse, const HttpRequest& req, const std::function<std::string()>& metrics,
                                const std::string& metrics_content_type);

// Status line, Content-Type, Content-Length, Connection: close, body (not for HEAD).
std::string format_http_reply(const HttpReply& reply, bool head);

}  // namespace shootdown
