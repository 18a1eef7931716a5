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
  if (auto v = shootdown::parse_size(text)) {
    if (*v < 0) std::abort();
    (void)shootdown::format_size(*v);
  } else if (v.error().empty()) {
    std::abort();
  }
  for (std::int64_t unit : {std::int64_t{0}, std::int64_t{1'000'000}}) {
    if (auto d = shootdown::parse_duration_ns(text, unit))
      (void)shootdown::format_duration_ns(*d);
    else if (d.error().empty())
      std::abort();
  }
  if (auto i = shootdown::parse_int(text); !i && i.error().empty()) std::abort();
  return 0;
}
