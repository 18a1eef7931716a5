// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the .hlog reader. Malformed text must give an error, a
// parsed log must format and re-read to the same intervals.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/hdr/hgrm.hpp"
#include "core/hdr/hlog.hpp"

namespace hdr = shootdown::hdr;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hdr::ReadLimits limits;
  limits.decode.max_counts_length = std::int64_t{1} << 18;
  limits.decode.max_payload_bytes = std::size_t{1} << 20;
  limits.max_intervals = 256;
  limits.max_total_counts = std::int64_t{1} << 20;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto log = hdr::parse_log(text, limits);
  if (!log.ok()) return 0;
  hdr::LogHeader header;
  hdr::HlogWriter writer(header);
  for (const hdr::LogInterval& iv : log->intervals) {
    if (!writer.add(iv.tag, iv.start_sec, iv.length_sec, iv.histogram).ok()) continue;
    (void)hdr::format_percentile_distribution(iv.histogram);
  }
  auto again = hdr::parse_log(writer.text(), limits);
  if (!again.ok()) std::abort();
  return 0;
}
