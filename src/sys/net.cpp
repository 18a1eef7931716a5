// SPDX-License-Identifier: Apache-2.0
#include "sys/net.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace shootdown::sys {

namespace {

void default_sleep(std::int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

struct SplitUrl {
  std::string origin;  // "http://host:port"
  std::string target;  // "/write?db=x"
};

Expected<SplitUrl> split_http_url(const std::string& url) {
  if (url.rfind("http://", 0) != 0) return Error{"only http:// URLs are supported: " + url};
  const auto slash = url.find('/', 7);
  SplitUrl out;
  out.origin = url.substr(0, slash);
  out.target = slash == std::string::npos ? "/" : url.substr(slash);
  if (out.origin.size() <= 7) return Error{"missing host in " + url};
  return out;
}

std::string one_line(std::string s, std::size_t max = 300) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

}  // namespace

HttpResult http_post(const std::string& url, const std::string& body, const std::string& content_type,
                     const RetryPolicy& policy, void (*sleep_ms)(std::int64_t)) {
  HttpResult r;
  const auto split = split_http_url(url);
  if (!split) {
    r.error = split.error();
    return r;
  }
  const SplitUrl& u = *split;
  if (!sleep_ms) sleep_ms = default_sleep;
  httplib::Client cli(u.origin);
  cli.set_connection_timeout(static_cast<time_t>(policy.connect_timeout_ms / 1000),
                             static_cast<time_t>((policy.connect_timeout_ms % 1000) * 1000));
  cli.set_read_timeout(static_cast<time_t>(policy.read_timeout_ms / 1000),
                       static_cast<time_t>((policy.read_timeout_ms % 1000) * 1000));
  cli.set_keep_alive(false);
  std::int64_t backoff = policy.first_backoff_ms;
  const int attempts = policy.max_attempts < 1 ? 1 : policy.max_attempts;
  for (int i = 1; i <= attempts; ++i) {
    r.attempts = i;
    auto res = cli.Post(u.target, body, content_type);
    if (res) {
      r.status = res->status;
      r.body = res->body;
      if (res->status >= 200 && res->status < 300) {
        r.ok = true;
        r.error.clear();
        return r;
      }
      r.error = "HTTP " + std::to_string(res->status) + (res->body.empty() ? "" : ": " + one_line(res->body));
      if (res->status < 500) return r;  // 4xx: final
    } else {
      r.status = 0;
      r.body.clear();
      const auto e = res.error();
      r.error = e == httplib::Error::Connection          ? "cannot connect (refused or unreachable)"
                : e == httplib::Error::ConnectionTimeout ? "connect timeout"
                : e == httplib::Error::Read              ? "no response (read failed or timed out)"
                                                         : httplib::to_string(e);
    }
    if (i < attempts) {
      sleep_ms(backoff);
      backoff *= 2;
    }
  }
  r.error += " after " + std::to_string(r.attempts) + " attempt" + (r.attempts == 1 ? "" : "s");
  return r;
}

Status udp_send(const std::string& host, int port, const std::vector<std::string>& datagrams) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return Error{"cannot resolve " + host + ": " + ::gai_strerror(rc)};
  const int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    Error failed{std::string("socket: ") + std::strerror(errno)};
    ::freeaddrinfo(res);
    return failed;
  }
  Status sent = Ok{};
  for (const auto& d : datagrams) {
    const ssize_t n = ::sendto(fd, d.data(), d.size(), 0, res->ai_addr, res->ai_addrlen);
    if (n < 0 || static_cast<std::size_t>(n) != d.size()) {
      sent = Error{std::string("sendto ") + host + ":" + service + ": " + std::strerror(errno)};
      break;
    }
  }
  ::close(fd);
  ::freeaddrinfo(res);
  return sent;
}

}  // namespace shootdown::sys
