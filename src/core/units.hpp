// SPDX-License-Identifier: Apache-2.0
// Checked parsing and formatting of sizes and durations ("4GiB", "64KiB",
// "250ms"). "12abc", "-1GiB", overflow and empty strings are errors. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace shootdown {

// Sizes: integer or decimal number + optional unit B, KiB, MiB, GiB, TiB
// (binary) or K, M, G, T (also binary, as in dd/numactl), KB/MB/GB (decimal).
// The error says what is wrong with the text.
Expected<std::int64_t> parse_size(std::string_view text);
// Durations: number + unit ns, us, ms, s, m (minutes); a bare number is an error
// unless default_unit_ns > 0.
Expected<std::int64_t> parse_duration_ns(std::string_view text, std::int64_t default_unit_ns = 0);
Expected<std::int64_t> parse_int(std::string_view text);

std::string format_size(std::int64_t bytes);      // "4 GiB", "64 KiB", "1.5 MiB"
std::string format_duration_ns(std::int64_t ns);  // "1.234 ms", "25.1 us", "812 ns"

}  // namespace shootdown
