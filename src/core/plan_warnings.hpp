// SPDX-License-Identifier: Apache-2.0
// Facts of the environment that undermine the numbers of a plan. Pure.
#pragma once

#include <string>
#include <vector>

#include "core/doctor.hpp"
#include "core/result.hpp"

namespace shootdown {

// Debug build, TSC not invariant, THP mode against --pages 4k. VM, isolation
// and the rest of the tuning list come from the doctor checks.
std::vector<std::string> plan_warnings(const Environment& env, const Plan& plan);
// One line per doctor finding that is not a pass and undermines the numbers.
std::vector<std::string> doctor_warnings(const std::vector<DoctorFinding>& findings);

}  // namespace shootdown
