// SPDX-License-Identifier: Apache-2.0
#include "core/hdr/codec.hpp"

#include <zlib.h>

#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/errors.hpp"

namespace shootdown::hdr {

namespace {

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}
std::uint32_t get_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}
std::uint64_t get_u64(const std::uint8_t* p) {
  return (std::uint64_t{get_u32(p)} << 32) | get_u32(p + 4);
}

// ZigZag, then LEB128 with the "64b9B" twist of the reference: at most nine
// bytes, the ninth carrying a full 8 bits.
void put_varint(std::vector<std::uint8_t>& out, std::int64_t value) {
  auto zz = (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (int i = 0; i < 8; ++i) {
    if ((zz >> 7) == 0) {
      out.push_back(static_cast<std::uint8_t>(zz));
      return;
    }
    out.push_back(static_cast<std::uint8_t>((zz & 0x7f) | 0x80));
    zz >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(zz));
}

// Returns false if the varint runs past end.
bool get_varint(const std::uint8_t*& p, const std::uint8_t* end, std::int64_t& value) {
  std::uint64_t raw = 0;
  for (int i = 0; i < 8; ++i) {
    if (p == end) return false;
    const std::uint8_t b = *p++;
    raw |= static_cast<std::uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      value = static_cast<std::int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
      return true;
    }
  }
  if (p == end) return false;
  raw |= static_cast<std::uint64_t>(*p++) << 56;
  value = static_cast<std::int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
  return true;
}

std::string hex32(std::uint32_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) s.push_back(kHex[(v >> shift) & 0xf]);
  return s;
}

Expected<Histogram> decode_uncompressed(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() < kEncodingHeaderSize)
    return Error{"hdr decode: truncated: header needs " + std::to_string(kEncodingHeaderSize) + " bytes, got " +
                 std::to_string(bytes.size())};
  const std::uint8_t* p = bytes.data();
  const std::uint32_t cookie = get_u32(p);
  if ((cookie & ~0xf0u) != kV2EncodingCookieBase)
    return Error{"hdr decode: wrong cookie " + hex32(cookie) + " (expected V2 " + hex32(kV2EncodingCookie) + ")"};
  const auto payload_len = static_cast<std::int32_t>(get_u32(p + 4));
  const auto normalizing_offset = static_cast<std::int32_t>(get_u32(p + 8));
  const auto sig_figs = static_cast<std::int32_t>(get_u32(p + 12));
  const auto lowest = static_cast<std::int64_t>(get_u64(p + 16));
  const auto highest = static_cast<std::int64_t>(get_u64(p + 24));
  const double ratio = std::bit_cast<double>(get_u64(p + 32));

  if (payload_len < 0)
    return Error{"hdr decode: invalid header: negative payload length " + std::to_string(payload_len)};
  if (normalizing_offset != 0)
    return Error{"hdr decode: unsupported normalizing index offset " + std::to_string(normalizing_offset) +
                 " (only unshifted integer histograms are supported)"};
  if (!(ratio > 0.0) || ratio > std::numeric_limits<double>::max())
    return Error{"hdr decode: invalid header: integer-to-double ratio must be a positive finite number"};
  const std::int64_t counts_len = Histogram::counts_length_for(lowest, highest, sig_figs);
  if (counts_len == 0)
    return Error{"hdr decode: invalid header: lowest=" + std::to_string(lowest) +
                 " highest=" + std::to_string(highest) + " significant figures=" + std::to_string(sig_figs)};
  if (counts_len > limits.max_counts_length)
    return Error{"hdr decode: layout of " + std::to_string(counts_len) + " counts exceeds the limit of " +
                 std::to_string(limits.max_counts_length)};

  const std::size_t present = bytes.size() - kEncodingHeaderSize;
  const auto declared = static_cast<std::size_t>(payload_len);
  if (declared > limits.max_payload_bytes)
    return Error{"hdr decode: declared payload of " + std::to_string(declared) + " bytes exceeds the limit of " +
                 std::to_string(limits.max_payload_bytes)};
  if (present < declared)
    return Error{"hdr decode: payload shorter than declared: " + std::to_string(declared) + " bytes declared, " +
                 std::to_string(present) + " present"};
  if (present > declared)
    return Error{"hdr decode: payload longer than declared: " + std::to_string(declared) + " bytes declared, " +
                 std::to_string(present) + " present"};

  // Only now allocate: the layout is capped above.
  Histogram h(lowest, highest, sig_figs);
  const std::uint8_t* cur = p + kEncodingHeaderSize;
  const std::uint8_t* const end = cur + declared;
  std::int64_t index = 0;
  std::int64_t total = 0;
  while (cur < end) {
    const std::size_t at = static_cast<std::size_t>(cur - (p + kEncodingHeaderSize));
    std::int64_t count = 0;
    if (!get_varint(cur, end, count))
      return Error{"hdr decode: truncated: count at payload byte " + std::to_string(at) + " runs past the payload"};
    if (count < 0) {
      if (count < -static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::max()))
        return Error{"hdr decode: overflow: zero run of " + std::to_string(count) + " at payload byte " +
                     std::to_string(at) + " exceeds 2^31-1"};
      if (index - count > counts_len)
        return Error{"hdr decode: counts beyond the layout: zero run reaches index " + std::to_string(index - count) +
                     " of " + std::to_string(counts_len)};
      index -= count;
      continue;
    }
    if (index >= counts_len)
      return Error{"hdr decode: counts beyond the layout: index " + std::to_string(index) + " >= counts length " +
                   std::to_string(counts_len)};
    if (__builtin_add_overflow(total, count, &total))
      return Error{"hdr decode: overflow: total count exceeds 2^63-1 at index " + std::to_string(index)};
    if (count != 0) h.set_count_at_index(static_cast<std::int32_t>(index), count);
    ++index;
  }
  h.recompute_totals();
  return h;
}

Expected<Histogram> decode_compressed(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() < kCompressedHeaderSize)
    return Error{"hdr decode: truncated: compressed header needs 8 bytes, got " + std::to_string(bytes.size())};
  const auto length = static_cast<std::int32_t>(get_u32(bytes.data() + 4));
  if (length < 0) return Error{"hdr decode: invalid header: negative compressed length " + std::to_string(length)};
  const std::size_t present = bytes.size() - kCompressedHeaderSize;
  if (present < static_cast<std::size_t>(length))
    return Error{"hdr decode: truncated: compressed length " + std::to_string(length) + " but " +
                 std::to_string(present) + " bytes present"};
  if (present > static_cast<std::size_t>(length))
    return Error{"hdr decode: compressed payload longer than declared: " + std::to_string(length) +
                 " bytes declared, " + std::to_string(present) + " present"};

  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return Error{"hdr decode: zlib inflateInit failed"};
  struct Guard {
    z_stream* s;
    ~Guard() { inflateEnd(s); }
  } guard{&zs};
  zs.next_in = const_cast<Bytef*>(bytes.data() + kCompressedHeaderSize);
  zs.avail_in = static_cast<uInt>(length);

  // Inflate the 40-byte header first; its declared payload length (capped)
  // sizes the rest, so a small input never makes us allocate much.
  std::vector<std::uint8_t> plain(kEncodingHeaderSize);
  zs.next_out = plain.data();
  zs.avail_out = static_cast<uInt>(plain.size());
  int rc = inflate(&zs, Z_SYNC_FLUSH);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
    return Error{std::string("hdr decode: bad zlib data: ") + (zs.msg ? zs.msg : "inflate failed")};
  if (zs.avail_out != 0)
    return Error{"hdr decode: truncated: compressed data holds only " +
                 std::to_string(kEncodingHeaderSize - zs.avail_out) + " of the 40 header bytes"};
  if ((get_u32(plain.data()) & ~0xf0u) != kV2EncodingCookieBase)
    return Error{"hdr decode: wrong cookie " + hex32(get_u32(plain.data())) + " inside compressed data (expected " +
                 hex32(kV2EncodingCookie) + ")"};
  const auto payload_len = static_cast<std::int32_t>(get_u32(plain.data() + 4));
  if (payload_len < 0)
    return Error{"hdr decode: invalid header: negative payload length " + std::to_string(payload_len)};
  if (static_cast<std::size_t>(payload_len) > limits.max_payload_bytes)
    return Error{"hdr decode: declared payload of " + std::to_string(payload_len) + " bytes exceeds the limit of " +
                 std::to_string(limits.max_payload_bytes)};
  plain.resize(kEncodingHeaderSize + static_cast<std::size_t>(payload_len));
  zs.next_out = plain.data() + kEncodingHeaderSize;
  zs.avail_out = static_cast<uInt>(payload_len);
  while (rc == Z_OK && zs.avail_out > 0) {
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR) break;  // no progress possible: input exhausted
  }
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
    return Error{std::string("hdr decode: bad zlib data: ") + (zs.msg ? zs.msg : "inflate failed")};
  const std::size_t got = static_cast<std::size_t>(payload_len) - zs.avail_out;
  if (got < static_cast<std::size_t>(payload_len))
    return Error{"hdr decode: payload shorter than declared: " + std::to_string(payload_len) + " bytes declared, " +
                 std::to_string(got) + " in the compressed data"};
  if (rc != Z_STREAM_END) {
    // Output buffer full: anything more in the stream is excess payload.
    std::array<std::uint8_t, 1> probe{};
    zs.next_out = probe.data();
    zs.avail_out = 1;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (zs.avail_out == 0)
      return Error{"hdr decode: payload longer than declared: " + std::to_string(payload_len) +
                   " bytes declared, the compressed data holds more"};
    if (rc != Z_STREAM_END) {
      if (rc == Z_OK || rc == Z_BUF_ERROR)
        return Error{"hdr decode: truncated: the zlib stream ends before its end marker"};
      return Error{std::string("hdr decode: bad zlib data: ") + (zs.msg ? zs.msg : "inflate failed")};
    }
  }
  return decode_uncompressed(plain, limits);
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::vector<std::uint8_t> encode(const Histogram& histogram) {
  std::vector<std::uint8_t> out;
  out.reserve(kEncodingHeaderSize + 64);
  put_u32(out, kV2EncodingCookie);
  put_u32(out, 0);  // payload length, patched below
  put_u32(out, 0);  // normalizing index offset
  put_u32(out, static_cast<std::uint32_t>(histogram.significant_figures()));
  put_u64(out, static_cast<std::uint64_t>(histogram.lowest_discernible()));
  put_u64(out, static_cast<std::uint64_t>(histogram.highest_trackable()));
  put_u64(out, std::bit_cast<std::uint64_t>(1.0));

  // Like the reference: counts up to and including the index of the largest
  // recorded value (index 0 alone for an empty histogram).
  const std::int32_t limit = histogram.counts_index_for(histogram.max_recorded()) + 1;
  std::int32_t i = 0;
  while (i < limit) {
    const std::int64_t count = histogram.count_at_index(i++);
    if (count != 0) {
      put_varint(out, count);
      continue;
    }
    std::int64_t zeros = 1;
    while (i < limit && histogram.count_at_index(i) == 0) {
      ++zeros;
      ++i;
    }
    put_varint(out, zeros > 1 ? -zeros : 0);
  }
  const auto payload = static_cast<std::uint32_t>(out.size() - kEncodingHeaderSize);
  for (int b = 0; b < 4; ++b) out[4 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(payload >> (24 - 8 * b));
  return out;
}

std::vector<std::uint8_t> encode_compressed(const Histogram& histogram, int level) {
  const std::vector<std::uint8_t> plain = encode(histogram);
  uLongf bound = compressBound(static_cast<uLong>(plain.size()));
  std::vector<std::uint8_t> out(kCompressedHeaderSize + bound);
  if (compress2(out.data() + kCompressedHeaderSize, &bound, plain.data(), static_cast<uLong>(plain.size()), level) !=
      Z_OK)
    throw RuntimeError("hdr encode: zlib compress2 failed");
  out.resize(kCompressedHeaderSize + bound);
  std::vector<std::uint8_t> header;
  put_u32(header, kV2CompressedEncodingCookie);
  put_u32(header, static_cast<std::uint32_t>(bound));
  std::memcpy(out.data(), header.data(), kCompressedHeaderSize);
  return out;
}

std::string base64_encode(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 1) {
    const std::uint32_t v = std::uint32_t{bytes[i]} << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out += "==";
  } else if (rest == 2) {
    const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) | (std::uint32_t{bytes[i + 1]} << 8);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

Expected<std::vector<std::uint8_t>> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0)
    return Error{"bad base64: length " + std::to_string(text.size()) + " is not a multiple of 4"};
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t v = 0;
    const bool last = i + 4 == text.size();
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      int d = base64_value(c);
      if (d < 0) {
        if (c == '=' && last && k >= 4 - pad) {
          d = 0;
        } else {
          return Error{"bad base64: invalid character at offset " + std::to_string(i + k)};
        }
      }
      v = (v << 6) | static_cast<std::uint32_t>(d);
    }
    out.push_back(static_cast<std::uint8_t>(v >> 16));
    if (!(last && pad == 2)) out.push_back(static_cast<std::uint8_t>(v >> 8));
    if (!(last && pad >= 1)) out.push_back(static_cast<std::uint8_t>(v));
  }
  return out;
}

Expected<Histogram> decode(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.size() < 4) return Error{"hdr decode: truncated: " + std::to_string(bytes.size()) + " bytes, no cookie"};
  const std::uint32_t base = get_u32(bytes.data()) & ~0xf0u;
  if (base == kV2CompressedEncodingCookieBase) return decode_compressed(bytes, limits);
  if (base == kV2EncodingCookieBase) return decode_uncompressed(bytes, limits);
  return Error{"hdr decode: wrong cookie " + hex32(get_u32(bytes.data())) + " (expected V2 " +
               hex32(kV2EncodingCookie) + " or compressed " + hex32(kV2CompressedEncodingCookie) + ")"};
}

Expected<Histogram> decode_base64(std::string_view text, const DecodeLimits& limits) {
  auto bytes = base64_decode(text);
  if (!bytes) return Error{"hdr decode: " + bytes.error()};
  return decode(bytes.value(), limits);
}

std::string encode_compressed_base64(const Histogram& histogram) {
  return base64_encode(encode_compressed(histogram, 9));
}

}  // namespace shootdown::hdr
