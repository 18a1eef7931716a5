// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: CPU lists (--culprit-cpu/--victim-cpus/--cpus values and
// /sys/devices/system/cpu/{online,isolated,...}). A parsed list must be
// sorted, in range, and re-format to a list that parses to the same CPUs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/cpulist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool dups : {false, true}) {
    auto cpus = shootdown::parse_cpulist(text, dups);
    if (!cpus) {
      if (cpus.error().empty()) std::abort();  // a refusal always says why
      continue;
    }
    for (int c : *cpus)
      if (c < 0) std::abort();
    if (dups) continue;
    auto again = shootdown::parse_cpulist(shootdown::format_cpulist(*cpus));
    if (!again || *again != *cpus) std::abort();
  }
  return 0;
}
