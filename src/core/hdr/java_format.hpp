// SPDX-License-Identifier: Apache-2.0
// Text formatting that reproduces java.util.Formatter (Locale.US) and
// java.util.Date.toString() for the pieces the HdrHistogram reference tools
// print, so our .hlog/.hgrm are byte-identical to theirs. Pure.
#pragma once

#include <cstdint>
#include <string>

namespace shootdown::hdr {

// Java "%<width>.<precision>f". Java does not round the exact binary value
// like printf: it takes the shortest decimal string that round-trips the
// double (Double.toString digits) and rounds that half-up, so 0.125 -> "0.13"
// and 1.005 -> "1.01" where printf prints "0.12" and "1.00". NaN and
// infinities print as "NaN", "Infinity", "-Infinity". Right-aligned in width.
std::string java_fixed(double value, int precision, int width = 0);

// Java "%<width>d": right-aligned decimal integer.
std::string java_int(std::int64_t value, int width = 0);

// java.util.Date.toString() for a UTC default time zone:
// "EEE MMM dd HH:mm:ss zzz yyyy", e.g. "Thu Jan 01 00:00:00 UTC 1970".
std::string java_date_utc(std::int64_t epoch_msec);

}  // namespace shootdown::hdr
