// SPDX-License-Identifier: Apache-2.0
#include "core/hdr/java_format.hpp"

#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace shootdown::hdr {

namespace {
std::string pad_left(std::string s, int width) {
  if (width > 0 && s.size() < static_cast<std::size_t>(width))
    s.insert(0, static_cast<std::size_t>(width) - s.size(), ' ');
  return s;
}
}  // namespace

std::string java_fixed(double value, int precision, int width) {
  if (std::isnan(value)) return pad_left("NaN", width);
  if (std::isinf(value)) return pad_left(value > 0 ? "Infinity" : "-Infinity", width);
  if (precision < 0) precision = 0;
  const bool negative = std::signbit(value);
  const double magnitude = std::fabs(value);

  // Shortest round-trip digits d1.d2d3...e±X: value = 0.d1d2d3... * 10^(X+1).
  // Kept in a fixed buffer (at most 17 significant digits, plus one carry).
  std::array<char, 24> digits{};
  int ndigits = 1;
  int point = 1;  // digits before the decimal point
  digits[0] = '0';
  if (magnitude != 0.0) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), magnitude, std::chars_format::scientific);
    ndigits = 0;
    const char* c = buf.data();
    for (; c < res.ptr && *c != 'e'; ++c)
      if (*c != '.' && ndigits < 20) digits[static_cast<std::size_t>(ndigits++)] = *c;
    point = std::atoi(c + 1) + 1;
  }

  // Round half-up on the decimal digits, keeping `keep` of them.
  const long keep = static_cast<long>(point) + precision;
  if (keep < 0) {
    digits[0] = '0';
    ndigits = 1;
    point = 1;
  } else if (keep < ndigits) {
    const bool up = digits[static_cast<std::size_t>(keep)] >= '5';
    ndigits = static_cast<int>(keep);
    if (up) {
      int i = ndigits - 1;
      while (i >= 0 && digits[static_cast<std::size_t>(i)] == '9') digits[static_cast<std::size_t>(i--)] = '0';
      if (i >= 0) {
        ++digits[static_cast<std::size_t>(i)];
      } else {
        // All nines (or nothing kept): 1 followed by the zeros, one more integer digit.
        for (int k = ndigits; k > 0; --k) digits[static_cast<std::size_t>(k)] = digits[static_cast<std::size_t>(k - 1)];
        digits[0] = '1';
        ++ndigits;
        ++point;
      }
    }
    if (ndigits == 0) {
      digits[0] = '0';
      ndigits = 1;
      point = 1;
    }
  }

  // digit(k): k-th decimal digit counted from the first significant one, '0' outside.
  auto digit = [&](long k) { return (k >= 0 && k < ndigits) ? digits[static_cast<std::size_t>(k)] : '0'; };
  std::string out;
  if (negative) out.push_back('-');
  if (point <= 0) {
    out.push_back('0');
  } else {
    bool leading = true;
    for (long k = 0; k < point; ++k) {
      const char d = digit(k);
      if (leading && d == '0' && k + 1 < point) continue;
      leading = false;
      out.push_back(d);
    }
  }
  if (precision > 0) {
    out.push_back('.');
    for (long k = point; k < static_cast<long>(point) + precision; ++k) out.push_back(digit(k));
  }
  return pad_left(std::move(out), width);
}

std::string java_int(std::int64_t value, int width) {
  return pad_left(std::to_string(value), width);
}

std::string java_date_utc(std::int64_t epoch_msec) {
  using namespace std::chrono;
  const auto ms = milliseconds{epoch_msec};
  const auto day = floor<days>(sys_time<milliseconds>{ms});
  const year_month_day ymd{day};
  const weekday wd{day};
  const auto tod = sys_time<milliseconds>{ms} - day;
  const auto secs = duration_cast<seconds>(tod).count();
  static constexpr std::array<const char*, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::array<const char*, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  auto two = [](long v) {
    std::string s = std::to_string(v);
    return s.size() < 2 ? "0" + s : s;
  };
  std::string out = kDays[wd.c_encoding()];
  out += ' ';
  out += kMonths[static_cast<unsigned>(ymd.month()) - 1];
  out += ' ' + two(static_cast<long>(static_cast<unsigned>(ymd.day())));
  out += ' ' + two(secs / 3600) + ':' + two(secs / 60 % 60) + ':' + two(secs % 60);
  out += " UTC " + std::to_string(static_cast<int>(ymd.year()));
  return out;
}

}  // namespace shootdown::hdr
