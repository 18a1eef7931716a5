// SPDX-License-Identifier: Apache-2.0
// CPU list syntax of the kernel (cpuset(7) "List format"): "0-3,8,10-11".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shootdown {

// Sorted, duplicates are an error (the caller names the option).
std::optional<std::vector<int>> parse_cpulist(std::string_view text, std::string* why = nullptr,
                                              bool allow_duplicates = false);
std::string format_cpulist(const std::vector<int>& cpus);  // compresses ranges

}  // namespace shootdown
