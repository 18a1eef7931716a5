// SPDX-License-Identifier: Apache-2.0
// CPU list syntax of the kernel (cpuset(7) "List format"): "0-3,8,10-11".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"

namespace shootdown {

// Sorted, duplicates are an error unless allow_duplicates (then dropped); the
// error says what is wrong (the caller names the option).
Expected<std::vector<int>> parse_cpulist(std::string_view text, bool allow_duplicates = false);
std::string format_cpulist(const std::vector<int>& cpus);  // compresses ranges

// A set of CPUs of any size, laid out as the kernel's cpumask: CPU n is bit
// n % 64 of 64-bit word n / 64 (a tracepoint's __data_loc cpumask field is
// nr_cpu_ids bits rounded up to whole longs). Trailing zero words are
// dropped, so two masks of the same CPUs compare equal whatever their size.
class CpuMask {
 public:
  CpuMask() = default;
  explicit CpuMask(std::vector<std::uint64_t> words);
  static CpuMask of(const std::vector<int>& cpus);

  bool test(int cpu) const;
  void set(int cpu);  // cpu >= 0
  int count() const;
  bool empty() const { return words_.empty(); }
  std::vector<int> cpus() const;  // ascending
  const std::vector<std::uint64_t>& words() const { return words_; }
  bool operator==(const CpuMask&) const = default;

 private:
  std::vector<std::uint64_t> words_;
};

std::string format_cpumask(const CpuMask& m);  // format_cpulist(m.cpus()); "" when empty

}  // namespace shootdown
