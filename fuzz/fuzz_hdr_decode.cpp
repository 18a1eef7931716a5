// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the V2 decoder (compressed and uncompressed, raw and
// base64). Any input must give a value or an error, never a crash, a leak or
// an allocation beyond the limits; whatever decodes must survive a round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "core/hdr/codec.hpp"

namespace hdr = shootdown::hdr;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  hdr::DecodeLimits limits;
  limits.max_counts_length = std::int64_t{1} << 18;
  limits.max_payload_bytes = std::size_t{1} << 20;
  const std::span<const std::uint8_t> bytes(data, size);
  auto decoded = hdr::decode(bytes, limits);
  if (decoded.ok()) {
    const hdr::Histogram& h = decoded.value();
    auto again = hdr::decode(hdr::encode_compressed(h, 1), limits);
    if (!again.ok() || !(again.value() == h)) std::abort();
    (void)h.value_at_percentile(99.9);
    (void)h.mean();
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)hdr::decode_base64(text, limits);
  return 0;
}
