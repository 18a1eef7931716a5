// SPDX-License-Identifier: Apache-2.0
#include "core/churn_plan.hpp"

#include <algorithm>
#include <cmath>

#include "core/strategy.hpp"
#include "core/units.hpp"

namespace shootdown {

namespace {
// SplitMix64: the same stream on every platform and standard library.
struct Mix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
};
}  // namespace

ChurnPlan make_churn(std::int64_t live_bytes, std::uint64_t seed) {
  ChurnPlan p;
  Mix rng{seed};
  const double span = std::log2(static_cast<double>(kChurnMaxBlock) / kChurnMinBlock);
  while (p.live_bytes < live_bytes) {
    auto size = static_cast<std::int64_t>(kChurnMinBlock * std::exp2(rng.uniform() * span));
    size = std::clamp<std::int64_t>(size, kChurnMinBlock, kChurnMaxBlock);
    size = std::min(size, live_bytes - p.live_bytes);
    p.sizes.push_back(static_cast<std::uint32_t>(size));
    p.live_bytes += size;
  }
  // Fisher–Yates over all blocks; the first 7/8 of the permutation are freed.
  std::vector<std::uint32_t> perm(p.sizes.size());
  for (std::uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  const std::size_t freed = perm.size() - perm.size() / kChurnKeepOneIn;
  p.free_order.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(freed));
  for (auto i : p.free_order) p.freed_bytes += p.sizes[i];
  return p;
}

std::string churn_description(const ChurnPlan& plan) {
  return std::to_string(plan.sizes.size()) + " blocks of " + format_size(kChurnMinBlock) + ".." +
         format_size(kChurnMaxBlock) + " (" + format_size(plan.live_bytes) + "), " +
         std::to_string(plan.free_order.size()) + " of them freed in a shuffled order";
}

}  // namespace shootdown

namespace shootdown {

namespace {
bool all_of_class(const std::string& s, bool upper) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (upper ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z')) || c == '_' || (c >= '0' && c <= '9') ||
                    (!upper && c == '.');
    if (!ok) return false;
  }
  return true;
}
}  // namespace

std::string allocator_conf_syntax(ReleaseStrategy s) {
  switch (s) {
    case ReleaseStrategy::kGlibcMalloc:
      return "mallopt parameters NAME=N,... with NAME one of M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, M_TOP_PAD, "
             "M_ARENA_MAX, M_MMAP_MAX";
    case ReleaseStrategy::kJemalloc:
      return "jemalloc's MALLOC_CONF syntax key:value,..., e.g. dirty_decay_ms:0,background_thread:true";
    case ReleaseStrategy::kTcmalloc:
      return "TCMALLOC_NAME=VALUE,..., e.g. TCMALLOC_RELEASE_RATE=10";
    case ReleaseStrategy::kMimalloc:
      return "MIMALLOC_NAME=VALUE,..., e.g. MIMALLOC_RESET_DELAY=0";
    default:
      return "nothing: --allocator-conf is for the allocator arms (glibc-malloc, jemalloc, tcmalloc, mimalloc)";
  }
}

Expected<std::vector<AllocatorSetting>> parse_allocator_conf(ReleaseStrategy s, const std::string& conf) {
  std::vector<AllocatorSetting> out;
  auto fail = [&](const std::string& item, const std::string& what) -> Expected<std::vector<AllocatorSetting>> {
    return Error{"'" + item + "': " + what + " (accepted: " + allocator_conf_syntax(s) + ")"};
  };
  if (!is_allocator_arm(s)) return fail(conf, "not an allocator arm");
  if (conf.empty()) return out;
  std::size_t start = 0;
  while (start <= conf.size()) {
    const std::size_t comma = conf.find(',', start);
    const std::string item = conf.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? conf.size() + 1 : comma + 1;
    const char sep = s == ReleaseStrategy::kJemalloc ? ':' : '=';
    const std::size_t at = item.find(sep);
    if (at == std::string::npos || at == 0 || at + 1 == item.size())
      return fail(item, std::string("not NAME") + sep + "VALUE");
    AllocatorSetting set{item.substr(0, at), item.substr(at + 1)};
    switch (s) {
      case ReleaseStrategy::kGlibcMalloc: {
        static constexpr const char* kNames[] = {"M_MMAP_THRESHOLD", "M_TRIM_THRESHOLD", "M_TOP_PAD", "M_ARENA_MAX",
                                                 "M_MMAP_MAX"};
        if (std::find(std::begin(kNames), std::end(kNames), set.name) == std::end(kNames))
          return fail(item, "unknown mallopt parameter");
        if (set.value.find_first_not_of("0123456789") != std::string::npos || set.value.size() > 12)
          return fail(item, "the value must be a non-negative integer below 10^12");
        break;
      }
      case ReleaseStrategy::kJemalloc:
        if (!all_of_class(set.name, false)) return fail(item, "not a jemalloc option name");
        break;
      case ReleaseStrategy::kTcmalloc:
        if (set.name.rfind("TCMALLOC_", 0) != 0 || !all_of_class(set.name, true))
          return fail(item, "not a TCMALLOC_ variable");
        break;
      case ReleaseStrategy::kMimalloc:
        if (set.name.rfind("MIMALLOC_", 0) != 0 || !all_of_class(set.name, true))
          return fail(item, "not a MIMALLOC_ variable");
        break;
      default:
        break;
    }
    if (set.value.find_first_of(" \t\n=:,") != std::string::npos && s != ReleaseStrategy::kJemalloc)
      return fail(item, "the value holds a separator");
    out.push_back(std::move(set));
  }
  return out;
}

}  // namespace shootdown
