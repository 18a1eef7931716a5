// SPDX-License-Identifier: Apache-2.0
// `shootdown compare` outputs: console table (< 80 columns), compare.json,
// compare.csv (one row per trial) and compare.html (per-arm strip/box plots,
// self-contained SVG). Serializers only build strings; OutputDir writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/result.hpp"

namespace shootdown::sink {

inline constexpr int kCompareSchemaVersion = 1;

struct CompareArmInfo {
  std::string label;  // unique ("reuse#2")
  std::string name;   // as given ("thp-munmap")
  ReleaseStrategy strategy = ReleaseStrategy::kReuse;
  PageMode pages = PageMode::k4k;
};

struct CompareReport {
  std::string command_line;
  std::string started_at;
  std::string workload = "memory";   // memory|journal
  std::vector<CompareArmInfo> arms;  // --arms order, first = control
  int trials_per_arm = 0;            // the maximum with sequential stopping
  // Group-sequential stopping (core/sequential); off = the fixed design.
  bool sequential = false;
  sequential::Design design;
  int bootstrap_resamples = 0;
  std::uint64_t seed = 0;
  double duration_s = 0;
  bool complete = true;
  std::string incomplete_reason;
  Plan plan;  // the control arm's plan (CPUs, sizes, durations)
  Environment env;
  std::vector<std::string> notes;             // e.g. where shootdown counts come from
  std::vector<compare::TrialMetrics> trials;  // in run order
  std::vector<compare::ArmSummary> summary;
  std::vector<compare::GateResult> gates;
  bool gate_failed = false;
};

std::string compare_console(const CompareReport& r);
std::string compare_json(const CompareReport& r);
std::string compare_csv(const CompareReport& r);
std::string compare_html(const CompareReport& r);
// The progress line before trial done+1 of total: a bar redrawn in place on a
// terminal (tty), else one line per trial.
std::string compare_progress(bool tty, std::size_t done, std::size_t total, const std::string& arm, double elapsed_s);

}  // namespace shootdown::sink
