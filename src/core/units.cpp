// SPDX-License-Identifier: Apache-2.0
#include "core/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <span>

namespace shootdown {

namespace {

struct Number {
  double value;
  bool integral;
  std::int64_t int_value;
  std::string_view rest;
};

Expected<Number> leading_number(std::string_view s) {
  if (s.empty()) {
    return Error{"empty value"};
  }
  if (s.front() == '-') {
    return Error{"negative values are not accepted"};
  }
  if (s.front() == '+') s.remove_prefix(1);
  std::size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  std::size_t int_end = i;
  bool integral = true;
  if (i < s.size() && s[i] == '.') {
    integral = false;
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  }
  if (int_end == 0 && (integral || i == 1)) {
    return Error{"expected a number"};
  }
  Number n{0.0, integral, 0, s.substr(i)};
  const std::string digits(s.substr(0, i));
  if (integral) {
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n.int_value);
    if (ec != std::errc{}) {
      return Error{"number out of range"};
    }
    n.value = static_cast<double>(n.int_value);
  } else {
    n.value = std::strtod(digits.c_str(), nullptr);
  }
  return n;
}

Expected<std::int64_t> scale(const Number& n, std::int64_t unit) {
  if (n.integral) {
    if (n.int_value != 0 && unit > INT64_MAX / n.int_value) {
      return Error{"value too large"};
    }
    return n.int_value * unit;
  }
  const double v = n.value * static_cast<double>(unit);
  if (!(v < 9.0e18)) {
    return Error{"value too large"};
  }
  if (v != std::floor(v)) {
    return Error{"fractional value does not give a whole number of the base unit"};
  }
  return static_cast<std::int64_t>(v);
}

struct Unit {
  std::string_view name;
  std::int64_t mult;
};

constexpr Unit kSizeUnits[] = {
    {"", 1},          {"B", 1},           {"K", 1LL << 10},        {"KiB", 1LL << 10},
    {"k", 1LL << 10}, {"KB", 1000},       {"M", 1LL << 20},        {"MiB", 1LL << 20},
    {"MB", 1000000},  {"G", 1LL << 30},   {"GiB", 1LL << 30},      {"GB", 1000000000LL},
    {"T", 1LL << 40}, {"TiB", 1LL << 40}, {"TB", 1000000000000LL},
};

constexpr Unit kDurationUnits[] = {
    {"ns", 1},           {"us", 1000},         {"µs", 1000},           {"ms", 1000000},
    {"s", 1000000000LL}, {"m", 60000000000LL}, {"min", 60000000000LL},
};

// n in the unit its suffix names, or `unknown` as the reason when no unit does.
Expected<std::int64_t> scale_by_unit(const Number& n, std::span<const Unit> units, const char* unknown) {
  for (const auto& u : units)
    if (n.rest == u.name) return scale(n, u.mult);
  return Error{unknown};
}

}  // namespace

Expected<std::int64_t> parse_int(std::string_view text) {
  std::int64_t v = 0;
  bool neg = !text.empty() && text.front() == '-';
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size()) {
    return Error{ec == std::errc::result_out_of_range ? "number out of range" : "expected an integer"};
  }
  (void)neg;
  return v;
}

Expected<std::int64_t> parse_size(std::string_view text) {
  auto n = leading_number(text);
  if (!n) return Error{n.error()};
  return scale_by_unit(*n, kSizeUnits, "unknown size unit (use B, KiB, MiB, GiB, TiB)");
}

Expected<std::int64_t> parse_duration_ns(std::string_view text, std::int64_t default_unit_ns) {
  auto n = leading_number(text);
  if (!n) return Error{n.error()};
  if (n->rest.empty()) {
    if (default_unit_ns > 0) return scale(*n, default_unit_ns);
    return Error{"missing time unit (use ns, us, ms, s)"};
  }
  return scale_by_unit(*n, kDurationUnits, "unknown time unit (use ns, us, ms, s, m)");
}

std::string format_size(std::int64_t bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kNames[u]);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kNames[u]);
  return buf;
}

std::string format_duration_ns(std::int64_t ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (ns < 0) {
    return "-" + format_duration_ns(-ns);
  } else if (ns < 10000) {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  } else if (ns < 10000000) {
    std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  } else if (ns < 10000000000LL) {
    std::snprintf(buf, sizeof buf, "%.1f ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", v / 1e9);
  }
  return buf;
}

}  // namespace shootdown
