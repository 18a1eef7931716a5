// SPDX-License-Identifier: Apache-2.0
// Do remote TLB flushes arrive as IPIs on this machine? A measured fact for
// `doctor` (core/doctor.hpp DoctorFacts::TlbDelivery): a thread pinned to
// from_cpu maps, touches and unmaps one page `requests` times while a second
// thread of this process spins on to_cpu, so every munmap must flush to_cpu's
// TLB. A kernel that flushes by IPI adds one to to_cpu's /proc/interrupts
// TLB row per munmap; a hypervisor's paravirtual flush (Hyper-V, PVM, Xen PV
// hypercalls; KVM for preempted vCPUs) adds nothing the guest can see.
// Changes nothing on the machine; takes a few milliseconds.
#pragma once

#include "core/doctor.hpp"
#include "core/expected.hpp"

namespace shootdown::exp {

Expected<DoctorFacts::TlbDelivery> measure_tlb_delivery(int from_cpu, int to_cpu, int requests);

}  // namespace shootdown::exp
