// SPDX-License-Identifier: Apache-2.0
#include "experiment/finish.hpp"

#include <algorithm>

#include "core/doctor.hpp"
#include "core/plan_warnings.hpp"
#include "sys/environment.hpp"
#include "sys/facts.hpp"
#include "sys/wallclock.hpp"

namespace shootdown::exp {

Environment environment_after(const Plan& plan, const Environment& measured, const std::vector<std::string>& extra) {
  Environment env = sys::read_environment();
  env.tsc_hz = measured.tsc_hz;
  env.tsc_hz_pre = measured.tsc_hz_pre;
  env.tsc_drift_ppm = measured.tsc_drift_ppm;
  env.warnings = plan_warnings(env, plan);
  env.warnings.insert(env.warnings.end(), extra.begin(), extra.end());
  return env;
}

void finish_result(Result& r, const FinishOptions& o) {
  r.run_id = o.run_id.empty() ? sys::make_run_id() : o.run_id;
  r.started_at = sys::iso_now();
  r.command_line = sys::read_cmdline_self();
  r.env = environment_after(r.plan, r.env, o.warnings);
  if (!o.doctor) return;
  std::vector<int> cpus{r.plan.culprit_cpu};
  cpus.insert(cpus.end(), r.plan.victim_cpus.begin(), r.plan.victim_cpus.end());
  r.doctor = run_doctor_checks(sys::read_doctor_facts(), cpus);
  for (auto& w : doctor_warnings(r.doctor)) r.env.warnings.push_back(std::move(w));
}

std::vector<CpuCounters> cpu_counters(const sys::InterruptsSnapshot& before, const sys::InterruptsSnapshot& after,
                                      const Plan& plan) {
  const auto& victims = plan.victim_cpus;
  std::vector<CpuCounters> out;
  for (int cpu : after.cpus) {
    CpuCounters c;
    c.cpu = cpu;
    c.role = cpu == plan.culprit_cpu                                           ? CpuRole::kCulprit
             : std::find(victims.begin(), victims.end(), cpu) != victims.end() ? CpuRole::kVictim
                                                                               : CpuRole::kOther;
    c.tlb = sys::interrupts_delta(before, after, "TLB", cpu);
    c.cal = sys::interrupts_delta(before, after, "CAL", cpu);
    c.loc = sys::interrupts_delta(before, after, "LOC", cpu);
    c.res = sys::interrupts_delta(before, after, "RES", cpu);
    out.push_back(c);
  }
  return out;
}

}  // namespace shootdown::exp
