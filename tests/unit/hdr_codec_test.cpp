// SPDX-License-Identifier: Apache-2.0
// V2 codec: round trips, decoding of golden encodings written by the Java
// reference (tests/fixtures/hdr/gen/GenGolden.java), and one error per kind
// of bad input.
#include <gtest/gtest.h>
#include <zlib.h>

#include <bit>
#include <limits>
#include <sstream>

#include "core/hdr/codec.hpp"
#include "hdr_test_util.hpp"

namespace shootdown::hdr {
namespace {

using test::read_bytes;
using test::read_text;

constexpr std::int64_t kHour = 3600LL * 1000 * 1000 * 1000;

// Independent encoders for crafting inputs (the spec, not our codec).
void be32(std::vector<std::uint8_t>& o, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) o.push_back(static_cast<std::uint8_t>(v >> s));
}
void be64(std::vector<std::uint8_t>& o, std::uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) o.push_back(static_cast<std::uint8_t>(v >> s));
}
void zigzag(std::vector<std::uint8_t>& o, std::int64_t v) {
  std::uint64_t z = (static_cast<std::uint64_t>(v) << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0);
  int n = 0;
  while (z >= 0x80 && n < 8) {
    o.push_back(static_cast<std::uint8_t>(z | 0x80));
    z >>= 7;
    ++n;
  }
  o.push_back(static_cast<std::uint8_t>(z));
}
std::vector<std::uint8_t> raw(std::int32_t sig, std::int64_t lowest, std::int64_t highest,
                              const std::vector<std::uint8_t>& payload, std::int32_t declared = -1) {
  std::vector<std::uint8_t> o;
  be32(o, 0x1c849313);
  be32(o, static_cast<std::uint32_t>(declared < 0 ? static_cast<std::int32_t>(payload.size()) : declared));
  be32(o, 0);
  be32(o, static_cast<std::uint32_t>(sig));
  be64(o, static_cast<std::uint64_t>(lowest));
  be64(o, static_cast<std::uint64_t>(highest));
  be64(o, std::bit_cast<std::uint64_t>(1.0));
  o.insert(o.end(), payload.begin(), payload.end());
  return o;
}
std::vector<std::uint8_t> zwrap(const std::vector<std::uint8_t>& plain) {
  uLongf n = compressBound(static_cast<uLong>(plain.size()));
  std::vector<std::uint8_t> z(n);
  compress2(z.data(), &n, plain.data(), static_cast<uLong>(plain.size()), 6);
  z.resize(n);
  std::vector<std::uint8_t> o;
  be32(o, 0x1c849314);
  be32(o, static_cast<std::uint32_t>(z.size()));
  o.insert(o.end(), z.begin(), z.end());
  return o;
}

void expect_error(const Expected<Histogram>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(r.error().find(needle), std::string::npos) << r.error();
}

Histogram sample() {
  Histogram h(1, kHour, 3);
  for (int i = 0; i < 5000; ++i) h.record(1000 + (i * 7919) % 40000);
  h.record_n(0, 3);
  h.record_n(12345678, 1LL << 35);
  h.record(kHour);
  return h;
}

TEST(HdrCodec, RoundTripUncompressedAndCompressed) {
  const Histogram h = sample();
  for (const auto& bytes : {encode(h), encode_compressed(h), encode_compressed(h, 1)}) {
    auto d = decode(bytes);
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_TRUE(*d == h);
    EXPECT_EQ(d->total_count(), h.total_count());
    EXPECT_EQ(d->max(), h.max());
    EXPECT_EQ(d->min(), h.min());
    EXPECT_EQ(d->value_at_percentile(99.0), h.value_at_percentile(99.0));
  }
  auto b = decode_base64(encode_compressed_base64(h));
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_TRUE(*b == h);
}

TEST(HdrCodec, EmptyHistogramEncodesOneZeroCount) {
  const Histogram h(1, 1000000, 3);
  const auto bytes = encode(h);
  ASSERT_EQ(bytes.size(), 41u);  // header + varint(0), as the Java writer does
  EXPECT_EQ(bytes[40], 0);
  auto d = decode(bytes);
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->total_count(), 0);
}

TEST(HdrCodec, MatchesJavaBytesUncompressed) {
  // Our encoder is byte-identical to Java's for the same counts.
  for (const char* name : {"basic", "lowest1000", "empty", "bigcounts", "sig5"}) {
    const auto java = read_bytes(std::string(name) + ".v2.bin");
    ASSERT_FALSE(java.empty()) << name;
    auto d = decode(java);
    ASSERT_TRUE(d.ok()) << name << ": " << d.error();
    EXPECT_EQ(encode(*d), java) << name;
  }
}

// Parses GenGolden's NAME.expected (values computed by the Java reference).
void check_against_java(const std::string& name, const Histogram& h) {
  std::istringstream in(read_text(name + ".expected"));
  std::string key;
  std::vector<std::pair<std::int64_t, std::int64_t>> counts;
  while (in >> key) {
    if (key == "count") {
      std::int64_t v = 0, c = 0;
      in >> v >> c;
      counts.emplace_back(v, c);
    } else if (key == "p") {
      double p = 0;
      std::int64_t v = 0;
      in >> p >> v;
      EXPECT_EQ(h.value_at_percentile(p), v) << name << " p" << p;
    } else if (key == "mean" || key == "stddev") {
      std::string text;
      in >> text;
      const double expected = std::stod(text);
      EXPECT_DOUBLE_EQ(key == "mean" ? h.mean() : h.stddev(), expected) << name << " " << key;
    } else {
      std::int64_t v = 0;
      in >> v;
      if (key == "lowest") {
        EXPECT_EQ(h.lowest_discernible(), v) << name;
      }
      if (key == "highest") {
        EXPECT_EQ(h.highest_trackable(), v) << name;
      }
      if (key == "sigfigs") {
        EXPECT_EQ(h.significant_figures(), v) << name;
      }
      if (key == "total") {
        EXPECT_EQ(h.total_count(), v) << name;
      }
      if (key == "min") {
        EXPECT_EQ(h.min(), v) << name;
      }
      if (key == "max") {
        EXPECT_EQ(h.max(), v) << name;
      }
    }
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> ours;
  for (std::int32_t i = 0; i < h.counts_length(); ++i)
    if (h.count_at_index(i) != 0) ours.emplace_back(h.highest_equivalent(h.value_from_index(i)), h.count_at_index(i));
  EXPECT_EQ(ours, counts) << name;
}

TEST(HdrCodec, DecodesJavaGoldenEncodings) {
  for (const char* name : {"basic", "lowest1000", "empty", "bigcounts", "sig5"}) {
    SCOPED_TRACE(name);
    auto plain = decode(read_bytes(std::string(name) + ".v2.bin"));
    ASSERT_TRUE(plain.ok()) << plain.error();
    check_against_java(name, *plain);
    auto packed = decode_base64(read_text(std::string(name) + ".v2z.b64"));
    ASSERT_TRUE(packed.ok()) << packed.error();
    check_against_java(name, *packed);
    EXPECT_TRUE(*packed == *plain);
  }
}

TEST(HdrCodecErrors, Truncated) {
  const auto good = encode(sample());
  expect_error(decode(std::span(good).first(20)), "truncated");
  expect_error(decode(std::span(good).first(2)), "truncated");
  // A varint whose continuation bit runs off the declared payload.
  expect_error(decode(raw(3, 1, 1000, {0x80, 0x80})), "truncated");
  const auto z = encode_compressed(sample());
  expect_error(decode(std::span(z).first(5)), "truncated");
  expect_error(decode(std::span(z).first(z.size() - 3)), "truncated");
}

TEST(HdrCodecErrors, WrongCookie) {
  auto bytes = encode(sample());
  bytes[0] = 0x12;
  expect_error(decode(bytes), "wrong cookie");
  // V1 (0x1c849301) is not supported.
  bytes[0] = 0x1c;
  bytes[3] = 0x01;
  expect_error(decode(bytes), "wrong cookie");
  // A compressed wrapper around something that is not a V2 histogram.
  std::vector<std::uint8_t> junk(40, 0x55);
  expect_error(decode(zwrap(junk)), "wrong cookie");
}

TEST(HdrCodecErrors, BadBase64) {
  expect_error(decode_base64("HISTFAAA!!!="), "bad base64");
  expect_error(decode_base64("HISTFAA"), "bad base64");
  expect_error(decode_base64("HI=TFAAA"), "bad base64");
  EXPECT_FALSE(base64_decode("a===").ok());
  auto ok = base64_decode("SGVsbG8=");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(std::string(ok->begin(), ok->end()), "Hello");
}

TEST(HdrCodecErrors, HugeCountsOverflow) {
  std::vector<std::uint8_t> p;
  zigzag(p, std::numeric_limits<std::int64_t>::max());
  zigzag(p, 1);
  expect_error(decode(raw(3, 1, 1000, p)), "overflow");
  std::vector<std::uint8_t> run;
  zigzag(run, -(std::int64_t{1} << 40));  // zero run beyond 2^31-1
  expect_error(decode(raw(3, 1, 1000, run)), "overflow");
  // A single maximal count still decodes (nine-byte varint).
  std::vector<std::uint8_t> one;
  zigzag(one, std::numeric_limits<std::int64_t>::max());
  auto d = decode(raw(3, 1, 1000, one));
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(d->total_count(), std::numeric_limits<std::int64_t>::max());
}

TEST(HdrCodecErrors, PayloadLongerOrShorterThanDeclared) {
  std::vector<std::uint8_t> p;
  zigzag(p, 5);
  zigzag(p, 7);
  expect_error(decode(raw(3, 1, 1000, p, 1)), "payload longer than declared");
  expect_error(decode(raw(3, 1, 1000, p, 9)), "payload shorter than declared");
  expect_error(decode(zwrap(raw(3, 1, 1000, p, 1))), "payload longer than declared");
  expect_error(decode(zwrap(raw(3, 1, 1000, p, 9))), "payload shorter than declared");
  auto z = encode_compressed(sample());
  z.push_back(0);  // trailing byte after the declared compressed length
  expect_error(decode(z), "longer than declared");
}

TEST(HdrCodecErrors, CountsBeyondLayout) {
  // Histogram(1, 2, 0) has 3 counts; a fourth is outside the layout.
  std::vector<std::uint8_t> p;
  for (int i = 0; i < 4; ++i) zigzag(p, 1);
  expect_error(decode(raw(0, 1, 2, p)), "counts beyond the layout");
  std::vector<std::uint8_t> run;
  zigzag(run, -10);
  expect_error(decode(raw(0, 1, 2, run)), "counts beyond the layout");
}

TEST(HdrCodecErrors, InvalidHeaderAndLimits) {
  expect_error(decode(raw(7, 1, 1000, {0})), "invalid header");
  expect_error(decode(raw(3, 0, 1000, {0})), "invalid header");
  expect_error(decode(raw(3, 100, 150, {0})), "invalid header");
  // 5 figures up to 2^63-1 asks for ~6M counts: refused before allocating.
  expect_error(decode(raw(5, 1, std::numeric_limits<std::int64_t>::max(), {0})), "exceeds the limit");
  // A declared payload far beyond what is present is refused, not allocated.
  expect_error(decode(zwrap(raw(3, 1, 1000, {0}, 0x7fffffff))), "exceeds the limit");
  std::vector<std::uint8_t> bad = {0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 4, 1, 2, 3, 4};
  expect_error(decode(bad), "bad zlib data");
}

}  // namespace
}  // namespace shootdown::hdr
