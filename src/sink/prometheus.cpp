// SPDX-License-Identifier: Apache-2.0
#include "sink/prometheus.hpp"

namespace shootdown::prom {

namespace {
bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}
bool valid_name(std::string_view s, bool colon) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!name_char(s[i], i == 0, colon)) return false;
  return true;
}
// value x 10^-decimals, exactly: 1500000000 with 9 decimals is "1.500000000".
std::string fixed_point(std::int64_t value, int decimals) {
  if (decimals <= 0) return std::to_string(value);
  std::string digits = std::to_string(value < 0 ? -(value + 1) + 1ULL : static_cast<unsigned long long>(value));
  if (digits.size() <= static_cast<std::size_t>(decimals))
    digits.insert(0, static_cast<std::size_t>(decimals) + 1 - digits.size(), '0');
  digits.insert(digits.size() - static_cast<std::size_t>(decimals), ".");
  return (value < 0 ? "-" : "") + digits;
}
}  // namespace

bool valid_metric_name(std::string_view s) {
  return valid_name(s, true);
}
bool valid_label_name(std::string_view s) {
  return valid_name(s, false) && s.rfind("__", 0) != 0;
}

std::string escape_label_value(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escape_help(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string encode(const std::vector<Family>& families) {
  std::string out;
  for (const auto& f : families) {
    if (!valid_metric_name(f.name)) continue;
    out += "# HELP " + f.name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const auto& s : f.samples) {
      out += f.name;
      bool first = true;
      for (const auto& [k, v] : s.labels) {
        if (!valid_label_name(k)) continue;
        out += first ? "{" : ",";
        first = false;
        out += k + "=\"" + escape_label_value(v) + "\"";
      }
      if (!first) out += "}";
      out += " " + fixed_point(s.value, f.decimals) + "\n";
    }
  }
  return out;
}

}  // namespace shootdown::prom
