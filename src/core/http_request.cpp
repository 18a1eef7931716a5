// SPDX-License-Identifier: Apache-2.0
#include "core/http_request.hpp"

#include <fmt/core.h>

namespace shootdown {

namespace {

bool is_token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool printable_no_space(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
  }
  return !s.empty();
}

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

}  // namespace

HttpParse parse_http_request(std::string_view received, std::size_t max_bytes, HttpRequest* out) {
  // Leading empty lines are tolerated (RFC 9112 2.2).
  std::size_t start = 0;
  while (start < received.size() && (received[start] == '\r' || received[start] == '\n')) ++start;
  const std::string_view rest = received.substr(start);
  std::size_t end = rest.find("\r\n\r\n");
  std::size_t end_len = 4;
  if (end == std::string_view::npos) {
    end = rest.find("\n\n");  // bare LF line ends (curl never sends them; netcat users do)
    end_len = 2;
  }
  // The request line can be judged before the headers end.
  const std::size_t eol = rest.find('\n');
  if (eol != std::string_view::npos || end != std::string_view::npos) {
    std::string_view line = rest.substr(0, eol);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto sp1 = line.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return HttpParse::kBad;
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    if (method.empty() || method.size() > 16) return HttpParse::kBad;
    for (char c : method)
      if (!is_token_char(c)) return HttpParse::kBad;
    if (!printable_no_space(target) || (target[0] != '/' && target != "*")) return HttpParse::kBad;
    if (version != "HTTP/1.1" && version != "HTTP/1.0") return HttpParse::kBad;
    if (end == std::string_view::npos || start + end + end_len > max_bytes) {
      if (start + rest.size() >= max_bytes) return HttpParse::kTooLarge;
      return HttpParse::kIncomplete;
    }
    if (out) {
      out->method = std::string(method);
      out->target = std::string(target);
      out->version = std::string(version);
    }
    return HttpParse::kComplete;
  }
  return received.size() >= max_bytes ? HttpParse::kTooLarge : HttpParse::kIncomplete;
}

HttpReply route_metrics_request(HttpParse parse, const HttpRequest& req, const std::function<std::string()>& metrics,
                                const std::string& metrics_content_type) {
  HttpReply r;
  if (parse == HttpParse::kBad) {
    r.status = 400;
    r.body = "bad request\n";
    return r;
  }
  if (parse == HttpParse::kTooLarge) {
    r.status = 431;
    r.body = "request too large\n";
    return r;
  }
  if (parse != HttpParse::kComplete) {
    r.status = 408;
    r.body = "request timeout\n";
    return r;
  }
  // The query string is ignored (Prometheus may add none, a browser may).
  const std::string path = req.target.substr(0, req.target.find('?'));
  if (path != "/metrics" && path != "/") {
    r.status = 404;
    r.body = "not found: only /metrics is served\n";
    return r;
  }
  if (req.method != "GET" && req.method != "HEAD") {
    r.status = 405;
    r.body = "method not allowed: GET or HEAD\n";
    return r;
  }
  if (path == "/") {
    r.content_type = "text/html; charset=utf-8";
    r.body =
        "<!doctype html><html><head><title>shootdown monitor</title></head>"
        "<body><a href=\"/metrics\">/metrics</a></body></html>\n";
    return r;
  }
  try {
    r.body = metrics();
    r.content_type = metrics_content_type;
  } catch (const std::exception& e) {
    r.status = 500;
    r.body = std::string(e.what()) + "\n";
  }
  return r;
}

std::string format_http_reply(const HttpReply& reply, bool head) {
  std::string out = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n", reply.status,
      reason(reply.status), reply.content_type, reply.body.size(), reply.status == 405 ? "Allow: GET, HEAD\r\n" : "");
  if (!head) out += reply.body;
  return out;
}

}  // namespace shootdown
