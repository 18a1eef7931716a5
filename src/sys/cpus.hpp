// SPDX-License-Identifier: Apache-2.0
// CPU topology from sysfs: online CPUs, NUMA node, SMT siblings, isolation.
// The data type and the choice policy live in core/cpu_choice.hpp.
#pragma once

#include "core/cpu_choice.hpp"

namespace shootdown::sys {

using CpuInfo = shootdown::CpuInfo;
using Topology = shootdown::Topology;

Topology read_topology();  // /sys/devices/system/cpu, honours sys::root()

}  // namespace shootdown::sys
