// SPDX-License-Identifier: Apache-2.0
#include "sys/cpus.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/cpulist.hpp"
#include "sys/fs.hpp"

namespace shootdown::sys {

namespace {
std::vector<int> list_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return {};
  return parse_cpulist(*text, true).value_or(std::vector<int>{});
}
int int_file(const std::string& path, int fallback) {
  auto text = read_file(path);
  if (!text) return fallback;
  try {
    return std::stoi(*text);
  } catch (...) {
    return fallback;
  }
}
}  // namespace

Topology read_topology() {
  Topology t;
  const std::string base = "/sys/devices/system/cpu/";
  t.online = list_file(base + "online");
  auto present = list_file(base + "present");
  if (present.empty()) present = t.online;
  t.isolated = list_file(base + "isolated");
  t.nohz_full = list_file(base + "nohz_full");
  // NUMA node membership.
  std::map<int, int> node_of;
  for (int node = 0; node < 1024; ++node) {
    auto text = read_file("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
    if (!text) {
      if (node > 64) break;
      continue;
    }
    auto l = parse_cpulist(*text, true);
    if (l)
      for (int c : *l) node_of[c] = node;
  }
  for (int c : present) {
    CpuInfo ci;
    ci.cpu = c;
    ci.online = t.is_online(c);
    ci.node = node_of.count(c) ? node_of[c] : 0;
    const std::string topo = base + "cpu" + std::to_string(c) + "/topology/";
    ci.core_id = int_file(topo + "core_id", -1);
    ci.package_id = int_file(topo + "physical_package_id", -1);
    ci.siblings = list_file(topo + "thread_siblings_list");
    if (ci.siblings.empty()) ci.siblings = {c};
    ci.isolated = std::find(t.isolated.begin(), t.isolated.end(), c) != t.isolated.end();
    ci.nohz_full = std::find(t.nohz_full.begin(), t.nohz_full.end(), c) != t.nohz_full.end();
    t.cpus.push_back(ci);
  }
  return t;
}

}  // namespace shootdown::sys
