// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: /proc/interrupts. Any text gives a snapshot or a reason;
// lookups and deltas over what was parsed stay in bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sys/interrupts.hpp"

namespace sys = shootdown::sys;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto snap = sys::parse_interrupts(text);
  if (!snap) {
    if (snap.error().empty()) std::abort();
    return 0;
  }
  for (const auto& [row, counts] : snap->rows)
    for (int cpu : snap->cpus) {
      (void)snap->get(row, cpu);
      (void)sys::interrupts_delta(*snap, *snap, row, cpu);
    }
  (void)snap->get("TLB", 0);
  return 0;
}
