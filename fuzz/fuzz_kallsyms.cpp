// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: /proc/kallsyms. Parsing any text and symbolizing
// addresses around every parsed symbol stays in bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "sys/kallsyms.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t probe = 0;
  if (size >= 8) std::memcpy(&probe, data, 8);
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto k = shootdown::sys::Kallsyms::parse(text);
  for (std::uint64_t a :
       {probe, probe + 1, probe - 1, std::uint64_t{0}, ~std::uint64_t{0}, std::uint64_t{0xffffffff81000000}}) {
    (void)k.symbolize(a);
    (void)k.function(a);
  }
  return 0;
}
