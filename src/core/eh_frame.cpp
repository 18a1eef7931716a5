// SPDX-License-Identifier: Apache-2.0
#include "core/eh_frame.hpp"

#include <cstring>

namespace shootdown {

namespace {

constexpr std::uint8_t kOmit = 0xff;
constexpr std::uint8_t kDatarelSdata4 = 0x3b;  // DW_EH_PE_datarel | DW_EH_PE_sdata4

bool read_i32(std::span<const std::uint8_t> b, std::size_t off, std::int32_t& v) {
  if (off > b.size() || b.size() - off < 4) return false;
  std::memcpy(&v, b.data() + off, 4);
  return true;
}

// The value of a pointer field at `off` with encoding `enc` (absptr/udata4/
// sdata4, optionally pcrel/datarel); false for any other encoding.
bool read_ptr(const EhSection& s, std::size_t& off, std::uint8_t enc, std::uint64_t datarel_base, std::uint64_t& v) {
  const std::uint8_t format = enc & 0x0f, app = enc & 0x70;
  std::uint64_t raw = 0;
  const std::uint64_t field_addr = s.addr + off;
  if (format == 0x03 || format == 0x0b) {  // udata4, sdata4
    std::int32_t x = 0;
    if (!read_i32(s.bytes, off, x)) return false;
    raw = format == 0x0b ? static_cast<std::uint64_t>(static_cast<std::int64_t>(x)) : static_cast<std::uint32_t>(x);
    off += 4;
  } else if (format == 0x00 || format == 0x04 || format == 0x0c) {  // absptr, udata8, sdata8
    if (off > s.bytes.size() || s.bytes.size() - off < 8) return false;
    std::memcpy(&raw, s.bytes.data() + off, 8);
    off += 8;
  } else {
    return false;
  }
  if (app == 0x10)
    raw += field_addr;  // pcrel
  else if (app == 0x30)
    raw += datarel_base;  // datarel
  else if (app != 0)
    return false;
  v = raw;
  return true;
}

}  // namespace

std::optional<std::uint64_t> eh_frame_function_start(const EhSection& hdr, const EhSection& eh, std::uint64_t addr) {
  const auto& h = hdr.bytes;
  if (h.size() < 4 || h[0] != 1) return std::nullopt;
  const std::uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
  if (ptr_enc == kOmit || count_enc == kOmit || table_enc != kDatarelSdata4) return std::nullopt;
  std::size_t off = 4;
  std::uint64_t eh_ptr = 0, count = 0;
  if (!read_ptr(hdr, off, ptr_enc, hdr.addr, eh_ptr) || !read_ptr(hdr, off, count_enc, hdr.addr, count))
    return std::nullopt;
  if (count == 0 || (h.size() - off) / 8 < count) return std::nullopt;
  // Sorted (initial location, FDE address) pairs: the last start <= addr.
  auto entry = [&](std::uint64_t i, std::int32_t& loc, std::int32_t& fde) {
    return read_i32(h, off + i * 8, loc) && read_i32(h, off + i * 8 + 4, fde);
  };
  std::uint64_t lo = 0, hi = count;  // first entry whose start > addr
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    std::int32_t loc = 0, fde = 0;
    if (!entry(mid, loc, fde)) return std::nullopt;
    if (hdr.addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(loc)) <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return std::nullopt;
  std::int32_t loc = 0, fde_rel = 0;
  if (!entry(lo - 1, loc, fde_rel)) return std::nullopt;
  const std::uint64_t start = hdr.addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(loc));
  const std::uint64_t fde_addr = hdr.addr + static_cast<std::uint64_t>(static_cast<std::int64_t>(fde_rel));
  // The FDE: length, CIE pointer, pc_begin (pcrel sdata4, as GNU ld and the
  // assembler write it: checked against the table), pc_range.
  if (fde_addr < eh.addr || fde_addr - eh.addr >= eh.bytes.size()) return std::nullopt;
  std::size_t fo = static_cast<std::size_t>(fde_addr - eh.addr);
  std::int32_t length = 0, cie = 0;
  if (!read_i32(eh.bytes, fo, length) || length <= 8 || !read_i32(eh.bytes, fo + 4, cie) || cie == 0)
    return std::nullopt;
  fo += 8;
  std::uint64_t begin = 0, range = 0;
  if (!read_ptr(eh, fo, 0x1b, 0, begin) || begin != start || !read_ptr(eh, fo, 0x03, 0, range)) return std::nullopt;
  if (addr >= start + range) return std::nullopt;  // in a gap between FDEs
  return start;
}

}  // namespace shootdown
