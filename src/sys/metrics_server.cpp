// SPDX-License-Identifier: Apache-2.0
#include "sys/metrics_server.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "core/http_request.hpp"
#include "sys/tsc.hpp"

namespace shootdown::sys {

namespace {

struct Client {
  int fd = -1;
  std::int64_t deadline_ns = 0;
  std::string in;
  std::string out;
  std::size_t sent = 0;
  bool replying = false;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Expected<std::unique_ptr<MetricsServer>> MetricsServer::bind(const std::string& host, int port, Metrics metrics,
                                                             std::string content_type,
                                                             const MetricsServerLimits& limits) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res) != 0 || !res)
    return Error{"cannot resolve '" + host + "'"};
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 64) == 0) break;
    close_fd(fd);
  }
  ::freeaddrinfo(res);
  if (fd < 0) return Error{"in use or not a local address"};
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  s->port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  s->listen_fd_ = fd;
  s->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd_ < 0) return Error{"eventfd failed"};
  s->metrics_ = std::move(metrics);
  s->content_type_ = std::move(content_type);
  s->limits_ = limits;
  return s;
}

MetricsServer::~MetricsServer() {
  stop();
  close_fd(listen_fd_);
  close_fd(wake_fd_);
}

void MetricsServer::start() {
  if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
}

void MetricsServer::stop() {
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

void MetricsServer::serve() {
  std::vector<Client> clients;
  // Out of file descriptors (EMFILE): the listening socket stays readable, so
  // stop polling it for a moment instead of spinning.
  std::int64_t accept_pause_until = 0;
  const std::int64_t timeout_ns = limits_.request_timeout_ms * 1'000'000;
  auto reply = [&](Client& c, const HttpReply& r, bool head) {
    c.out = format_http_reply(r, head);
    c.sent = 0;
    c.replying = true;
    ::shutdown(c.fd, SHUT_RD);  // one request per connection: ignore anything else it sends
  };
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({wake_fd_, POLLIN, 0});
    std::int64_t now = mono_now_ns();
    fds.push_back({now < accept_pause_until ? -1 : listen_fd_, POLLIN, 0});
    std::int64_t next_deadline = now + timeout_ns;
    if (accept_pause_until > now) next_deadline = std::min(next_deadline, accept_pause_until);
    for (const Client& c : clients) {
      fds.push_back({c.fd, static_cast<short>(c.replying ? POLLOUT : POLLIN), 0});
      next_deadline = std::min(next_deadline, c.deadline_ns);
    }
    const int wait_ms = static_cast<int>(std::max<std::int64_t>(0, (next_deadline - now) / 1'000'000 + 1));
    const int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno != EINTR) break;
    if (fds[0].revents) break;  // stop()
    now = mono_now_ns();
    // Existing clients first (fds[2 + i] is clients[i]).
    for (std::size_t i = 0; i < clients.size(); ++i) {
      Client& c = clients[i];
      const short re = fds[2 + i].revents;
      if (c.fd < 0) continue;
      if (!c.replying && (re & (POLLIN | POLLHUP | POLLERR))) {
        char buf[4096];
        const std::size_t room = limits_.max_request_bytes + 1 - std::min(c.in.size(), limits_.max_request_bytes);
        const ssize_t got = ::recv(c.fd, buf, std::min(sizeof buf, room), 0);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
          close_fd(c.fd);  // the client went away
          continue;
        }
        if (got > 0) c.in.append(buf, static_cast<std::size_t>(got));
        HttpRequest req;
        const HttpParse p = parse_http_request(c.in, limits_.max_request_bytes, &req);
        if (p != HttpParse::kIncomplete)
          reply(c, route_metrics_request(p, req, metrics_, content_type_), req.method == "HEAD");
      } else if (c.replying && (re & (POLLOUT | POLLHUP | POLLERR))) {
        const ssize_t put = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (put < 0 && errno != EAGAIN && errno != EINTR) {
          close_fd(c.fd);
          continue;
        }
        if (put > 0) c.sent += static_cast<std::size_t>(put);
        if (c.sent == c.out.size()) close_fd(c.fd);
      }
      if (c.fd >= 0 && now >= c.deadline_ns) {
        if (!c.replying) {
          // Too slow to send a request: say so, once, without waiting for it to read.
          HttpReply r;
          r.status = 408;
          r.body = "request timeout\n";
          const std::string out = format_http_reply(r, false);
          [[maybe_unused]] const auto put = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        close_fd(c.fd);
      }
    }
    std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            accept_pause_until = now + 100'000'000;
          break;
        }
        if (static_cast<int>(clients.size()) >= limits_.max_clients) {
          HttpReply r;
          r.status = 503;
          r.body = "too many connections\n";
          const std::string out = format_http_reply(r, false);
          [[maybe_unused]] const auto put = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          ::close(fd);
          continue;
        }
        Client c;
        c.fd = fd;
        c.deadline_ns = now + timeout_ns;
        clients.push_back(std::move(c));
      }
    }
  }
  for (Client& c : clients) close_fd(c.fd);
}

}  // namespace shootdown::sys
