// SPDX-License-Identifier: Apache-2.0
// Names of ProbeFate (result.hpp), as result.json spells them.
#include <array>
#include <utility>

#include "core/result.hpp"

namespace shootdown {

namespace {
constexpr std::array<std::pair<ProbeFate, std::string_view>, 8> kFates{{
    {ProbeFate::kUntilEnd, "probed-until-end"},
    {ProbeFate::kExited, "exited"},
    {ProbeFate::kExeced, "exec"},
    {ProbeFate::kHandedOver, "handed-over"},
    {ProbeFate::kOverrun, "ring-full"},
    {ProbeFate::kFailed, "failed"},
    {ProbeFate::kNoCpu, "no-probe-cpu"},
    {ProbeFate::kGone, "probe-gone"},
}};
}  // namespace

std::string_view probe_fate_name(ProbeFate f) {
  for (const auto& [k, n] : kFates)
    if (k == f) return n;
  return "unknown";
}

std::optional<ProbeFate> parse_probe_fate(std::string_view s) {
  for (const auto& [k, n] : kFates)
    if (n == s) return k;
  return std::nullopt;
}

}  // namespace shootdown
