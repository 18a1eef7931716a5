// SPDX-License-Identifier: Apache-2.0
// Reads the facts `shootdown doctor` checks (core/doctor.hpp) from /proc,
// /sys and cpuid. Everything under /proc and /sys goes through sys::read_file,
// so sys::set_root() points the reader at a fixture tree. Process facts that
// are not files (euid, RLIMIT_MEMLOCK, cpuid) are read from the live process
// only when root() is "" (production); under a fixture root they come from
// optional fixture files (see tests/fixtures/doctor/README.md). No policy here.
#pragma once

#include "core/doctor.hpp"

namespace shootdown::sys {

DoctorFacts read_doctor_facts();

}  // namespace shootdown::sys
