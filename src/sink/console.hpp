// Console summary: the article's table (baseline / release window / after,
// per batch and per page), release duration, /proc/interrupts deltas.
// Under 80 columns.
#pragma once

#include <string>

#include "core/analysis_types.hpp"
#include "core/result.hpp"

namespace shootdown::sink {

std::string console_summary(const Result& r, const Analysis& a);
// Kernel trace facts and the stall attribution per victim (empty when off).
std::string attribution_section(const Result& r, const Analysis& a);
// What the probe thread lost to shootdowns (empty without attribution).
std::string probe_summary(const Result& r, const Analysis& a, const std::string& command);
std::string summary_table(const std::string& title, const VictimAnalysis& va, bool per_page);

}  // namespace shootdown::sink
