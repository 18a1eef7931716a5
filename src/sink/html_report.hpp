// SPDX-License-Identifier: Apache-2.0
// report.html: one self-contained page (inline CSS, inline SVG, a few lines
// of inline JS for hover values; nothing fetched) that explains a run:
// header, "what this means", phase tables, five charts (percentiles per time
// bucket with release markers, stall time per time bucket stacked by cause,
// raw samples around each release with kernel events as ticks, latency
// distribution per phase, stall time by cause),
// /proc/interrupts deltas and kernel backtraces. How to read it:
// docs/report.md. Pure: builds a string; OutputDir writes it.
//
// Structure the integration test (tests/integration/html_report.sh) relies on:
//   section#summary, table.phases tr.phase-row[data-phase][data-victim]
//   svg[data-chart=timeseries][data-victim][data-scale=log|linear][data-bucket-ns]
//   svg[data-chart=stall-timeline][data-victim][data-attributed=yes|no]
//     [data-coverage=all-samples|raw-windows] with path.stack[data-kind][data-total]
//   svg[data-chart=raw][data-victim][data-release]
//   svg[data-chart=distribution][data-victim]
//   svg[data-chart=stalls][data-victim]
//   body[data-releases][data-victims][data-kernel-evidence=yes|no]
#pragma once

#include <cstdint>
#include <string>

#include "core/analysis_types.hpp"
#include "core/result.hpp"
#include "core/timeline_types.hpp"

namespace shootdown::sink {

// Raw-sample charts drawn per victim (the first releases; the page says how
// many were left out).
inline constexpr int kHtmlMaxReleaseCharts = 6;

// tl: the victims' samples by time bucket (core/timeline.hpp build_timeline
// over the same r and a), for charts 1 and 2.
std::string html_report(const Result& r, const Analysis& a, const Timeline& tl);

}  // namespace shootdown::sink
