// SPDX-License-Identifier: Apache-2.0
// The function that holds an address in a module without symbols, from its
// .eh_frame_hdr search table and .eh_frame FDEs (pure: section bytes and
// their ELF addresses in, no file access). `shootdown blame` names a frame
// of a stripped library by this start so every instruction of one function
// is one call-site frame.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace shootdown {

struct EhSection {
  std::span<const std::uint8_t> bytes;
  std::uint64_t addr = 0;  // ELF virtual address of bytes[0]
};

// Start (ELF address) of the FDE covering addr, or nullopt when the table is
// not the linker's usual encoding (version 1, table DW_EH_PE_datarel|sdata4,
// FDE pc_begin pcrel|sdata4), or no FDE covers addr.
std::optional<std::uint64_t> eh_frame_function_start(const EhSection& hdr, const EhSection& eh_frame,
                                                     std::uint64_t addr);

}  // namespace shootdown
