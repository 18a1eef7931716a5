// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition format 0.0.4 (prometheus.io/docs/instrumenting/
// exposition_formats): pure encoder. One family = "# HELP", "# TYPE", then
// its samples; label values escape '\', '"' and newline; HELP escapes '\'
// and newline. Values are integers here (counters of events), or integers
// shown with a fixed decimal point (nanoseconds as exact seconds).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shootdown::prom {

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct Sample {
  std::vector<std::pair<std::string, std::string>> labels;
  std::int64_t value = 0;
};

struct Family {
  std::string name;  // [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;
  std::string type;  // counter|gauge
  std::vector<Sample> samples;
  int decimals = 0;  // values are in units of 10^-decimals (9: ns shown as seconds)
};

std::string escape_label_value(std::string_view s);
std::string escape_help(std::string_view s);
bool valid_metric_name(std::string_view s);
bool valid_label_name(std::string_view s);
std::string encode(const std::vector<Family>& families);

}  // namespace shootdown::prom
