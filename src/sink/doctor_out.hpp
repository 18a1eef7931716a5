// SPDX-License-Identifier: Apache-2.0
// `shootdown doctor` outputs as bytes: the findings table (under 80
// columns), the whole text report and the JSON document (docs/doctor.md).
#pragma once

#include <string>
#include <vector>

#include "core/doctor.hpp"

namespace shootdown::sink {

struct DoctorReport {
  std::vector<int> cpus;
  std::string cpu_choice;  // "given" or "default choice of run"
  std::vector<DoctorFinding> findings;
  DoctorSummary summary;
  std::string cmdline;       // suggested kernel command line
  std::string cmdline_note;  // what else to do, may be empty
};

std::string format_doctor_table(const std::vector<DoctorFinding>& findings, int width = 79);
std::string doctor_text(const DoctorReport& r);
std::string doctor_json(const DoctorReport& r);

}  // namespace shootdown::sink
