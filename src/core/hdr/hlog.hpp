// SPDX-License-Identifier: Apache-2.0
// HdrHistogram interval log (.hlog), in the format of the Java
// HistogramLogWriter (log format version 1.3) and as its HistogramLogReader
// parses it. Pure: builds and parses text; the caller does the file I/O.
//
//   #<comment>                                  (optional, any number)
//   #[Histogram log format version 1.3]
//   #[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]
//   #[BaseTime: 1700000000.000 (seconds since epoch)]
//   #[MaxValueDivisor: 1000.000]                (only when the divisor != 1)
//   "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//   [Tag=NAME,]START,LENGTH,MAX,BASE64
//
// START and LENGTH are seconds with 3 decimals, START relative to BaseTime;
// MAX is the interval's max value divided by the max value divisor, 3
// decimals (informational: readers take the max from the histogram);
// BASE64 is the compressed V2 encoding (codec.hpp). The Java writer does not
// write a MaxValueDivisor line (it is a comment to every reader); we do, so a
// reader of the MAX column knows its unit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/hdr/codec.hpp"
#include "core/hdr/hgrm.hpp"
#include "core/hdr/histogram.hpp"

namespace shootdown::hdr {

inline constexpr std::string_view kLogFormatVersion = "1.3";
inline constexpr std::string_view kLogLegend =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

struct LogHeader {
  std::vector<std::string> comments;                        // each written as "#" + comment
  std::optional<std::int64_t> start_time_msec;              // since the epoch: #[StartTime: ...]
  std::optional<std::int64_t> base_time_msec;               // since the epoch: #[BaseTime: ...]
  double max_value_divisor = kDefaultOutputValueUnitRatio;  // ns -> us
};

// Builds a log in memory. Usage: HlogWriter w(header); w.add(...)...; w.text().
class HlogWriter {
 public:
  explicit HlogWriter(const LogHeader& header);

  // Appends one interval line. start_sec is relative to the base time (or
  // absolute when there is none). tag: empty for none; otherwise it must not
  // contain ',', ' ', '\r' or '\n' (error, nothing appended).
  Status add(std::string_view tag, double start_sec, double length_sec, const Histogram& histogram);

  const std::string& text() const noexcept { return text_; }
  std::string take() noexcept { return std::move(text_); }

 private:
  double max_value_divisor_;
  std::string text_;
};

// One interval line, without the newline (exposed for tests and sinks).
Expected<std::string> format_interval_line(std::string_view tag, double start_sec, double length_sec,
                                           const Histogram& histogram, double max_value_divisor);

struct LogInterval {
  std::string tag;       // empty: untagged
  double start_sec = 0;  // as written on the line
  double length_sec = 0;
  double max_field = 0;  // the informational MAX column
  Histogram histogram;
};

struct ParsedLog {
  std::optional<double> start_time_sec;
  std::optional<double> base_time_sec;
  std::optional<double> max_value_divisor;
  std::vector<LogInterval> intervals;
};

struct ReadLimits {
  DecodeLimits decode;  // per histogram
  std::size_t max_intervals = 1u << 20;
  std::int64_t max_total_counts = std::int64_t{1} << 25;  // sum of counts lengths over all intervals
};

// Parses a whole log. Comment lines other than StartTime/BaseTime/
// MaxValueDivisor, the legend and blank lines are skipped (CRLF accepted).
// Any other malformed line is an error "line N: ...".
Expected<ParsedLog> parse_log(std::string_view text, const ReadLimits& limits = {});

}  // namespace shootdown::hdr
