// SPDX-License-Identifier: Apache-2.0
// Console summary: the verdict (one line per victim), the article's table
// (baseline / release window / after, per batch and per page), release
// duration, /proc/interrupts deltas, attribution, warnings.
#pragma once

#include <string>
#include <vector>

#include "core/analysis_types.hpp"
#include "core/blame.hpp"
#include "core/result.hpp"

namespace shootdown::sink {

// verbose: every tuning warning on its own line (else one line counting them).
std::string console_summary(const Result& r, const Analysis& a, bool verbose = false);
// The answer for one victim in one sentence (console, report.html and
// result.json `summary` all print this).
std::string verdict_line(const Result& r, const Verdict& v, const VictimVerdict& x);
std::vector<std::string> verdict_lines(const Result& r, const Analysis& a);
// Kernel trace facts and the stall attribution per victim (empty when off).
std::string attribution_section(const Result& r, const Analysis& a);
// Memory workload: the memory the release kept and its price per GiB
// released (core::release_cost); allocator arms first name the allocator and
// its settings. "" for other results.
std::string release_cost_lines(const Result& r, const Analysis& a);
// probe's own report: header (command, pid, CPU, time probed), the verdict,
// shootdowns and stall per second and as a share of the time probed, stall
// per shootdown, the other causes, the kernel's TLB count, warnings.
// One process of the target (r.probe): header line with pid, program and CPU.
std::string probe_summary(const Result& r, const Analysis& a, const std::string& command);
// Every process image of the target the probe saw, in order, with how its
// probe ended (exec, handed over to a child, exited, no free probe CPU ...).
// probe: the target's top call sites (reason-4 flushes its threads sent).
std::string probe_callsites(const BlameReport& r, const BlameOptions& o, const std::string& command);
std::string probe_processes(const std::vector<ProbeProcess>& ps, const std::string& command);
std::string summary_table(const std::string& title, const VictimAnalysis& va, bool per_page);

}  // namespace shootdown::sink
