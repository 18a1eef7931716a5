// SPDX-License-Identifier: Apache-2.0
// After a measurement, what run, compare and probe record the same way: the
// run's stamp, the environment re-read with the TSC figures measured during
// the run kept, the plan's warnings, the doctor's checklist for its CPUs, and
// the /proc/interrupts counters of the measured span.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "sys/interrupts.hpp"

namespace shootdown::exp {

struct FinishOptions {
  std::string run_id;                 // empty: 8 random hex digits
  std::vector<std::string> warnings;  // from validation (cli), appended after the plan's own
  bool doctor = true;                 // run the doctor's checklist for the plan's CPUs
};

// The environment now, with the TSC figures of `measured` (fitted during the
// run) and the warnings of `plan` followed by `extra`.
Environment environment_after(const Plan& plan, const Environment& measured, const std::vector<std::string>& extra);

// Stamps r (id, UTC start, command line), replaces r.env by
// environment_after(r.plan, r.env, o.warnings) and, with o.doctor, records
// the doctor's findings for the plan's CPUs and a warning for each one that
// undermines the numbers.
void finish_result(Result& r, const FinishOptions& o);

// Per-CPU TLB/CAL/LOC/RES deltas over the span of the two snapshots, each CPU
// with its role in the plan (culprit, victim, other).
std::vector<CpuCounters> cpu_counters(const sys::InterruptsSnapshot& before, const sys::InterruptsSnapshot& after,
                                      const Plan& plan);

}  // namespace shootdown::exp
