// SPDX-License-Identifier: Apache-2.0
// CPU topology as data and the default CPU choice of run/doctor/trace.
// Pure (standard library only): src/sys/cpus.cpp fills a Topology from
// sysfs, the policy here decides (unit-tested in tests/unit/cpu_choice_test.cpp).
#pragma once

#include <string>
#include <vector>

namespace shootdown {

struct CpuInfo {
  int cpu = -1;
  bool online = false;
  int node = 0;  // NUMA node (0 when the kernel has no NUMA)
  int core_id = -1;
  int package_id = -1;
  std::vector<int> siblings;  // SMT siblings including itself
  bool isolated = false;      // isolcpus=
  bool nohz_full = false;     // nohz_full=
};

struct Topology {
  std::vector<CpuInfo> cpus;  // every present CPU
  std::vector<int> online;
  std::vector<int> isolated;
  std::vector<int> nohz_full;

  const CpuInfo* find(int cpu) const;
  bool is_online(int cpu) const;
  bool smt_siblings(int a, int b) const;  // distinct CPUs sharing a core
  // Online, neither isolated nor nohz_full: where the kernel keeps its
  // housekeeping work (and CPU 0, which always does some).
  bool housekeeping(int cpu) const;
};

struct CpuChoice {
  int culprit = -1;
  std::vector<int> victims;
  std::string why;  // one line: why these CPUs, or why no choice is possible
  bool ok() const { return culprit >= 0 && !victims.empty(); }
  std::vector<int> cpus() const;  // culprit first, then the victims
};

// Default choice of a culprit and `victims` victim CPUs. The victims get the
// best CPUs: isolated and nohz_full first (then either), CPU 0 last (it keeps
// boot-time housekeeping work), never sharing a core with each other or with
// the culprit. The culprit goes to a housekeeping CPU of the victims' NUMA
// node that shares no core with a victim; it takes an isolated CPU only when
// the node has no housekeeping CPU left. Among nodes, the one whose victims
// rank best wins (then a housekeeping culprit, then the lower node).
CpuChoice choose_cpus(const Topology& topo, int victims);

}  // namespace shootdown
