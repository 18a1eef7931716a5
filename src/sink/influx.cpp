// SPDX-License-Identifier: Apache-2.0
#include "sink/influx.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/core.h>
#include <optional>

namespace shootdown::influx {

Point& Point::tag(std::string key, std::string value) {
  tags.emplace_back(std::move(key), std::move(value));
  return *this;
}

Point& Point::field(std::string key, FieldValue value) {
  fields.emplace_back(std::move(key), std::move(value));
  return *this;
}

namespace {
std::string escape(std::string_view s, std::string_view special) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\n' || c == '\r') c = ' ';
    if (special.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// nullopt when the value cannot be written (NaN/Inf).
std::optional<std::string> encode_value(const FieldValue& v) {
  if (const auto* d = std::get_if<double>(&v)) {
    if (!std::isfinite(*d)) return std::nullopt;
    // Shortest round-trip form; "1e+20" is accepted by the server's ParseFloat.
    std::string s = fmt::format("{}", *d);
    return s;
  }
  if (const auto* i = std::get_if<std::int64_t>(&v)) return fmt::format("{}i", *i);
  if (const auto* b = std::get_if<bool>(&v)) return std::string(*b ? "true" : "false");
  return "\"" + escape_string_field(std::get<std::string>(v)) + "\"";
}
}  // namespace

std::string escape_measurement(std::string_view s) {
  return escape(s, ", ");
}
std::string escape_key(std::string_view s) {
  return escape(s, ",= ");
}
std::string escape_string_field(std::string_view s) {
  return escape(s, "\"\\");
}

Expected<std::string> encode_line(const Point& p) {
  if (p.measurement.empty()) return Error{"point without measurement"};
  std::string fields;
  for (const auto& [k, v] : p.fields) {
    if (k.empty()) continue;
    auto enc = encode_value(v);
    if (!enc) continue;
    if (!fields.empty()) fields += ',';
    fields += escape_key(k) + "=" + *enc;
  }
  if (fields.empty()) return Error{"point " + p.measurement + " has no representable field"};
  auto tags = p.tags;
  std::stable_sort(tags.begin(), tags.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string line = escape_measurement(p.measurement);
  for (const auto& [k, v] : tags) {
    if (k.empty() || v.empty()) continue;
    line += "," + escape_key(k) + "=" + escape_key(v);
  }
  line += " " + fields;
  if (p.timestamp_ns > 0) line += " " + std::to_string(p.timestamp_ns);
  line += '\n';
  return line;
}

std::string encode_lines(const std::vector<Point>& points) {
  std::string out;
  for (const auto& p : points)
    if (auto line = encode_line(p)) out += *line;
  return out;
}

std::vector<std::string> split_datagrams(const std::string& lines, std::size_t max_bytes, std::size_t* oversized) {
  std::vector<std::string> out;
  std::string cur;
  std::size_t skipped = 0;
  std::size_t pos = 0;
  while (pos < lines.size()) {
    auto nl = lines.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? lines.size() : nl + 1;
    std::string_view line(lines.data() + pos, end - pos);
    pos = end;
    if (line.size() > max_bytes) {
      ++skipped;
      continue;
    }
    if (cur.size() + line.size() > max_bytes) {
      out.push_back(std::move(cur));
      cur.clear();
    }
    cur += line;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  if (oversized) *oversized = skipped;
  return out;
}

Expected<Url> parse_url(std::string_view text) {
  Url u;
  u.text = std::string(text);
  std::string_view rest;
  if (text.rfind("http://", 0) == 0) {
    u.scheme = Url::Scheme::kHttp;
    rest = text.substr(7);
  } else if (text.rfind("udp://", 0) == 0) {
    u.scheme = Url::Scheme::kUdp;
    rest = text.substr(6);
  } else if (text.rfind("https://", 0) == 0) {
    return Error{"https is not supported (use http:// on a trusted network or a local relay)"};
  } else {
    return Error{"expected http://HOST:PORT/write?db=NAME or udp://HOST:PORT"};
  }
  const auto slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  std::string_view target = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  std::string_view host, port;
  if (!hostport.empty() && hostport[0] == '[') {  // [::1]:8086
    const auto close = hostport.find(']');
    if (close == std::string_view::npos) return Error{"unterminated IPv6 address"};
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port = hostport.substr(close + 2);
  } else {
    const auto colon = hostport.rfind(':');
    if (colon == std::string_view::npos) return Error{"missing :PORT"};
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.empty()) return Error{"missing HOST"};
  int p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535)
    return Error{"PORT must be 1..65535"};
  u.host = std::string(host);
  u.port = p;
  if (u.scheme == Url::Scheme::kUdp) {
    if (!target.empty() && target != "/")
      return Error{"udp:// takes no path (the database is set in the server's [[udp]] section)"};
    return u;
  }
  const auto q = target.find('?');
  const std::string_view path = target.substr(0, q);
  if (path != "/write") return Error{"HTTP path must be /write (InfluxDB 1.x API)"};
  const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  bool precision = false;
  std::size_t i = 0;
  while (i <= query.size() && !query.empty()) {
    auto amp = query.find('&', i);
    std::string_view kv = query.substr(i, amp == std::string_view::npos ? std::string_view::npos : amp - i);
    if (kv.rfind("db=", 0) == 0) u.db = std::string(kv.substr(3));
    if (kv.rfind("precision=", 0) == 0) {
      if (kv != "precision=ns") return Error{"precision must be ns (timestamps are ns)"};
      precision = true;
    }
    if (amp == std::string_view::npos) break;
    i = amp + 1;
  }
  if (u.db.empty()) return Error{"missing ?db=NAME"};
  u.target = std::string(target);
  if (!precision) u.target += (query.empty() ? "?" : "&") + std::string("precision=ns");
  return u;
}

}  // namespace shootdown::influx
