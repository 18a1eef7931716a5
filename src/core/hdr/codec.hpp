// SPDX-License-Identifier: Apache-2.0
// HdrHistogram V2 wire format, as written by the Java reference
// (AbstractHistogram.encodeIntoByteBuffer / encodeIntoCompressedByteBuffer)
// and read by every HdrHistogram implementation. Pure: bytes in, bytes out.
//
// Uncompressed, big-endian:
//   int32  cookie                  0x1c849313 (V2 base 0x1c849303 | 0x10, as Java writes)
//   int32  payload length (bytes)
//   int32  normalizing index offset (always 0 for integer histograms)
//   int32  significant figures
//   int64  lowest discernible value
//   int64  highest trackable value
//   double integer-to-double conversion ratio (1.0)
//   payload: counts[0 .. index(max) ] as ZigZag LEB128-64b9B varints; a
//            negative value -n stands for n consecutive zero counts (n >= 2).
// Compressed: int32 cookie 0x1c849314, int32 length, zlib (deflate with zlib
// header) of the uncompressed form. Logs carry it base64-encoded.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/expected.hpp"
#include "core/hdr/histogram.hpp"

namespace shootdown::hdr {

using shootdown::Error;
using shootdown::Expected;
using shootdown::Ok;
using shootdown::Status;

inline constexpr std::uint32_t kV2EncodingCookieBase = 0x1c849303;
inline constexpr std::uint32_t kV2CompressedEncodingCookieBase = 0x1c849304;
inline constexpr std::uint32_t kV2EncodingCookie = kV2EncodingCookieBase | 0x10;
inline constexpr std::uint32_t kV2CompressedEncodingCookie = kV2CompressedEncodingCookieBase | 0x10;
inline constexpr std::size_t kEncodingHeaderSize = 40;
inline constexpr std::size_t kCompressedHeaderSize = 8;
inline constexpr std::size_t kMaxVarintBytes = 9;

// Caps applied before anything is allocated from a declared length or layout.
struct DecodeLimits {
  // Largest counts array a decoded header may ask for (entries of 8 bytes).
  // 2^21 covers 3 significant figures from 1 ns to beyond 10^15 ns.
  std::int64_t max_counts_length = std::int64_t{1} << 21;
  // Largest uncompressed payload accepted (bytes).
  std::size_t max_payload_bytes = std::size_t{16} << 20;
};

// Uncompressed V2 encoding (the form inside the compressed one).
std::vector<std::uint8_t> encode(const Histogram& histogram);
// Compressed V2 encoding. level: zlib level; the Java log writer uses 9.
std::vector<std::uint8_t> encode_compressed(const Histogram& histogram, int level = 9);

// RFC 4648 base64 with '=' padding (what java.util.Base64 / DatatypeConverter write).
std::string base64_encode(std::span<const std::uint8_t> bytes);
// Strict: rejects characters outside the alphabet, bad padding, bad length.
Expected<std::vector<std::uint8_t>> base64_decode(std::string_view text);

// Decodes a compressed or an uncompressed V2 histogram (chosen by cookie).
// The input must be exactly one encoding: trailing bytes are an error.
// Errors (one message each): truncated input, wrong cookie, invalid header,
// payload longer/shorter than declared, bad zlib data, a count or zero run
// that overflows, counts beyond the layout the header declares, limits.
Expected<Histogram> decode(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {});
// base64 text of a compressed (or uncompressed) encoding, as found in .hlog lines.
Expected<Histogram> decode_base64(std::string_view text, const DecodeLimits& limits = {});
// Convenience for log writers: base64(encode_compressed(h, 9)).
std::string encode_compressed_base64(const Histogram& histogram);

}  // namespace shootdown::hdr
