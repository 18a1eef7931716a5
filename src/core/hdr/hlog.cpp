// SPDX-License-Identifier: Apache-2.0
#include "core/hdr/hlog.hpp"

#include <charconv>
#include <cmath>

#include "core/hdr/java_format.hpp"

namespace shootdown::hdr {

namespace {

bool valid_tag(std::string_view tag) {
  // Java's writer rejects tags its own reader could not split back out.
  return tag.find_first_of(", \r\n") == std::string_view::npos;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  if (s.empty()) return std::nullopt;
  const char* b = s.data();
  if (*b == '+') ++b;
  const auto res = std::from_chars(b, s.data() + s.size(), v);
  if (res.ec != std::errc{} || res.ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "#[Key: <number>..." -> number (the first token after the key).
std::optional<double> header_number(std::string_view line, std::string_view key) {
  if (line.substr(0, key.size()) != key) return std::nullopt;
  line.remove_prefix(key.size());
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  const std::size_t end = line.find_first_of(" ,]");
  return parse_double(line.substr(0, end));
}

}  // namespace

Expected<std::string> format_interval_line(std::string_view tag, double start_sec, double length_sec,
                                           const Histogram& histogram, double max_value_divisor) {
  if (!valid_tag(tag))
    return Error{"hlog: tag \"" + std::string(tag) + "\" must not contain commas, spaces or line breaks"};
  std::string line;
  if (!tag.empty()) {
    line += "Tag=";
    line += tag;
    line += ',';
  }
  line += java_fixed(start_sec, 3) + ',' + java_fixed(length_sec, 3) + ',' +
          java_fixed(static_cast<double>(histogram.max()) / max_value_divisor, 3) + ',' +
          encode_compressed_base64(histogram);
  return line;
}

HlogWriter::HlogWriter(const LogHeader& header) : max_value_divisor_(header.max_value_divisor) {
  for (const std::string& c : header.comments) text_ += "#" + c + "\n";
  text_ += "#[Histogram log format version " + std::string(kLogFormatVersion) + "]\n";
  if (header.start_time_msec)
    text_ += "#[StartTime: " + java_fixed(static_cast<double>(*header.start_time_msec) / 1000.0, 3) +
             " (seconds since epoch), " + java_date_utc(*header.start_time_msec) + "]\n";
  if (header.base_time_msec)
    text_ += "#[BaseTime: " + java_fixed(static_cast<double>(*header.base_time_msec) / 1000.0, 3) +
             " (seconds since epoch)]\n";
  if (max_value_divisor_ != 1.0) text_ += "#[MaxValueDivisor: " + java_fixed(max_value_divisor_, 3) + "]\n";
  text_ += kLogLegend;
  text_ += '\n';
}

Status HlogWriter::add(std::string_view tag, double start_sec, double length_sec, const Histogram& histogram) {
  auto line = format_interval_line(tag, start_sec, length_sec, histogram, max_value_divisor_);
  if (!line) return Error{line.error()};
  text_ += line.value();
  text_ += '\n';
  return Ok{};
}

Expected<ParsedLog> parse_log(std::string_view text, const ReadLimits& limits) {
  ParsedLog log;
  std::int64_t total_counts = 0;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = "hlog line " + std::to_string(line_no) + ": ";
    if (line.empty()) continue;
    if (line.front() == '#') {
      if (line.starts_with("#[StartTime:")) {
        const auto v = header_number(line, "#[StartTime:");
        if (!v) return Error{where + "StartTime has no number"};
        log.start_time_sec = v;
      } else if (line.starts_with("#[BaseTime:")) {
        const auto v = header_number(line, "#[BaseTime:");
        if (!v) return Error{where + "BaseTime has no number"};
        log.base_time_sec = v;
      } else if (line.starts_with("#[MaxValueDivisor:")) {
        const auto v = header_number(line, "#[MaxValueDivisor:");
        if (!v || !(*v > 0)) return Error{where + "MaxValueDivisor is not a positive number"};
        log.max_value_divisor = v;
      }
      continue;
    }
    if (line.starts_with("\"StartTimestamp\"")) continue;

    LogInterval entry{{}, 0, 0, 0, Histogram(1, 2, 0)};
    if (line.starts_with("Tag=")) {
      const std::size_t comma = line.find(',');
      if (comma == std::string_view::npos) return Error{where + "Tag= without the interval fields"};
      entry.tag = std::string(line.substr(4, comma - 4));
      line.remove_prefix(comma + 1);
    }
    std::string_view fields[4];
    for (int i = 0; i < 4; ++i) {
      const std::size_t comma = line.find(',');
      if (i < 3) {
        if (comma == std::string_view::npos)
          return Error{where + "expected 4 comma-separated fields (start, length, max, histogram), got " +
                       std::to_string(i + 1)};
        fields[i] = line.substr(0, comma);
        line.remove_prefix(comma + 1);
      } else {
        if (comma != std::string_view::npos) return Error{where + "more than 4 fields"};
        fields[i] = line;
      }
    }
    const auto start = parse_double(fields[0]);
    const auto length = parse_double(fields[1]);
    const auto max = parse_double(fields[2]);
    if (!start) return Error{where + "start timestamp is not a number"};
    if (!length) return Error{where + "interval length is not a number"};
    if (!max) return Error{where + "interval max is not a number"};
    if (log.intervals.size() >= limits.max_intervals)
      return Error{where + "more than " + std::to_string(limits.max_intervals) + " intervals"};
    DecodeLimits dl = limits.decode;
    dl.max_counts_length = std::min(dl.max_counts_length, limits.max_total_counts - total_counts);
    auto h = decode_base64(fields[3], dl);
    if (!h) return Error{where + h.error()};
    total_counts += h->counts_length();
    entry.start_sec = *start;
    entry.length_sec = *length;
    entry.max_field = *max;
    entry.histogram = std::move(h).value();
    log.intervals.push_back(std::move(entry));
  }
  return log;
}

}  // namespace shootdown::hdr
