// SPDX-License-Identifier: Apache-2.0
#include "sys/environment.hpp"

#include <algorithm>
#include <cpuid.h>
#include <cstring>
#include <sstream>
#include <sys/utsname.h>
#include <unistd.h>

#include "sys/cpus.hpp"
#include "sys/fs.hpp"
#include "sys/meminfo.hpp"

namespace shootdown::sys {

namespace {
// CPUID leaf 0x40000000: hypervisor vendor signature ("KVMKVMKVM", "VMwareVMware",
// "Microsoft Hv", "XenVMMXenVMM", "TCGTCGTCGTCG") when the hypervisor bit is set.
std::string cpuid_hypervisor() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __cpuid(0x40000000, eax, ebx, ecx, edx);
  char sig[13] = {};
  std::memcpy(sig, &ebx, 4);
  std::memcpy(sig + 4, &ecx, 4);
  std::memcpy(sig + 8, &edx, 4);
  std::string s(sig);
  if (s.rfind("KVMKVMKVM", 0) == 0) return "KVM";
  if (s == "VMwareVMware") return "VMware";
  if (s == "Microsoft Hv") return "Hyper-V";
  if (s == "XenVMMXenVMM") return "Xen";
  if (s == "TCGTCGTCGTCG") return "QEMU TCG";
  return s;
}

bool has_flag(const std::string& flags, const std::string& f) {
  std::istringstream in(flags);
  std::string tok;
  while (in >> tok)
    if (tok == f) return true;
  return false;
}
}  // namespace

Environment read_environment() {
  Environment e;
  utsname u{};
  if (uname(&u) == 0) {
    e.kernel = u.release;
    e.kernel_version = u.version;
    e.machine = u.machine;
    e.hostname = u.nodename;
  }
  const std::string cpuinfo = read_file_or("/proc/cpuinfo", "");
  std::istringstream in(cpuinfo);
  std::string line, flags;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string val = trim(line.substr(colon + 1));
    if (key == "model name" && e.cpu_model.empty()) e.cpu_model = val;
    if (key == "flags" && flags.empty()) flags = val;
  }
  e.virtualized = has_flag(flags, "hypervisor");
  e.constant_tsc = has_flag(flags, "constant_tsc");
  e.nonstop_tsc = has_flag(flags, "nonstop_tsc");
  e.pcid = has_flag(flags, "pcid");
  e.invpcid = has_flag(flags, "invpcid");
  e.hypervisor = trim(read_file_or("/sys/hypervisor/type", ""));
  if (e.hypervisor.empty() && e.virtualized) e.hypervisor = cpuid_hypervisor();
  if (e.hypervisor.empty() && e.virtualized) {
    const std::string vendor = trim(read_file_or("/sys/class/dmi/id/sys_vendor", ""));
    const std::string product = trim(read_file_or("/sys/class/dmi/id/product_name", ""));
    e.hypervisor = vendor.empty() && product.empty() ? "unknown" : trim(vendor + " " + product);
    if (has_flag(flags, "kvm") || cpuinfo.find("KVM") != std::string::npos) e.hypervisor += " (KVM)";
  }
  e.cmdline = trim(read_file_or("/proc/cmdline", ""));
  e.thp_enabled = read_thp_mode("enabled");
  e.thp_defrag = read_thp_mode("defrag");
  e.clocksource = trim(read_file_or("/sys/devices/system/clocksource/clocksource0/current_clocksource", ""));
  const Topology t = read_topology();
  e.online_cpus = static_cast<int>(t.online.size());
  int nodes = 0;
  for (int n = 0; n < 1024; ++n)
    if (path_exists("/sys/devices/system/node/node" + std::to_string(n))) ++nodes;
  e.numa_nodes = std::max(1, nodes);
  e.build_type = SHOOTDOWN_BUILD_TYPE;
  e.version = SHOOTDOWN_VERSION;
  return e;
}

}  // namespace shootdown::sys
