// SPDX-License-Identifier: Apache-2.0
#include "sys/facts.hpp"

#include <cpuid.h>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <sstream>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/cpulist.hpp"
#include "sys/fs.hpp"
#include "sys/meminfo.hpp"

namespace shootdown::sys {

namespace {

std::optional<std::string> read_trim(const std::string& path) {
  auto s = read_file(path);
  if (!s) return std::nullopt;
  return trim(*s);
}

std::vector<int> read_list(const std::string& path, bool* exists = nullptr) {
  auto s = read_trim(path);
  if (exists) *exists = s.has_value();
  if (!s || s->empty()) return {};
  return parse_cpulist(*s, true).value_or(std::vector<int>{});
}

int read_int(const std::string& path, int fallback) {
  auto s = read_trim(path);
  if (!s) return fallback;
  try {
    return std::stoi(*s);
  } catch (const std::exception&) {
    return fallback;
  }
}

// Directory entries under root(); names only.
std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir((root() + path).c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    out.emplace_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// /proc/<pid>/comm of every process; true when one is `name`.
bool process_running(const std::string& name) {
  for (const auto& pid : list_dir("/proc")) {
    if (!all_digits(pid)) continue;
    auto comm = read_trim("/proc/" + pid + "/comm");
    if (comm && *comm == name) return true;
  }
  return false;
}

std::set<std::string> cpu_flags(const std::string& cpuinfo) {
  std::set<std::string> flags;
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    std::string w;
    while (words >> w) flags.insert(w);
    break;  // first CPU is enough: x86 flags are uniform across CPUs
  }
  return flags;
}

// CapEff from /proc/self/status: CAP_SYS_ADMIN (21) or CAP_PERFMON (38).
bool cap_perfmon(const std::string& status) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    try {
      const unsigned long long caps = std::stoull(trim(line.substr(7)), nullptr, 16);
      return (caps >> 21 & 1ULL) || (caps >> 38 & 1ULL);
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

void read_cpuid(DoctorFacts& f) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  // AMD INVLPGB and TLBSYNC (APM vol. 3, CPUID Fn8000_0008 EBX bit 3). The
  // kernel does not show it in /proc/cpuinfo (X86_FEATURE_INVLPGB has no
  // quoted name in cpufeatures.h, 6.15), so ask the CPU.
  __cpuid(0x80000000U, a, b, c, d);
  if (a >= 0x80000008U) {
    __cpuid(0x80000008U, a, b, c, d);
    f.cpuid_invlpgb = (b >> 3 & 1U) != 0;
  } else {
    f.cpuid_invlpgb = false;
  }
  __cpuid(1, a, b, c, d);
  if (!(c & (1U << 31))) return;  // CPUID.1:ECX.hypervisor
  __cpuid(0x40000000U, a, b, c, d);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &b, 4);
  std::memcpy(vendor + 4, &c, 4);
  std::memcpy(vendor + 8, &d, 4);
  f.hypervisor_vendor = trim(vendor);
  if (f.hypervisor_vendor == "KVMKVMKVM" && a >= 0x40000001U) {
    __cpuid(0x40000001U, a, b, c, d);
    f.kvm_pv_tlb_flush = (a >> 9 & 1U) != 0;  // KVM_FEATURE_PV_TLB_FLUSH (Documentation/virt/kvm/x86/cpuid.rst)
  }
}

// First tracefs mount point in /proc/mounts, "" when none.
std::string tracefs_mount(const std::string& mounts) {
  std::istringstream in(mounts);
  std::string dev, dir, type, rest;
  while (in >> dev >> dir >> type && std::getline(in, rest))
    if (type == "tracefs") return dir;
  return {};
}

std::int64_t rlim_bytes(rlim_t v) {
  return v == RLIM_INFINITY ? -1 : static_cast<std::int64_t>(v);
}

}  // namespace

namespace {

constexpr const char* kCpuDir = "/sys/devices/system/cpu/";

// Online, isolated and nohz_full CPUs, the kernel command line, and per CPU
// its siblings, idle states and frequency governor.
void read_cpu_facts(DoctorFacts& f) {
  const std::string cpu = kCpuDir;
  f.online = read_list(cpu + "online");
  f.isolated = read_list(cpu + "isolated");
  bool nohz_exists = false;
  auto nohz = read_list(cpu + "nohz_full", &nohz_exists);
  if (nohz_exists) f.nohz_full = nohz;
  {
    std::string cl = trim(read_file_or("/proc/cmdline", ""));
    const auto dd = cl.find(" -- ");
    f.cmdline = dd == std::string::npos ? cl : cl.substr(0, dd);
  }
  f.smt_control = read_trim(cpu + "smt/control").value_or("");
  for (int c : f.online) {
    const std::string base = cpu + "cpu" + std::to_string(c) + "/";
    auto sib = read_list(base + "topology/thread_siblings_list");
    f.siblings[c] = sib.empty() ? std::vector<int>{c} : sib;
    // cpuidle states
    std::vector<IdleState> states;
    for (int s = 0; s < 32; ++s) {
      const std::string st = base + "cpuidle/state" + std::to_string(s) + "/";
      auto name = read_trim(st + "name");
      if (!name) break;
      IdleState is;
      is.name = *name;
      is.latency_us = read_int(st + "latency", 0);
      is.disabled = read_int(st + "disable", 0) != 0;
      states.push_back(is);
    }
    if (!states.empty()) f.idle_states[c] = states;
    if (auto g = read_trim(base + "cpufreq/scaling_governor")) f.governor[c] = *g;
    if (f.cpufreq_driver.empty()) f.cpufreq_driver = read_trim(base + "cpufreq/scaling_driver").value_or("");
  }
}

// NUMA nodes, transparent and explicit huge pages.
void read_memory_facts(DoctorFacts& f) {
  for (const auto& e : list_dir("/sys/devices/system/node")) {
    if (e.rfind("node", 0) != 0 || !all_digits(e.substr(4))) continue;
    const int node = std::stoi(e.substr(4));
    ++f.numa_nodes;
    for (int c : read_list("/sys/devices/system/node/" + e + "/cpulist")) f.node_of[c] = node;
  }
  f.thp_enabled = read_thp_mode("enabled");
  if (f.thp_enabled == "unavailable") f.thp_enabled.clear();
  f.thp_defrag = read_thp_mode("defrag");
  if (f.thp_defrag == "unavailable") f.thp_defrag.clear();
  if (auto mi = read_file("/proc/meminfo")) {
    auto m = parse_meminfo(*mi);
    f.hugepages_total = m.get("HugePages_Total", -1);
    f.hugepages_free = m.get("HugePages_Free", -1);
    f.hugepage_size = m.hugepage_size();
  }
}

// cpuidle, interrupt affinity, clocks, CPU flags, vulnerabilities, watchdogs.
void read_noise_facts(DoctorFacts& f) {
  const std::string cpu = kCpuDir;
  f.cpuidle_driver = read_trim(cpu + "cpuidle/current_driver").value_or("");
  f.cpuidle_governor =
      read_trim(cpu + "cpuidle/current_governor").value_or(read_trim(cpu + "cpuidle/current_governor_ro").value_or(""));
  // interrupts: device IRQs are the numbered directories of /proc/irq
  f.irqbalance_running = process_running("irqbalance");
  for (const auto& e : list_dir("/proc/irq")) {
    if (!all_digits(e)) continue;
    bool exists = false;
    auto aff = read_list("/proc/irq/" + e + "/smp_affinity_list", &exists);
    if (exists) f.irq_affinity[std::stoi(e)] = aff;
  }
  f.clocksource = read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource").value_or("");
  f.available_clocksources =
      read_trim("/sys/devices/system/clocksource/clocksource0/available_clocksource").value_or("");
  f.cpu_flags = cpu_flags(read_file_or("/proc/cpuinfo", ""));
  for (const auto& v : list_dir(cpu + "vulnerabilities"))
    if (auto s = read_trim(cpu + "vulnerabilities/" + v)) f.vulnerabilities[v] = *s;
  f.nmi_watchdog = read_int("/proc/sys/kernel/nmi_watchdog", -1);
  f.soft_watchdog = read_int("/proc/sys/kernel/soft_watchdog", -1);
  f.watchdog = read_int("/proc/sys/kernel/watchdog", -1);
  f.stat_interval = read_int("/proc/sys/vm/stat_interval", -1);
}

// The hypervisor, and broadcast TLB invalidation: kernel, CPU, build
// option, Intel RAR; on a fixture tree the measured TLB delivery.
void read_platform_facts(DoctorFacts& f, bool live) {
  f.hypervisor_vendor = read_trim("/sys/hypervisor/type").value_or("");
  if (live)
    read_cpuid(f);
  else if (auto v = read_trim("/proc/shootdown-fixture/hypervisor_vendor")) {
    f.hypervisor_vendor = *v;
    const int pv = read_int("/proc/shootdown-fixture/kvm_pv_tlb_flush", -1);
    if (pv >= 0) f.kvm_pv_tlb_flush = pv != 0;
  }
  f.kernel_release = read_trim("/proc/sys/kernel/osrelease").value_or("");
  if (live) {
    utsname u{};
    if (uname(&u) == 0) f.machine = u.machine;
  } else {
    f.machine = read_trim("/proc/shootdown-fixture/machine").value_or("");
    const int inv = read_int("/proc/shootdown-fixture/cpuid_invlpgb", -1);
    if (inv >= 0) f.cpuid_invlpgb = inv != 0;
  }
  if (!f.kernel_release.empty())
    if (auto cfg = read_file("/boot/config-" + f.kernel_release))
      f.broadcast_config = cfg->find("\nCONFIG_BROADCAST_TLB_FLUSH=y") != std::string::npos ||
                           cfg->find("\nCONFIG_X86_BROADCAST_TLB_FLUSH=y") != std::string::npos;
  // Intel RAR: the kernel's own type information names its code when it has
  // it (core/doctor.hpp DoctorFacts::kernel_rar).
  if (auto btf = read_file("/sys/kernel/btf/vmlinux")) {
    auto names = [&](const char* name) {
      const std::string n = std::string(1, '\0') + name + std::string(1, '\0');
      return btf->find(n) != std::string::npos;
    };
    f.kernel_rar = names("rar_payload") || names("smp_call_rar_many") || names("rar_cpu_init");
  }
  // Fixture trees only ("FROM TO REQUESTS DELIVERED"): live, doctor measures it.
  if (!live)
    if (auto d = read_trim("/proc/shootdown-fixture/tlb_delivery")) {
      DoctorFacts::TlbDelivery t;
      if (std::sscanf(d->c_str(), "%d %d %ld %ld", &t.from_cpu, &t.to_cpu, &t.requests, &t.delivered) == 4)
        f.tlb_delivery = t;
    }
}

// perf_event_paranoid, capabilities, root, RLIMIT_MEMLOCK, tracefs.
void read_permission_facts(DoctorFacts& f, bool live) {
  f.perf_event_paranoid = read_int("/proc/sys/kernel/perf_event_paranoid", 99);
  const std::string status = read_file_or("/proc/self/status", "");
  f.cap_perfmon = cap_perfmon(status);
  if (live) {
    f.is_root = ::geteuid() == 0;
    rlimit rl{};
    if (::getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
      f.memlock_soft = rlim_bytes(rl.rlim_cur);
      f.memlock_hard = rlim_bytes(rl.rlim_max);
    }
  } else {
    f.is_root = read_int("/proc/shootdown-fixture/euid", 1000) == 0;
    const std::string ml = read_trim("/proc/shootdown-fixture/memlock").value_or("");
    if (ml == "unlimited")
      f.memlock_soft = f.memlock_hard = -1;
    else if (!ml.empty()) {
      try {
        f.memlock_soft = f.memlock_hard = std::stoll(ml);
      } catch (const std::exception&) {}
    }
  }
  f.tracefs_supported = read_file_or("/proc/filesystems", "").find("tracefs") != std::string::npos;
  f.tracefs_mount = tracefs_mount(read_file_or("/proc/mounts", ""));
  if (!f.tracefs_mount.empty()) f.tlb_tracepoint = path_exists(f.tracefs_mount + "/events/tlb/tlb_flush/id");
}

}  // namespace

DoctorFacts read_doctor_facts() {
  DoctorFacts f;
  const bool live = root().empty();
  read_cpu_facts(f);
  read_memory_facts(f);
  read_noise_facts(f);
  read_platform_facts(f, live);
  read_permission_facts(f, live);
  return f;
}

}  // namespace shootdown::sys
