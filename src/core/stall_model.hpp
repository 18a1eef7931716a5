// SPDX-License-Identifier: Apache-2.0
// The per-machine stall model `monitor` and `blame` estimate with: what a
// shootdown IPI costs the thread it interrupts, measured by `run` on the
// same machine, applied to the handler time the kernel measures in
// production.
//
//   stall per IPI = handler time (entry -> exit, measured per interrupt)
//                 + delivery overhead (measured once by run: the median
//                   stall per shootdown IPI minus the median handler time)
//
// Why this model: the handler is what the kernel can time cheaply
// everywhere; the rest (IPI delivery, interrupt entry and exit, in a VM the
// exits, the refill of what the flush evicted) is a per-machine constant
// that only a victim thread timing itself can see. Keeping the handler term
// measured lets the estimate follow flushes that take longer (more pages,
// a full flush) or shorter (run's own tracing inflates its handler time
// and its stall alike; the difference carries over). The overhead from
// medians: on this guest a calibration run now and then meets a few long
// stalls (the host's own bursts) and its mean overhead doubles (15.7 to
// 30.3 us across runs of one hour), which a mean would carry into every
// estimate; its median moves far less. The handler term stays a sum.
#pragma once

#include <cstdint>
#include <string>

#include "core/attribution_types.hpp"
#include "core/expected.hpp"

namespace shootdown {

struct StallModel {
  std::string source;           // where it was measured (a run's result.json)
  std::int64_t ipis = 0;        // shootdown IPIs the victims of that run received
  std::int64_t handler_ns = 0;  // their handler time
  std::int64_t stall_ns = 0;    // the victims' tlb-shootdown stall (excess over the baseline median)
  double overhead_ns = 0;       // per IPI: median stall - median handler, victims weighted by their IPIs

  // Delivery overhead per IPI, ns (never below 0).
  double overhead_ns_per_ipi() const;
  // Estimated stall of `irqs` shootdown IPIs whose handlers took handler_ns.
  std::int64_t estimate_ns(std::int64_t handler_ns, std::int64_t irqs) const;
  std::string describe() const;  // "stall/IPI = handler + 27.9 us (run X: 29 IPIs, ...)"
};

// From a run's kernel-verified attribution: an error when it has none or its
// victims received no shootdown IPI (nothing to calibrate on).
Expected<StallModel> stall_model_from(const Attribution& a, const std::string& source);

}  // namespace shootdown
