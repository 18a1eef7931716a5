// SPDX-License-Identifier: Apache-2.0
#include "core/stall_model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/core.h>

#include "core/units.hpp"

namespace shootdown {

double StallModel::overhead_ns_per_ipi() const {
  return std::max(0.0, overhead_ns);
}

std::int64_t StallModel::estimate_ns(std::int64_t handler, std::int64_t irqs) const {
  return handler + static_cast<std::int64_t>(std::llround(overhead_ns_per_ipi() * static_cast<double>(irqs)));
}

std::string StallModel::describe() const {
  return fmt::format(
      "stall per shootdown IPI = its handler time + {} delivery overhead, from {} ({} IPIs: {} stall, {} "
      "in handlers)",
      format_duration_ns(static_cast<std::int64_t>(std::llround(overhead_ns_per_ipi()))), source, ipis,
      format_duration_ns(stall_ns), format_duration_ns(handler_ns));
}

Expected<StallModel> stall_model_from(const Attribution& a, const std::string& source) {
  if (!a.available)
    return Error{"it has no kernel attribution (" + (a.note.empty() ? std::string("trace off") : a.note) + ")"};
  StallModel m;
  m.source = source;
  double weighted = 0;
  std::int64_t weights = 0;
  for (const VictimAttribution& v : a.victims) {
    m.ipis += v.shootdown_ipis;
    m.handler_ns += std::max<std::int64_t>(0, v.handler_ns.total);
    m.stall_ns += v.stall_ns[static_cast<std::size_t>(StallLabel::kTlbShootdown)];
    if (v.handler_ns.count <= 0 || v.stall_per_shootdown.count <= 0) continue;
    const std::int64_t w = v.stall_per_shootdown.count;
    weighted += static_cast<double>(w) * static_cast<double>(v.stall_per_shootdown.p50 - v.handler_ns.p50);
    weights += w;
  }
  if (m.ipis == 0 || m.handler_ns <= 0 || weights == 0) {
    return Error{
        "its victims received no shootdown IPI with a timed handler and a measured stall (nothing to calibrate on)"};
  }
  m.overhead_ns = weighted / static_cast<double>(weights);
  return m;
}

}  // namespace shootdown
