// SPDX-License-Identifier: Apache-2.0
#include "core/cpulist.hpp"

#include <algorithm>
#include <bit>
#include <charconv>

namespace shootdown {

namespace {
bool parse_num(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out >= 0 && out < 65536;
}
}  // namespace

Expected<std::vector<int>> parse_cpulist(std::string_view text, bool allow_duplicates) {
  std::vector<int> out;
  auto fail = [](std::string msg) -> Expected<std::vector<int>> { return Error{std::move(msg)}; };
  // Trailing newline as in sysfs files.
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    std::size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_num(item, lo)) return fail("'" + std::string(item) + "' is not a CPU number");
      hi = lo;
    } else {
      if (!parse_num(item.substr(0, dash), lo) || !parse_num(item.substr(dash + 1), hi))
        return fail("'" + std::string(item) + "' is not a CPU range like 2-5");
      if (hi < lo) return fail("range '" + std::string(item) + "' is reversed");
    }
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  auto dup = std::adjacent_find(out.begin(), out.end());
  if (dup != out.end()) {
    if (!allow_duplicates) return fail("CPU " + std::to_string(*dup) + " is listed twice");
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

std::string format_cpulist(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

CpuMask::CpuMask(std::vector<std::uint64_t> words) : words_(std::move(words)) {
  while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

CpuMask CpuMask::of(const std::vector<int>& cpus) {
  CpuMask m;
  for (int c : cpus)
    if (c >= 0) m.set(c);
  return m;
}

bool CpuMask::test(int cpu) const {
  if (cpu < 0) return false;
  const auto w = static_cast<std::size_t>(cpu) / 64;
  return w < words_.size() && ((words_[w] >> (static_cast<unsigned>(cpu) % 64)) & 1u);
}

void CpuMask::set(int cpu) {
  if (cpu < 0) return;
  const auto w = static_cast<std::size_t>(cpu) / 64;
  if (words_.size() <= w) words_.resize(w + 1, 0);
  words_[w] |= std::uint64_t{1} << (static_cast<unsigned>(cpu) % 64);
}

int CpuMask::count() const {
  int n = 0;
  for (std::uint64_t w : words_) n += std::popcount(w);
  return n;
}

std::vector<int> CpuMask::cpus() const {
  std::vector<int> out;
  for (std::size_t w = 0; w < words_.size(); ++w)
    for (std::uint64_t bits = words_[w]; bits; bits &= bits - 1)
      out.push_back(static_cast<int>(64 * w) + std::countr_zero(bits));
  return out;
}

std::string format_cpumask(const CpuMask& m) {
  return format_cpulist(m.cpus());
}

}  // namespace shootdown
