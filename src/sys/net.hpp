// SPDX-License-Identifier: Apache-2.0
// Network transports for sinks (InfluxDB): HTTP POST with bounded retries and
// UDP datagrams. Mechanism only: callers decide what a failure means (a
// warning, never lost data: results are on disk first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/expected.hpp"

namespace shootdown::sys {

struct RetryPolicy {
  int max_attempts = 4;                 // total tries, >= 1
  std::int64_t first_backoff_ms = 100;  // then doubled: 100, 200, 400 ms
  std::int64_t connect_timeout_ms = 2000;
  std::int64_t read_timeout_ms = 5000;
};

struct HttpResult {
  bool ok = false;    // 2xx
  int status = 0;     // HTTP status of the last attempt; 0 = no response
  std::string body;   // response body of the last attempt (4xx: the server's error message)
  std::string error;  // one line: "connection refused after 4 attempts", "HTTP 400: ..."
  int attempts = 0;
};

// POST body to url ("http://HOST:PORT/path?query"). Retries with exponential
// backoff on connection errors (refused, timeout) and 5xx; a 4xx is final
// (the request is wrong: retrying cannot help) and returns the body.
// `sleep_ms` is called between attempts (tests pass a recorder).
HttpResult http_post(const std::string& url, const std::string& body,
                     const std::string& content_type = "text/plain; charset=utf-8", const RetryPolicy& policy = {},
                     void (*sleep_ms)(std::int64_t) = nullptr);

// Sends each payload as one UDP datagram to host:port (IPv4/IPv6 via
// getaddrinfo). An error on resolution or send failure (UDP has no delivery
// confirmation: Ok means sent, not received).
Status udp_send(const std::string& host, int port, const std::vector<std::string>& datagrams);

}  // namespace shootdown::sys
