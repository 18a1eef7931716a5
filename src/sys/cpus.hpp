// CPU topology from sysfs: online CPUs, NUMA node, SMT siblings, isolation.
#pragma once

#include <string>
#include <vector>

namespace shootdown::sys {

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
};

Topology read_topology();  // /sys/devices/system/cpu, honours sys::root()

// Default CPU choice: `count` distinct online CPUs of one NUMA node, not SMT
// siblings of each other, isolated ones first. Empty when impossible.
// Pure over a Topology (unit-tested).
std::vector<int> choose_cpus(const Topology& topo, int count, std::string* why = nullptr);

}  // namespace shootdown::sys
