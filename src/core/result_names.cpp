// SPDX-License-Identifier: Apache-2.0
// Names of the enums of result.hpp (ProbeFate, Trigger, TraceMode), as
// result.json spells them.
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
template <class E, std::size_t N>
std::string_view name_in(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [k, n] : table)
    if (k == e) return n;
  return "unknown";
}
template <class E, std::size_t N>
std::optional<E> parse_in(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [k, n] : table)
    if (n == s) return k;
  return std::nullopt;
}
}  // namespace

std::string_view probe_fate_name(ProbeFate f) {
  return name_in(kFates, f);
}

std::optional<ProbeFate> parse_probe_fate(std::string_view s) {
  return parse_in(kFates, s);
}

namespace {
constexpr std::array<std::pair<Trigger, std::string_view>, 3> kTriggers{{
    {Trigger::kAfter, "after"},
    {Trigger::kEnter, "enter"},
    {Trigger::kCommand, "command"},
}};
constexpr std::array<std::pair<TraceMode, std::string_view>, 6> kTraceModes{{
    {TraceMode::kAuto, "auto"},
    {TraceMode::kOn, "on"},
    {TraceMode::kOff, "off"},
    {TraceMode::kCount, "count"},
    {TraceMode::kBpf, "bpf"},
    {TraceMode::kRing, "ring"},
}};
}  // namespace

const char* to_string(CpuRole r) {
  switch (r) {
    case CpuRole::kCulprit:
      return "culprit";
    case CpuRole::kVictim:
      return "victim";
    case CpuRole::kOther:
      return "other";
  }
  return "other";
}

std::optional<CpuRole> parse_cpu_role(std::string_view s) {
  for (CpuRole r : {CpuRole::kCulprit, CpuRole::kVictim, CpuRole::kOther})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

std::optional<Phase> parse_phase(std::string_view s) {
  for (Phase p : {Phase::kBaseline, Phase::kRelease, Phase::kAfter})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::string_view trigger_name(Trigger t) {
  return name_in(kTriggers, t);
}
std::optional<Trigger> parse_trigger(std::string_view s) {
  return parse_in(kTriggers, s);
}
std::string_view trace_mode_name(TraceMode m) {
  return name_in(kTraceModes, m);
}
std::optional<TraceMode> parse_trace_mode(std::string_view s) {
  return parse_in(kTraceModes, s);
}

}  // namespace shootdown
