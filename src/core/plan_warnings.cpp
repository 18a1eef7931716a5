// SPDX-License-Identifier: Apache-2.0
#include "core/plan_warnings.hpp"

namespace shootdown {

std::vector<std::string> plan_warnings(const Environment& env, const Plan& plan) {
  std::vector<std::string> w;
  if (env.build_type.rfind("Release", 0) != 0)
    w.push_back("build type is " + env.build_type + ", not Release: the victim loop is slower and noisier");
  if (!env.constant_tsc || !env.nonstop_tsc)
    w.push_back("TSC is not invariant (constant_tsc/nonstop_tsc missing): timings may drift");
  if (plan.pages == PageMode::k4k && env.thp_enabled == "always")
    w.push_back("transparent_hugepage=always: --pages 4k chunks may still get huge pages");
  return w;
}

std::vector<std::string> doctor_warnings(const std::vector<DoctorFinding>& findings) {
  std::vector<std::string> w;
  for (const auto& f : findings)
    if (f.undermines_numbers && f.status != DoctorStatus::kPass)
      w.push_back(f.name + ": " + f.found + " (see shootdown doctor)");
  return w;
}

}  // namespace shootdown
