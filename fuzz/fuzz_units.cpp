// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: sizes ("64KiB", "4 GiB"), durations ("1.5ms", "after=10s")
// and integers as given on the command line. A parsed size is non-negative;
// a refusal always says why; formatting a parsed value never fails.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  if (auto v = shootdown::parse_size(text, &why)) {
    if (*v < 0) std::abort();
    (void)shootdown::format_size(*v);
  } else if (why.empty()) {
    std::abort();
  }
  for (std::int64_t unit : {std::int64_t{0}, std::int64_t{1'000'000}}) {
    why.clear();
    if (auto d = shootdown::parse_duration_ns(text, &why, unit))
      (void)shootdown::format_duration_ns(*d);
    else if (why.empty())
      std::abort();
  }
  why.clear();
  if (!shootdown::parse_int(text, &why) && why.empty()) std::abort();
  return 0;
}
