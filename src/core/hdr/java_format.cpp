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
  std::string digits = "0";
  int point = 1;  // digits before the decimal point
  if (magnitude != 0.0) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), magnitude, std::chars_format::scientific);
    const std::string sci(buf.data(), res.ptr);
    const std::size_t e = sci.find('e');
    digits.clear();
    for (std::size_t i = 0; i < e; ++i)
      if (sci[i] != '.') digits.push_back(sci[i]);
    point = std::atoi(sci.c_str() + e + 1) + 1;
  }

  // Round half-up on the decimal digits, keeping `keep` of them.
  const long keep = static_cast<long>(point) + precision;
  if (keep < 0) {
    digits = "0";
    point = 1;
  } else if (static_cast<std::size_t>(keep) < digits.size()) {
    const bool up = digits[static_cast<std::size_t>(keep)] >= '5';
    digits.resize(static_cast<std::size_t>(keep));
    if (up) {
      long i = keep - 1;
      while (i >= 0 && digits[static_cast<std::size_t>(i)] == '9') digits[static_cast<std::size_t>(i--)] = '0';
      if (i >= 0) {
        ++digits[static_cast<std::size_t>(i)];
      } else {
        digits.insert(digits.begin(), '1');
        ++point;
      }
    }
    if (digits.empty()) {
      digits = "0";
      point = 1;
    }
  }

  std::string integer;
  std::string fraction;
  if (point <= 0) {
    integer = "0";
    fraction.assign(static_cast<std::size_t>(-point), '0');
    fraction += digits;
  } else if (static_cast<std::size_t>(point) >= digits.size()) {
    integer = digits;
    integer.append(static_cast<std::size_t>(point) - digits.size(), '0');
  } else {
    integer = digits.substr(0, static_cast<std::size_t>(point));
    fraction = digits.substr(static_cast<std::size_t>(point));
  }
  // Strip leading zeros of the integer part (digits may start with 0 after
  // the keep < 0 collapse), but keep one.
  const std::size_t nz = integer.find_first_not_of('0');
  integer = nz == std::string::npos ? "0" : integer.substr(nz);
  if (fraction.size() > static_cast<std::size_t>(precision)) fraction.resize(static_cast<std::size_t>(precision));
  fraction.append(static_cast<std::size_t>(precision) - fraction.size(), '0');

  std::string out;
  if (negative) out.push_back('-');
  out += integer;
  if (precision > 0) {
    out.push_back('.');
    out += fraction;
  }
  return pad_left(std::move(out), width);
}

std::string java_int(std::int64_t value, int width) { return pad_left(std::to_string(value), width); }

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
