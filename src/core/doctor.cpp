// SPDX-License-Identifier: Apache-2.0
#include "core/doctor.hpp"

#include <algorithm>
#include <sstream>

#include "core/attribution.hpp"
#include "core/cpulist.hpp"

namespace shootdown {

const char* to_string(DoctorStatus s) {
  switch (s) {
    case DoctorStatus::kPass:
      return "PASS";
    case DoctorStatus::kWarn:
      return "WARN";
    case DoctorStatus::kFail:
      return "FAIL";
  }
  return "?";
}

namespace {

DoctorFinding make(DoctorStatus s, std::string name, std::string found, std::string advice = {},
                   bool undermines = false) {
  DoctorFinding d;
  d.status = s;
  d.name = std::move(name);
  d.found = std::move(found);
  d.advice = std::move(advice);
  d.undermines_numbers = undermines && s != DoctorStatus::kPass;
  return d;
}

DoctorFinding pass(std::string name, std::string found) {
  return make(DoctorStatus::kPass, std::move(name), std::move(found));
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int> missing_from(const std::vector<int>& cpus, const std::vector<int>& set) {
  std::vector<int> out;
  for (int c : cpus)
    if (!contains(set, c)) out.push_back(c);
  return out;
}

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string list(const std::vector<int>& cpus) {
  return format_cpulist(sorted_unique(cpus));
}

std::string plural_cpu(const std::vector<int>& cpus) {
  return (cpus.size() == 1 ? "cpu " : "cpus ") + list(cpus);
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// Kernel words of the command line: everything before a lone "--" (the
// rest goes to init).
std::vector<std::string> kernel_words(const std::string& cmdline) {
  std::vector<std::string> words;
  std::istringstream in(cmdline);
  std::string w;
  while (in >> w) {
    if (w == "--") break;
    words.push_back(w);
  }
  return words;
}

}  // namespace

std::optional<std::string> cmdline_param(const std::string& cmdline, const std::string& key) {
  std::optional<std::string> value;
  for (const auto& w : kernel_words(cmdline)) {
    if (w == key)
      value = "";
    else if (starts_with(w, key + "="))
      value = w.substr(key.size() + 1);  // last one wins, as in the kernel
  }
  return value;
}

bool cmdline_flag(const std::string& cmdline, const std::string& key) {
  return cmdline_param(cmdline, key).has_value();
}

std::vector<int> cmdline_cpus(const std::string& value, const std::vector<int>& online) {
  if (value == "all") return online;
  // isolcpus=[flag,...,]cpu-list: flags are words, the list starts at the
  // first token that begins with a digit.
  std::string rest = value;
  while (!rest.empty() && !(rest[0] >= '0' && rest[0] <= '9')) {
    const auto comma = rest.find(',');
    if (comma == std::string::npos) return {};
    rest = rest.substr(comma + 1);
  }
  return parse_cpulist(rest, true).value_or(std::vector<int>{});
}

DoctorFinding check_cpus_online(const DoctorFacts& f, const std::vector<int>& cpus) {
  if (f.online.empty())
    return make(DoctorStatus::kWarn, "cpus", "online CPU list unreadable", "check /sys/devices/system/cpu/online");
  auto off = missing_from(cpus, f.online);
  if (!off.empty())
    return make(DoctorStatus::kFail, "cpus", plural_cpu(off) + " not online (online: " + list(f.online) + ")",
                "choose online CPUs with --cpus, or echo 1 > /sys/devices/system/cpu/cpuN/online", true);
  return pass("cpus", plural_cpu(cpus) + " online of " + list(f.online));
}

std::vector<int> isolation_targets(const std::vector<int>& cpus) {
  std::vector<int> out;
  for (std::size_t i = cpus.size() > 1 ? 1 : 0; i < cpus.size(); ++i)
    if (cpus[i] != 0 && !contains(out, cpus[i])) out.push_back(cpus[i]);
  return out;
}

namespace {
// A victim on CPU 0 cannot be tuned: CPU 0 keeps the boot CPU's housekeeping
// (timekeeping, unbound kthreads, most IRQs); the fix is another victim CPU.
bool victim_on_cpu0(const std::vector<int>& cpus) {
  for (std::size_t i = cpus.size() > 1 ? 1 : 0; i < cpus.size(); ++i)
    if (cpus[i] == 0) return true;
  return false;
}
const char* kCpu0Advice =
    "move the victim off CPU 0 (--victim-cpus): CPU 0 keeps housekeeping work and must not be isolated";
}  // namespace

DoctorFinding check_isolcpus(const DoctorFacts& f, const std::vector<int>& cpus) {
  const auto targets = isolation_targets(cpus);
  auto not_iso = missing_from(targets, f.isolated);
  if (victim_on_cpu0(cpus))
    return make(DoctorStatus::kWarn, "isolcpus", "victim on cpu 0 (housekeeping)", kCpu0Advice, true);
  if (not_iso.empty()) return pass("isolcpus", plural_cpu(targets) + " isolated");
  const std::string found = f.isolated.empty() ? "no isolated CPUs" : plural_cpu(not_iso) + " not isolated";
  return make(DoctorStatus::kWarn, "isolcpus", found,
              "boot with isolcpus=" + list(not_iso) + " so tasks and kthreads stay off the victim CPUs", true);
}

DoctorFinding check_nohz_full(const DoctorFacts& f, const std::vector<int>& cpus) {
  if (!f.nohz_full)
    return make(DoctorStatus::kWarn, "nohz_full", "kernel without NO_HZ_FULL",
                "use a kernel with CONFIG_NO_HZ_FULL=y (the tick interrupts the victim)", true);
  const auto targets = isolation_targets(cpus);
  if (victim_on_cpu0(cpus))
    return make(DoctorStatus::kWarn, "nohz_full", "victim on cpu 0 (housekeeping)", kCpu0Advice, true);
  auto missing = missing_from(targets, *f.nohz_full);
  if (missing.empty()) return pass("nohz_full", plural_cpu(targets) + " tickless");
  return make(DoctorStatus::kWarn, "nohz_full", plural_cpu(missing) + " not nohz_full",
              "boot with nohz_full=" + list(missing) + " (the tick adds stalls)", true);
}

DoctorFinding check_rcu_nocbs(const DoctorFacts& f, const std::vector<int>& cpus) {
  // No sysfs file lists offloaded CPUs; the command line is the evidence.
  // nohz_full= implies rcu_nocbs= for those CPUs (kernel/rcu/tree_nocb.h).
  std::vector<int> offloaded;
  if (auto v = cmdline_param(f.cmdline, "rcu_nocbs")) {
    if (v->empty())
      offloaded = f.online;  // bare rcu_nocbs (5.x+): all CPUs
    else
      offloaded = cmdline_cpus(*v, f.online);
  }
  if (f.nohz_full)
    for (int c : *f.nohz_full) offloaded.push_back(c);
  const auto targets = isolation_targets(cpus);
  if (victim_on_cpu0(cpus))
    return make(DoctorStatus::kWarn, "rcu_nocbs", "victim on cpu 0 (housekeeping)", kCpu0Advice, true);
  auto missing = missing_from(targets, offloaded);
  if (missing.empty()) return pass("rcu_nocbs", "RCU callbacks offloaded from " + plural_cpu(targets));
  return make(DoctorStatus::kWarn, "rcu_nocbs", "RCU callbacks run on " + plural_cpu(missing),
              "boot with rcu_nocbs=" + list(missing) + " rcu_nocb_poll", true);
}

DoctorFinding check_smt(const DoctorFacts& f, const std::vector<int>& cpus) {
  // Chosen CPUs that share a core: the "remote" flush is a local one and
  // the victim competes with the culprit for the core.
  for (std::size_t i = 0; i < cpus.size(); ++i)
    for (std::size_t j = i + 1; j < cpus.size(); ++j) {
      auto it = f.siblings.find(cpus[i]);
      if (it != f.siblings.end() && contains(it->second, cpus[j]))
        return make(DoctorStatus::kFail, "smt",
                    "cpus " + std::to_string(cpus[i]) + "," + std::to_string(cpus[j]) + " are SMT siblings",
                    "pick CPUs on different cores (see thread_siblings_list)", true);
    }
  std::vector<int> busy_siblings;
  for (int c : cpus) {
    auto it = f.siblings.find(c);
    if (it == f.siblings.end()) continue;
    for (int s : it->second)
      if (s != c && contains(f.online, s) && !contains(cpus, s)) busy_siblings.push_back(s);
  }
  if (!busy_siblings.empty())
    return make(DoctorStatus::kWarn, "smt", "siblings " + list(busy_siblings) + " online",
                "boot with nosmt (or offline cpus " + list(busy_siblings) + "): a sibling shares the TLB", true);
  const std::string ctl = f.smt_control.empty() ? "no siblings" : "control=" + f.smt_control + ", no siblings";
  return pass("smt", ctl);
}

DoctorFinding check_thp(const DoctorFacts& f) {
  if (f.thp_enabled.empty() || f.thp_enabled == "unavailable")
    return make(DoctorStatus::kWarn, "thp", "THP mode unreadable", "--pages thp needs CONFIG_TRANSPARENT_HUGEPAGE");
  if (f.thp_enabled == "always")
    return make(DoctorStatus::kWarn, "thp", "enabled=always",
                "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (4k arms get THP)", true);
  return pass("thp", "enabled=" + f.thp_enabled + (f.thp_defrag.empty() ? "" : " defrag=" + f.thp_defrag));
}

DoctorFinding check_cpuidle(const DoctorFacts& f, const std::vector<int>& cpus) {
  if (f.cpuidle_driver.empty() || f.cpuidle_driver == "none")
    return pass("cpuidle", f.cpuidle_driver.empty() ? "no cpuidle driver (idle=poll or none)" : "driver none");
  // Deep states: wake-up latency above 10 us lengthens the IPI's delivery
  // and the victim's return from idle.
  std::int64_t max_lat = 0;
  std::string deepest;
  for (int c : cpus) {
    auto it = f.idle_states.find(c);
    if (it == f.idle_states.end()) continue;
    for (const auto& s : it->second)
      if (!s.disabled && s.latency_us >= max_lat) {
        max_lat = s.latency_us;
        deepest = s.name;
      }
  }
  const std::string found =
      f.cpuidle_driver + (deepest.empty() ? "" : ", max " + deepest + " (" + std::to_string(max_lat) + " us)");
  if (max_lat > 10)
    return make(DoctorStatus::kWarn, "cpuidle", found,
                "boot with processor.max_cstate=1 intel_idle.max_cstate=0 (or idle=poll)", true);
  return pass("cpuidle", found);
}

DoctorFinding check_cpufreq(const DoctorFacts& f, const std::vector<int>& cpus) {
  if (f.cpufreq_driver.empty()) return pass("cpufreq", "no frequency scaling exposed");
  std::vector<int> slow;
  std::string gov;
  for (int c : cpus) {
    auto it = f.governor.find(c);
    if (it == f.governor.end()) continue;
    gov = it->second;
    if (it->second != "performance") slow.push_back(c);
  }
  const std::string found = f.cpufreq_driver + (gov.empty() ? "" : ", governor " + gov);
  if (!slow.empty())
    return make(DoctorStatus::kWarn, "cpufreq", found, "cpupower -c " + list(slow) + " frequency-set -g performance",
                true);
  return pass("cpufreq", found);
}

DoctorFinding check_irqbalance(const DoctorFacts& f) {
  if (f.irqbalance_running)
    return make(DoctorStatus::kWarn, "irqbalance", "irqbalance running",
                "systemctl stop irqbalance (it moves IRQs onto the victim)", true);
  return pass("irqbalance", "not running");
}

DoctorFinding check_irq_affinity(const DoctorFacts& f, const std::vector<int>& cpus) {
  if (f.irq_affinity.empty()) return pass("irq_affinity", "no device IRQs visible");
  // A device IRQ allowed on a measured CPU steals time from it. The culprit
  // is cpus[0]; it is measured too (release duration), so all count.
  std::vector<int> hit;
  for (const auto& [irq, aff] : f.irq_affinity) {
    for (int c : cpus)
      if (contains(aff, c)) {
        hit.push_back(irq);
        break;
      }
  }
  if (hit.empty()) return pass("irq_affinity", "no device IRQs on " + plural_cpu(cpus));
  std::vector<int> others;
  for (int c : f.online)
    if (!contains(cpus, c)) others.push_back(c);
  std::string found = std::to_string(hit.size()) + " of " + std::to_string(f.irq_affinity.size()) +
                      " IRQs may run on " + plural_cpu(cpus);
  if (others.empty())
    return make(DoctorStatus::kWarn, "irq_affinity", found,
                "no other CPU to move IRQs to; use a machine with a housekeeping CPU", true);
  return make(DoctorStatus::kWarn, "irq_affinity", found,
              "for i in /proc/irq/*/smp_affinity_list; do echo " + list(others) + " > $i; done", true);
}

DoctorFinding check_numa(const DoctorFacts& f, const std::vector<int>& cpus) {
  std::set<int> nodes;
  for (int c : cpus) {
    auto it = f.node_of.find(c);
    nodes.insert(it == f.node_of.end() ? 0 : it->second);
  }
  const std::string n = std::to_string(f.numa_nodes > 0 ? f.numa_nodes : 1);
  if (nodes.size() > 1)
    return make(DoctorStatus::kWarn, "numa", plural_cpu(cpus) + " span " + std::to_string(nodes.size()) + " nodes",
                "pick CPUs of one node (numactl -H): cross-node IPIs cost more", true);
  return pass("numa", n + " node(s), " + plural_cpu(cpus) + " on node " + std::to_string(*nodes.begin()));
}

DoctorFinding check_clocksource(const DoctorFacts& f) {
  if (f.clocksource == "tsc") return pass("clocksource", "tsc");
  if (f.clocksource.empty())
    return make(DoctorStatus::kWarn, "clocksource", "unreadable", "check /sys/devices/system/clocksource");
  // hpet and acpi_pm make every clock_gettime a slow MMIO/port read; the
  // conversion of TSC timestamps and the markers get microseconds of error.
  if (f.clocksource == "hpet" || f.clocksource == "acpi_pm")
    return make(DoctorStatus::kFail, "clocksource", f.clocksource + " (slow, no vDSO)",
                "boot with clocksource=tsc tsc=reliable", true);
  const bool tsc_available = f.available_clocksources.find("tsc") != std::string::npos;
  return make(DoctorStatus::kWarn, "clocksource", f.clocksource,
              tsc_available ? "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"
                            : "boot with clocksource=tsc tsc=reliable",
              false);
}

DoctorFinding check_invariant_tsc(const DoctorFacts& f) {
  const bool c = f.cpu_flags.count("constant_tsc") > 0, n = f.cpu_flags.count("nonstop_tsc") > 0;
  if (f.cpu_flags.empty())
    return make(DoctorStatus::kWarn, "invariant_tsc", "cpu flags unreadable", "check /proc/cpuinfo");
  if (c && n) return pass("invariant_tsc", "constant_tsc nonstop_tsc");
  std::string found = std::string(c ? "" : "no constant_tsc ") + (n ? "" : "no nonstop_tsc");
  return make(DoctorStatus::kFail, "invariant_tsc", found,
              "the victim's timestamps need an invariant TSC: use other hardware", true);
}

DoctorFinding check_pcid(const DoctorFacts& f) {
  const bool p = f.cpu_flags.count("pcid") > 0, i = f.cpu_flags.count("invpcid") > 0;
  if (p && i) return pass("pcid", "pcid invpcid");
  if (f.cpu_flags.empty()) return make(DoctorStatus::kWarn, "pcid", "cpu flags unreadable", "check /proc/cpuinfo");
  // Without PCID every context switch flushes the whole TLB: shootdowns
  // then compete with switch flushes and the numbers differ from PCID hosts.
  return make(DoctorStatus::kWarn, "pcid", std::string(p ? "pcid" : "no pcid") + (i ? " invpcid" : ", no invpcid"),
              "expose pcid/invpcid (VM: -cpu host); results differ from PCID hosts", true);
}

DoctorFinding check_pti(const DoctorFacts& f) {
  auto it = f.vulnerabilities.find("meltdown");
  if (it == f.vulnerabilities.end())
    return make(DoctorStatus::kWarn, "pti", "meltdown status unreadable",
                "check /sys/devices/system/cpu/vulnerabilities");
  const std::string v = first_line(it->second);
  if (v.find("PTI") != std::string::npos)
    return make(DoctorStatus::kWarn, "pti", v, "PTI doubles each flush (user+kernel tables); nopti to measure without",
                true);
  return pass("pti", v);
}

DoctorFinding check_mitigations(const DoctorFacts& f) {
  if (f.vulnerabilities.empty())
    return make(DoctorStatus::kWarn, "mitigations", "vulnerabilities unreadable",
                "check /sys/devices/system/cpu/vulnerabilities");
  int mitigated = 0;
  for (const auto& [name, v] : f.vulnerabilities)
    if (starts_with(v, "Mitigation")) ++mitigated;
  const std::string found =
      std::to_string(mitigated) + " of " + std::to_string(f.vulnerabilities.size()) + " mitigated";
  if (cmdline_param(f.cmdline, "mitigations") == std::optional<std::string>("off"))
    return pass("mitigations", found + ", mitigations=off");
  if (mitigated == 0) return pass("mitigations", found);
  // Mitigations (retpolines, IBRS, RSB filling) add to every interrupt
  // entry and exit, i.e. to each IPI the victim takes.
  return make(DoctorStatus::kWarn, "mitigations", found, "mitigations=off to compare; record it, it adds to each IPI",
              false);
}

DoctorFinding check_watchdogs(const DoctorFacts& f) {
  std::vector<std::string> on;
  if (f.nmi_watchdog > 0) on.push_back("nmi_watchdog");
  if (f.soft_watchdog > 0) on.push_back("soft_watchdog");
  if (f.nmi_watchdog < 0 && f.soft_watchdog < 0 && f.watchdog < 0)
    return make(DoctorStatus::kWarn, "watchdogs", "unreadable", "check /proc/sys/kernel/*watchdog");
  if (on.empty()) return pass("watchdogs", "nmi and soft lockup watchdogs off");
  std::string found;
  for (const auto& w : on) found += (found.empty() ? "" : ", ") + w + "=1";
  std::string fix = "sysctl";
  if (f.nmi_watchdog > 0) fix += " kernel.nmi_watchdog=0";
  if (f.soft_watchdog > 0) fix += " kernel.soft_watchdog=0";
  return make(DoctorStatus::kWarn, "watchdogs", found, fix + " (or nmi_watchdog=0 nosoftlockup)", true);
}

DoctorFinding check_stat_interval(const DoctorFacts& f) {
  if (f.stat_interval < 0)
    return make(DoctorStatus::kWarn, "stat_interval", "unreadable", "check /proc/sys/vm/stat_interval");
  // vmstat_update runs per CPU every stat_interval seconds (mm/vmstat.c).
  if (f.stat_interval < 10)
    return make(DoctorStatus::kWarn, "stat_interval", "vm.stat_interval=" + std::to_string(f.stat_interval) + " s",
                "sysctl vm.stat_interval=120 (vmstat work wakes every CPU)", true);
  return pass("stat_interval", "vm.stat_interval=" + std::to_string(f.stat_interval) + " s");
}

DoctorFinding check_vm(const DoctorFacts& f) {
  if (f.cpu_flags.count("hypervisor") == 0 && f.hypervisor_vendor.empty())
    return pass("vm", "bare metal (no hypervisor flag)");
  const std::string who = f.hypervisor_vendor.empty() ? "unknown hypervisor" : f.hypervisor_vendor;
  return make(DoctorStatus::kWarn, "vm", "virtual machine (" + who + ")",
              "IPIs exit to the host (~20-35 us each): compare with bare metal", true);
}

DoctorFinding check_pv_tlb_flush(const DoctorFacts& f) {
  if (const auto& d = f.tlb_delivery; d && d->requests > 0) {
    // The TLB row counts every process's flushes: more than asked is "all",
    // plus the others.
    const std::int64_t got = std::min(d->delivered, d->requests);
    std::string measured = std::to_string(got) + " of " + std::to_string(d->requests) +
                           " remote flushes arrived as IPIs (cpu " + std::to_string(d->from_cpu) + "->" +
                           std::to_string(d->to_cpu) + ")";
    if (d->delivered > d->requests) measured += " +" + std::to_string(d->delivered - d->requests) + " others";
    // The flushes go another way (pv_ops.mmu.flush_tlb_multi replaced:
    // Hyper-V and PVM hypercalls, Xen PV).
    if (flushes_bypass_ipis(d->requests, d->delivered))
      return make(DoctorStatus::kFail, "pv_tlb_flush", measured,
                  "remote flushes bypass IPIs: the hypervisor does them (paravirtual flush), the guest cannot trace "
                  "their cost and shootdown counts 0 here; measure on bare metal or a guest without PV TLB flush",
                  true);
    if (f.kvm_pv_tlb_flush.value_or(false))
      return make(DoctorStatus::kWarn, "pv_tlb_flush", "KVM PV TLB flush on; " + measured,
                  "preempted vCPUs get no IPI: TLB counts can be lower than bare metal", true);
    return pass("pv_tlb_flush", measured);
  }
  const bool vm = f.cpu_flags.count("hypervisor") > 0 || !f.hypervisor_vendor.empty();
  if (!vm) return pass("pv_tlb_flush", "not a VM");
  const std::string why = f.tlb_delivery_error.empty() ? "" : " (not measured: " + f.tlb_delivery_error + ")";
  if (!f.kvm_pv_tlb_flush) return pass("pv_tlb_flush", "not KVM or not detectable" + why);
  if (*f.kvm_pv_tlb_flush)
    // kvm_flush_tlb_multi() skips preempted vCPUs and flushes them on
    // their next entry: fewer TLB IPIs than a bare-metal kernel sends.
    return make(DoctorStatus::kWarn, "pv_tlb_flush", "KVM PV TLB flush on" + why,
                "preempted vCPUs get no IPI: TLB counts can be lower than bare metal", true);
  return pass("pv_tlb_flush", "KVM without PV TLB flush" + why);
}

std::string flushes_without_ipis_note(const DoctorFinding& broadcast) {
  if (broadcast.status != DoctorStatus::kWarn) return "";
  return broadcast.found +
         ": remote flushes here may send no IPI and trace no tlb_flush, so the counts and times here miss them "
         "(shootdown doctor: tlb_broadcast)";
}

DoctorFinding check_broadcast_flush(const DoctorFacts& f) {
  const std::string& m = f.machine;
  if (m == "aarch64" || m == "arm64")
    // arm64 flushes another CPU's TLB with a broadcast TLBI (...IS) and
    // waits in DSB ISH: no IPI, and nothing calls trace_tlb_flush() there.
    return make(DoctorStatus::kWarn, "tlb_broadcast",
                "arm64: remote TLB flushes are broadcast TLBI instructions, no IPI",
                "no shootdown IPI and no tlb:tlb_flush event exist to count; the cost is the initiator's TLBI+DSB "
                "wait and the victims' lost TLB entries: shootdown measures x86 IPIs only",
                true);
  if (!m.empty() && m != "x86_64")
    return make(DoctorStatus::kWarn, "tlb_broadcast", m + ": not x86, shootdown's evidence is x86's",
                "remote flushes there may be broadcast in hardware, with no IPI to count", true);
  const std::string k = f.kernel_release.empty() ? "this kernel" : "kernel " + f.kernel_release;
  if (f.kernel_rar == std::optional<bool>(true) && f.cpuid_invlpgb != std::optional<bool>(true)) {
    // A kernel with RAR code sends a remote flush as a remote action request
    // where the CPU has RAR: the target's microcode flushes, no call-function
    // interrupt, no flush_tlb_func, no tlb_flush on the target.
    const bool cpu = f.cpu_flags.count("rar") > 0;
    return make(DoctorStatus::kWarn, "tlb_broadcast",
                "Intel RAR remote flush " + std::string(cpu ? "on" : "possible") + " (" + k +
                    " carries RAR code, its BTF names it; " +
                    (cpu ? "CPU flag rar" : "CPU support not listed in /proc/cpuinfo") + ")",
                "remote flushes by remote action request send no call-function IPI and trace no tlb:tlb_flush on "
                "the target, so shootdown counts and times miss them while the initiator still waits for the "
                "targets; compare the TLB row with the traced flushes (shootdown run prints the accounting)",
                true);
  }
  const std::string rar = f.kernel_rar == std::optional<bool>(false) ? ", no Intel RAR in this kernel" : "";
  if (!f.cpuid_invlpgb) return pass("tlb_broadcast", "INVLPGB not detectable" + rar + ": remote flushes assumed IPIs");
  if (!*f.cpuid_invlpgb) return pass("tlb_broadcast", "no INVLPGB in this CPU" + rar + ": remote flushes are IPIs");
  const int v = kernel_version_code(f.kernel_release);
  // Linux 6.15 (arch/x86/mm/tlb.c broadcast_tlb_flush, CONFIG_BROADCAST_TLB_FLUSH).
  if (v > 0 && v < 6015)
    return pass("tlb_broadcast", "CPU has INVLPGB; " + k + " flushes by IPI (broadcast flush: Linux 6.15+)");
  if (f.broadcast_config == std::optional<bool>(false))
    return pass("tlb_broadcast", "CPU has INVLPGB; " + k + " built without CONFIG_BROADCAST_TLB_FLUSH");
  // pti_check_boottime_disable() clears X86_FEATURE_INVLPGB when PTI is on.
  if (auto it = f.vulnerabilities.find("meltdown");
      it != f.vulnerabilities.end() && it->second.find("PTI") != std::string::npos)
    return pass("tlb_broadcast", "CPU has INVLPGB; PTI is on, which turns it off (arch/x86/mm/pti.c)");
  if (auto c = cmdline_param(f.cmdline, "clearcpuid")) {
    std::istringstream in(*c);
    for (std::string tok; std::getline(in, tok, ',');)
      if (tok == "invlpgb" || tok == "419")  // X86_FEATURE_INVLPGB = 13*32+3
        return pass("tlb_broadcast", "CPU has INVLPGB; turned off on the command line (clearcpuid=" + tok + ")");
  }
  return make(DoctorStatus::kWarn, "tlb_broadcast",
              "AMD INVLPGB broadcast flush on (" + k + ", CPUID 0x80000008 EBX[3])",
              "a process active on 4+ CPUs at once may get a global ASID: its remote flushes are then INVLPGB + "
              "TLBSYNC, with no IPI and no tlb:tlb_flush event, so shootdown counts 0 while the initiator waits in "
              "TLBSYNC; boot with clearcpuid=419 to measure the IPI path",
              true);
}

DoctorFinding check_tracing(const DoctorFacts& f) {
  const bool privileged = f.is_root || f.cap_perfmon || f.perf_event_paranoid <= -1;
  if (!f.tracefs_supported)
    return make(DoctorStatus::kFail, "tracing", "kernel without tracefs",
                "use a kernel with CONFIG_FTRACE; run has no kernel evidence", true);
  if (!privileged)
    return make(DoctorStatus::kFail, "tracing",
                "perf_event_paranoid=" + std::to_string(f.perf_event_paranoid) + ", not root",
                "run as root or sysctl kernel.perf_event_paranoid=-1", true);
  std::string who = f.is_root ? "root" : f.cap_perfmon ? "CAP_PERFMON" : "paranoid=-1";
  if (f.tracefs_mount.empty()) return pass("tracing", who + ", tracefs unmounted (mounted privately)");
  if (!f.tlb_tracepoint)
    return make(DoctorStatus::kWarn, "tracing", who + ", no tlb:tlb_flush tracepoint",
                "use a kernel with the tlb tracepoints (x86, CONFIG_TRACEPOINTS)", true);
  return pass("tracing", who + ", tracefs at " + f.tracefs_mount);
}

DoctorFinding check_memlock(const DoctorFacts& f) {
  if (f.is_root) return pass("memlock", "root (CAP_IPC_LOCK ignores RLIMIT_MEMLOCK)");
  if (f.memlock_soft == -2)
    return make(DoctorStatus::kWarn, "memlock", "RLIMIT_MEMLOCK unknown", "ulimit -l unlimited");
  if (f.memlock_soft == -1) return pass("memlock", "RLIMIT_MEMLOCK unlimited");
  const std::int64_t gib = 1LL << 30;
  const std::string found = "RLIMIT_MEMLOCK " + std::to_string(f.memlock_soft / 1024) + " KiB";
  // Two chunks of a run are mlocked; without it they can be swapped or
  // compacted (migration itself shoots down).
  if (f.memlock_soft < 2 * gib)
    return make(DoctorStatus::kWarn, "memlock", found, "ulimit -l unlimited (or memlock in limits.conf)", true);
  return pass("memlock", found);
}

DoctorFinding check_hugepages(const DoctorFacts& f) {
  if (f.hugepages_total < 0)
    return make(DoctorStatus::kWarn, "hugepages", "HugePages_Total unreadable", "check /proc/meminfo");
  if (f.hugepages_total == 0)
    return make(DoctorStatus::kWarn, "hugepages", "none reserved",
                "sysctl vm.nr_hugepages=N (or hugepages=N) for --pages hugetlb", false);
  return pass("hugepages",
              std::to_string(f.hugepages_total) + " reserved, " + std::to_string(f.hugepages_free) + " free");
}

std::vector<DoctorFinding> run_doctor_checks(const DoctorFacts& f, const std::vector<int>& cpus) {
  return {
      check_cpus_online(f, cpus),
      check_isolcpus(f, cpus),
      check_nohz_full(f, cpus),
      check_rcu_nocbs(f, cpus),
      check_smt(f, cpus),
      check_thp(f),
      check_cpuidle(f, cpus),
      check_cpufreq(f, cpus),
      check_irqbalance(f),
      check_irq_affinity(f, cpus),
      check_numa(f, cpus),
      check_clocksource(f),
      check_invariant_tsc(f),
      check_pcid(f),
      check_pti(f),
      check_mitigations(f),
      check_watchdogs(f),
      check_stat_interval(f),
      check_vm(f),
      check_pv_tlb_flush(f),
      check_broadcast_flush(f),
      check_tracing(f),
      check_memlock(f),
      check_hugepages(f),
  };
}

std::string suggest_cmdline(const DoctorFacts& f, const std::vector<int>& cpus, std::string* note) {
  // Only the victims are isolated; the culprit, CPU 0 and every other CPU
  // stay housekeeping (they take the IRQs, kthreads and the tick).
  const std::vector<int> targets = isolation_targets(cpus);
  const std::string l = list(targets);
  std::vector<int> housekeeping;
  for (int c : f.online)
    if (!contains(targets, c)) housekeeping.push_back(c);
  if (housekeeping.empty()) housekeeping.push_back(0);
  std::string s;
  if (!targets.empty()) s = "isolcpus=" + l + " nohz_full=" + l + " rcu_nocbs=" + l + " rcu_nocb_poll";
  if (!housekeeping.empty()) s += std::string(s.empty() ? "" : " ") + "irqaffinity=" + list(housekeeping);
  s += " nosoftlockup nmi_watchdog=0 skew_tick=1 audit=0 mce=ignore_ce";
  const bool x86 = f.cpu_flags.count("constant_tsc") > 0 || f.cpu_flags.count("tsc") > 0;
  if (x86) s += " intel_idle.max_cstate=0 processor.max_cstate=1 idle=poll";
  s += " transparent_hugepage=madvise tsc=reliable clocksource=tsc";
  bool smt = false;
  for (int c : cpus) {
    auto it = f.siblings.find(c);
    if (it != f.siblings.end() && it->second.size() > 1) smt = true;
  }
  if (smt) s += " nosmt";
  if (note) {
    if (targets.empty())
      *note = "the victim is on CPU 0, which is never isolated: choose another victim CPU, then isolate it";
    else
      *note =
          "then: systemctl stop irqbalance; sysctl vm.stat_interval=120. mitigations=off/nopti change what is measured";
  }
  return s;
}

DoctorSummary summarize(const std::vector<DoctorFinding>& findings) {
  DoctorSummary s;
  for (const auto& d : findings) {
    if (d.status == DoctorStatus::kPass)
      ++s.pass;
    else if (d.status == DoctorStatus::kWarn)
      ++s.warn;
    else
      ++s.fail;
  }
  return s;
}

}  // namespace shootdown
