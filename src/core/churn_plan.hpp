// SPDX-License-Identifier: Apache-2.0
// The allocator arms' workload (glibc-malloc, jemalloc, tcmalloc, mimalloc):
// a live set of blocks of mixed sizes built through one allocator, then most
// of it freed in a shuffled order while the rest stays live (fragmentation:
// an allocator cannot return a page that still holds a live object). Pure and
// deterministic: the same live size and seed give the same blocks and order on
// every machine, so two arms (or two runs) free exactly the same pattern.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/expected.hpp"

namespace shootdown {

struct ChurnPlan {
  std::vector<std::uint32_t> sizes;       // bytes of each block, in allocation order
  std::vector<std::uint32_t> free_order;  // indices of the blocks freed by a release, in that order
  std::int64_t live_bytes = 0;            // sum of sizes (what the build-up allocates)
  std::int64_t freed_bytes = 0;           // sum of the freed blocks' sizes
};

inline constexpr std::uint32_t kChurnMinBlock = 16;        // bytes
inline constexpr std::uint32_t kChurnMaxBlock = 1u << 20;  // 1 MiB: above glibc's initial mmap threshold
inline constexpr int kChurnKeepOneIn = 8;                  // every 8th block (by a shuffled choice) stays live
inline constexpr std::uint64_t kChurnSeed = 0x5d0f7a11ULL;

// Sizes log-uniform in [16 B, 1 MiB] until their sum reaches live_bytes (the
// last block is cut to fit); 7 of 8 blocks freed, in a shuffled order.
ChurnPlan make_churn(std::int64_t live_bytes, std::uint64_t seed = kChurnSeed);
// "36412 blocks of 16 B..1 MiB, 7/8 freed in a shuffled order": for reports.
std::string churn_description(const ChurnPlan& plan);

}  // namespace shootdown

namespace shootdown {

enum class ReleaseStrategy;

// --allocator-conf: the allocator's own settings, in its own syntax, passed
// through its own mechanism:
//   glibc-malloc  M_MMAP_THRESHOLD=N,M_TRIM_THRESHOLD=N,M_TOP_PAD=N,M_ARENA_MAX=N,M_MMAP_MAX=N  (mallopt)
//   jemalloc      key:value,...  (MALLOC_CONF, e.g. dirty_decay_ms:0,background_thread:true)
//   tcmalloc      TCMALLOC_NAME=VALUE,...  (its environment, e.g. TCMALLOC_RELEASE_RATE=10)
//   mimalloc      MIMALLOC_NAME=VALUE,...  (its environment, e.g. MIMALLOC_RESET_DELAY=0)
struct AllocatorSetting {
  std::string name, value;
};
// The settings, or an error naming the offending item and what is accepted.
Expected<std::vector<AllocatorSetting>> parse_allocator_conf(ReleaseStrategy s, const std::string& conf);
// What --allocator-conf accepts for s, for errors and help.
std::string allocator_conf_syntax(ReleaseStrategy s);

}  // namespace shootdown
