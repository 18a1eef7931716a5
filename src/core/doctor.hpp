// SPDX-License-Identifier: Apache-2.0
// `shootdown doctor`: the article's tuning list as pure checks over facts.
// src/sys/facts.cpp reads the facts from /proc and /sys (and cpuid); every
// check here is a pure function of DoctorFacts and the chosen CPUs, so the
// unit tests drive them with fixture trees or hand-made facts. No system
// headers: standard library only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shootdown {

enum class DoctorStatus { kPass, kWarn, kFail };
const char* to_string(DoctorStatus s);  // "PASS" / "WARN" / "FAIL"

struct DoctorFinding {
  DoctorStatus status = DoctorStatus::kPass;
  std::string name;    // stable id: "isolcpus", "smt", "thp", ...
  std::string found;   // what was found, short ("cpu 1 not isolated")
  std::string advice;  // one line: the fix (empty when nothing to do)
  // True when the finding undermines shootdown numbers of a run on these
  // CPUs (run prints these and records them in the result).
  bool undermines_numbers = false;
};

struct IdleState {
  std::string name;  // "POLL", "C1", "C6", "haltpoll idle"
  std::int64_t latency_us = 0;
  bool disabled = false;  // stateN/disable == 1
};

// Everything the checks look at. "Unknown" is explicit (empty string, -1 or
// nullopt) so a check can say "could not read X" instead of guessing.
struct DoctorFacts {
  // --- CPUs and isolation (/sys/devices/system/cpu, /proc/cmdline)
  std::vector<int> online;
  std::vector<int> isolated;                  // .../cpu/isolated
  std::optional<std::vector<int>> nohz_full;  // .../cpu/nohz_full; nullopt: kernel without NO_HZ_FULL
  std::string cmdline;                        // /proc/cmdline (kernel part, before " -- ")
  std::map<int, std::vector<int>> siblings;   // cpu -> thread_siblings_list (includes itself)
  std::string smt_control;                    // .../cpu/smt/control: on|off|forceoff|notsupported|...
  std::map<int, int> node_of;                 // cpu -> NUMA node
  int numa_nodes = 0;                         // nodes with CPUs or memory (0 = unknown)
  // --- memory
  std::string thp_enabled;  // always|madvise|never|"" (unavailable)
  std::string thp_defrag;
  std::int64_t hugepages_total = -1;  // /proc/meminfo HugePages_Total
  std::int64_t hugepages_free = -1;
  std::int64_t hugepage_size = 0;  // bytes
  std::int64_t memlock_soft = -2;  // RLIMIT_MEMLOCK bytes; -1 unlimited, -2 unknown
  std::int64_t memlock_hard = -2;
  // --- idle and frequency
  std::string cpuidle_driver;  // .../cpuidle/current_driver ("none", "intel_idle", "haltpoll")
  std::string cpuidle_governor;
  std::map<int, std::vector<IdleState>> idle_states;  // cpu -> states
  std::string cpufreq_driver;                         // cpu<N>/cpufreq/scaling_driver of the first CPU; "" none
  std::map<int, std::string> governor;                // cpu -> scaling_governor
  // --- interrupts
  bool irqbalance_running = false;
  std::map<int, std::vector<int>> irq_affinity;  // irq -> smp_affinity_list
  std::map<int, std::string> irq_names;          // irq -> /proc/interrupts description
  // --- clocks and CPU features
  std::string clocksource;  // current_clocksource
  std::string available_clocksources;
  std::set<std::string> cpu_flags;                     // /proc/cpuinfo "flags" of the first CPU
  std::map<std::string, std::string> vulnerabilities;  // file name -> content
  // --- watchdogs and vm
  int nmi_watchdog = -1;   // /proc/sys/kernel/nmi_watchdog
  int soft_watchdog = -1;  // /proc/sys/kernel/soft_watchdog
  int watchdog = -1;       // /proc/sys/kernel/watchdog
  int stat_interval = -1;  // /proc/sys/vm/stat_interval (seconds)
  // --- virtualization
  std::string hypervisor_vendor;         // cpuid leaf 0x40000000 ("KVMKVMKVM"), /sys/hypervisor/type, dmi
  std::optional<bool> kvm_pv_tlb_flush;  // KVM_FEATURE_PV_TLB_FLUSH (cpuid 0x40000001 eax bit 9)
  // --- remote flushes without IPIs (broadcast TLB invalidation in hardware)
  std::string kernel_release;            // /proc/sys/kernel/osrelease ("6.15.2-amd64")
  std::string machine;                   // uname -m ("x86_64", "aarch64")
  std::optional<bool> cpuid_invlpgb;     // AMD INVLPGB/TLBSYNC: CPUID 0x80000008 EBX bit 3; nullopt: not readable
  std::optional<bool> broadcast_config;  // /boot/config-RELEASE: CONFIG_BROADCAST_TLB_FLUSH=y; nullopt: no config
  // Intel RAR (remote action request): the running kernel's BTF
  // (/sys/kernel/btf/vmlinux) names RAR code (rar_payload, smp_call_rar_many,
  // rar_cpu_init); nullopt: no BTF to read. No mainline kernel up to 7.3 has
  // any (Debian 7.3.4's BTF names none; it names global_asid for INVLPGB).
  std::optional<bool> kernel_rar;
  // Measured, not read: do remote TLB flushes arrive as IPIs? One thread on
  // from_cpu munmaps `requests` touched pages while a second thread of the
  // process spins on to_cpu; a kernel that flushes by IPI adds one to to_cpu's
  // TLB row per munmap (experiment/tlb_delivery). nullopt: not measured.
  struct TlbDelivery {
    int from_cpu = -1;
    int to_cpu = -1;
    std::int64_t requests = 0;
    std::int64_t delivered = 0;  // to_cpu's /proc/interrupts TLB delta
  };
  std::optional<TlbDelivery> tlb_delivery;
  std::string tlb_delivery_error;  // why it was not measured ("" = measured or not tried)
  // --- tracing permissions
  int perf_event_paranoid = 99;    // 99 = unknown
  bool is_root = false;            // euid 0
  bool cap_perfmon = false;        // CAP_PERFMON or CAP_SYS_ADMIN in CapEff
  bool tracefs_supported = false;  // "tracefs" in /proc/filesystems
  std::string tracefs_mount;       // mount point from /proc/mounts, "" when not mounted
  bool tlb_tracepoint = false;     // events/tlb/tlb_flush exists where tracefs is mounted
};

// One check per tuning item, in the order the table prints them. `cpus` are
// the CPUs a run would use (culprit first, then victims); must be non-empty.
std::vector<DoctorFinding> run_doctor_checks(const DoctorFacts& facts, const std::vector<int>& cpus);

// The individual checks (exposed for unit tests).
DoctorFinding check_cpus_online(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_isolcpus(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_nohz_full(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_rcu_nocbs(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_smt(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_thp(const DoctorFacts& f);
DoctorFinding check_cpuidle(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_cpufreq(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_irqbalance(const DoctorFacts& f);
DoctorFinding check_irq_affinity(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_numa(const DoctorFacts& f, const std::vector<int>& cpus);
DoctorFinding check_clocksource(const DoctorFacts& f);
DoctorFinding check_invariant_tsc(const DoctorFacts& f);
DoctorFinding check_pcid(const DoctorFacts& f);
DoctorFinding check_pti(const DoctorFacts& f);
DoctorFinding check_mitigations(const DoctorFacts& f);
DoctorFinding check_watchdogs(const DoctorFacts& f);
DoctorFinding check_stat_interval(const DoctorFacts& f);
DoctorFinding check_vm(const DoctorFacts& f);
DoctorFinding check_pv_tlb_flush(const DoctorFacts& f);
// Remote flushes the hardware broadcasts, with no IPI and no tlb:tlb_flush
// event: AMD INVLPGB (x86, Linux 6.15+), arm64's TLBI ...IS. A WARN when
// shootdown's counts would read 0 while the flushes still cost.
DoctorFinding check_broadcast_flush(const DoctorFacts& f);
// From check_broadcast_flush's finding: "" when remote flushes are IPIs,
// else one sentence for monitor's and blame's output saying what their
// counts then miss.
std::string flushes_without_ipis_note(const DoctorFinding& broadcast);
DoctorFinding check_tracing(const DoctorFacts& f);
DoctorFinding check_memlock(const DoctorFacts& f);
DoctorFinding check_hugepages(const DoctorFacts& f);

// Kernel command-line parameter value ("isolcpus" -> "managed_irq,2-3"),
// nullopt when absent. Only the kernel part (before a lone "--").
std::optional<std::string> cmdline_param(const std::string& cmdline, const std::string& key);
bool cmdline_flag(const std::string& cmdline, const std::string& key);  // bare word or key=...
// CPUs of a cpu-list parameter that may start with flags ("nohz,domain,2-3"),
// "all" expands to `online`.
std::vector<int> cmdline_cpus(const std::string& value, const std::vector<int>& online);

// CPUs the tuning checks and suggestions isolate: the victims (every CPU
// after the first, the culprit; a single CPU is taken as a victim), never
// CPU 0. The culprit and CPU 0 stay housekeeping CPUs.
std::vector<int> isolation_targets(const std::vector<int>& cpus);

// The article's low-latency command line adapted to `cpus` (culprit first):
// isolcpus, nohz_full, rcu_nocbs and friends for the victims
// (isolation_targets), irqaffinity= every other CPU. Never isolates CPU 0 or
// the culprit. `note` gets one line of caveats (e.g. the victim is CPU 0).
std::string suggest_cmdline(const DoctorFacts& f, const std::vector<int>& cpus, std::string* note = nullptr);

// Table under 80 columns: STATUS NAME FOUND, advice on the next line.

struct DoctorSummary {
  int pass = 0, warn = 0, fail = 0;
};
DoctorSummary summarize(const std::vector<DoctorFinding>& findings);

}  // namespace shootdown
