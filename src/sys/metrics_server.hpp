// SPDX-License-Identifier: Apache-2.0
#pragma once
// The socket side of `monitor --listen`: one thread, poll(2), every client
// bounded. Requests are parsed and routed by core/http_request.
//   - at most max_clients connections at once; one more is answered 503 and closed
//   - a request may be at most max_request_bytes (431 beyond)
//   - each connection has request_timeout_ms from accept to the last byte of
//     the reply (slow-loris clients are answered 408 and closed, slow readers cut)
//   - one request per connection (Connection: close)
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/expected.hpp"

namespace shootdown::sys {

struct MetricsServerLimits {
  int max_clients = 16;
  std::size_t max_request_bytes = 8192;
  std::int64_t request_timeout_ms = 5000;
};

class MetricsServer {
 public:
  using Metrics = std::function<std::string()>;
  // Binds host:port (port 0: any free port); an error on failure.
  static Expected<std::unique_ptr<MetricsServer>> bind(const std::string& host, int port, Metrics metrics,
                                                       std::string content_type, const MetricsServerLimits& limits);
  ~MetricsServer();  // stops and joins
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  void start();  // serving thread
  void stop();   // idempotent

 private:
  MetricsServer() = default;
  void serve();

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop()
  int port_ = 0;
  Metrics metrics_;
  std::string content_type_;
  MetricsServerLimits limits_;
  std::thread thread_;
};

}  // namespace shootdown::sys
