// SPDX-License-Identifier: Apache-2.0
// InfluxDB line protocol (v1 /write and UDP listener), pure: points in,
// bytes out. Shared by `monitor --influx` and `run --influx`; the transport
// is src/sys/net.hpp.
//
//   <measurement>[,<tag>=<value>...] <field>=<value>[,...] [<unix ns>]\n
//
// Rules applied (docs.influxdata.com, "InfluxDB line protocol reference"):
// measurement escapes ',' and ' '; tag keys, tag values and field keys escape
// ',', '=' and ' '; string field values are double-quoted with '"' and '\'
// escaped; integers carry the `i` suffix; floats that are NaN/Inf are not
// representable and are dropped; empty tag values are omitted (not allowed);
// '\n' and '\r' inside names/values become spaces (not supported). Tags are
// sorted by key (the server's preferred order). Lines end with "\n" only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/expected.hpp"

namespace shootdown::influx {

using FieldValue = std::variant<double, std::int64_t, bool, std::string>;

struct Point {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;
  std::vector<std::pair<std::string, FieldValue>> fields;
  std::int64_t timestamp_ns = 0;  // 0 = let the server stamp it

  Point& tag(std::string key, std::string value);
  Point& field(std::string key, FieldValue value);
  Point& integer(std::string key, std::int64_t value) { return field(std::move(key), FieldValue(value)); }
};

std::string escape_measurement(std::string_view s);
std::string escape_key(std::string_view s);           // tag keys, tag values, field keys
std::string escape_string_field(std::string_view s);  // inside the double quotes

// One line with the trailing "\n", or why the point has none (no
// measurement, no representable field).
Expected<std::string> encode_line(const Point& p);
std::string encode_lines(const std::vector<Point>& points);

// Splits lines into payloads of at most max_bytes each (whole lines only),
// for UDP datagrams. A single line longer than max_bytes cannot be sent over
// UDP: it is left out and counted in *oversized.
inline constexpr std::size_t kUdpMaxPayload = 1400;  // < 1500 MTU minus IP/UDP headers
std::vector<std::string> split_datagrams(const std::string& lines, std::size_t max_bytes = kUdpMaxPayload,
                                         std::size_t* oversized = nullptr);

// --influx URL forms:
//   http://HOST:PORT/write?db=NAME[&rp=..&precision=ns]  (HTTP, InfluxDB 1.x API)
//   udp://HOST:PORT                                      (UDP listener; database set server-side)
struct Url {
  enum class Scheme { kHttp, kUdp } scheme = Scheme::kHttp;
  std::string host;
  int port = 0;
  std::string target;  // HTTP path + query, with precision=ns added when missing
  std::string db;      // from ?db=
  std::string text;    // as given
};
Expected<Url> parse_url(std::string_view text);

}  // namespace shootdown::influx
