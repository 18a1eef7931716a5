// Facts about this machine recorded with every result.
#pragma once

#include "core/result.hpp"

namespace shootdown::sys {

Environment read_environment();
// Facts that undermine the numbers for this plan (SMT siblings, not
// isolated, VM, debug build, THP mode vs --pages, ...). Pure over inputs.
std::vector<std::string> plan_warnings(const Environment& env, const Plan& plan);

}  // namespace shootdown::sys
