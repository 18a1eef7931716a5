// SPDX-License-Identifier: Apache-2.0
// doctor: facts read from fixture trees (tests/fixtures/doctor/*/root) and
// the pure checks over them; each check is seen passing, warning and (where
// the check can fail) failing.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "core/attribution.hpp"
#include "core/doctor.hpp"
#include "sink/doctor_out.hpp"
#include "sys/facts.hpp"
#include "sys/fs.hpp"

using namespace shootdown;

namespace {

DoctorFacts facts_of(const std::string& fixture) {
  sys::set_root(std::string(SHOOTDOWN_FIXTURES) + "/doctor/" + fixture + "/root");
  DoctorFacts f = sys::read_doctor_facts();
  sys::set_root("");
  return f;
}

std::map<std::string, DoctorStatus> by_name(const std::vector<DoctorFinding>& v) {
  std::map<std::string, DoctorStatus> m;
  for (const auto& d : v) m[d.name] = d.status;
  return m;
}

const DoctorFinding& find(const std::vector<DoctorFinding>& v, const std::string& name) {
  for (const auto& d : v)
    if (d.name == name) return d;
  throw std::runtime_error("no finding " + name);
}

constexpr auto P = DoctorStatus::kPass;
constexpr auto W = DoctorStatus::kWarn;
constexpr auto F = DoctorStatus::kFail;

}  // namespace

TEST(DoctorFacts, ReadsTunedTree) {
  auto f = facts_of("tuned");
  EXPECT_EQ(f.online, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(f.isolated, (std::vector<int>{2, 3}));
  ASSERT_TRUE(f.nohz_full.has_value());
  EXPECT_EQ(*f.nohz_full, (std::vector<int>{2, 3}));
  EXPECT_EQ(f.thp_enabled, "madvise");
  EXPECT_EQ(f.hugepages_total, 512);
  EXPECT_EQ(f.clocksource, "tsc");
  EXPECT_TRUE(f.cpu_flags.count("invpcid"));
  EXPECT_EQ(f.irq_affinity.size(), 2u);
  EXPECT_EQ(f.irq_affinity.at(24), (std::vector<int>{0, 1}));
  EXPECT_FALSE(f.irqbalance_running);
  EXPECT_EQ(f.numa_nodes, 1);
  EXPECT_TRUE(f.is_root);
  EXPECT_EQ(f.memlock_soft, -1);
  EXPECT_EQ(f.tracefs_mount, "/sys/kernel/tracing");
  EXPECT_TRUE(f.tlb_tracepoint);
  EXPECT_EQ(f.stat_interval, 120);
}

TEST(DoctorFacts, ReadsUntunedTree) {
  auto f = facts_of("untuned");
  EXPECT_FALSE(f.nohz_full.has_value());
  EXPECT_TRUE(f.isolated.empty());
  EXPECT_TRUE(f.irqbalance_running);
  EXPECT_EQ(f.numa_nodes, 2);
  EXPECT_EQ(f.node_of.at(1), 1);
  ASSERT_EQ(f.idle_states.at(0).size(), 3u);
  EXPECT_EQ(f.idle_states.at(0)[2].latency_us, 133);
  EXPECT_EQ(f.cpufreq_driver, "intel_pstate");
  EXPECT_EQ(f.governor.at(1), "powersave");
  EXPECT_EQ(f.hypervisor_vendor, "KVMKVMKVM");
  ASSERT_TRUE(f.kvm_pv_tlb_flush.has_value());
  EXPECT_TRUE(*f.kvm_pv_tlb_flush);
  EXPECT_EQ(f.memlock_soft, 8388608);
  EXPECT_EQ(f.perf_event_paranoid, -1);
  EXPECT_FALSE(f.is_root);
}

TEST(Doctor, TunedPassesEverything) {
  auto findings = run_doctor_checks(facts_of("tuned"), {2, 3});
  for (const auto& d : findings) EXPECT_EQ(d.status, P) << d.name << ": " << d.found;
  EXPECT_EQ(findings.size(), 24u);
  EXPECT_EQ(summarize(findings).pass, 24);
}

TEST(Doctor, UntunedWarns) {
  auto m = by_name(run_doctor_checks(facts_of("untuned"), {0, 1}));
  const std::map<std::string, DoctorStatus> want = {
      {"cpus", P},          {"isolcpus", W},      {"nohz_full", W}, {"rcu_nocbs", W},
      {"smt", W},           {"thp", W},           {"cpuidle", W},   {"cpufreq", W},
      {"irqbalance", W},    {"irq_affinity", W},  {"numa", W},      {"clocksource", W},
      {"invariant_tsc", P}, {"pcid", W},          {"pti", W},       {"mitigations", W},
      {"watchdogs", W},     {"stat_interval", W}, {"vm", W},        {"pv_tlb_flush", W},
      {"tracing", W},       {"memlock", W},       {"hugepages", W}, {"tlb_broadcast", P},  // INVLPGB, PTI on
  };
  EXPECT_EQ(m, want);
}

TEST(Doctor, BrokenFails) {
  auto v = run_doctor_checks(facts_of("broken"), {0, 1});
  auto m = by_name(v);
  EXPECT_EQ(m["cpus"], F);
  EXPECT_EQ(m["smt"], F);
  EXPECT_EQ(m["clocksource"], F);
  EXPECT_EQ(m["invariant_tsc"], F);
  EXPECT_EQ(m["tracing"], F);
  EXPECT_EQ(m["pcid"], W);
  EXPECT_EQ(m["pti"], P);            // "Vulnerable": no PTI cost on flushes
  EXPECT_EQ(m["tlb_broadcast"], W);  // 7.3, INVLPGB in the CPU, no PTI
  EXPECT_EQ(m["memlock"], W);
  EXPECT_NE(find(v, "cpus").found.find("cpu 1 not online"), std::string::npos);
  EXPECT_GE(summarize(v).fail, 5);
  for (const auto& d : v)
    if (d.status != P) {
      EXPECT_FALSE(d.advice.empty()) << d.name;
    }
}

TEST(DoctorFacts, ReadsTheBroadcastFlushFacts) {
  const auto t = facts_of("tuned");
  EXPECT_EQ(t.kernel_release, "6.12.118+deb12-amd64");
  EXPECT_EQ(t.machine, "x86_64");
  EXPECT_EQ(t.cpuid_invlpgb, std::optional<bool>(false));
  const auto b = facts_of("broken");
  EXPECT_EQ(b.kernel_release, "7.3.0-1-amd64");
  EXPECT_EQ(b.cpuid_invlpgb, std::optional<bool>(true));
  EXPECT_FALSE(b.broadcast_config.has_value());  // no /boot/config in the tree
  // Intel RAR from the kernel's BTF names: tuned's names none (like Debian's
  // 7.3.4), untuned's names rar_payload, broken has no BTF.
  EXPECT_EQ(t.kernel_rar, std::optional<bool>(false));
  EXPECT_EQ(facts_of("untuned").kernel_rar, std::optional<bool>(true));
  EXPECT_FALSE(b.kernel_rar.has_value());
  EXPECT_EQ(check_broadcast_flush(t).found,
            "no INVLPGB in this CPU, no Intel RAR in this kernel: remote flushes are IPIs");
}

// Each way a remote flush can go without an IPI, and each thing that turns
// INVLPGB off, from facts as a fixture states them (CPUID bit, kernel
// release, /boot/config, vulnerabilities/meltdown, cmdline, uname -m).
TEST(Doctor, BroadcastFlushFromFixtures) {
  DoctorFacts f;
  f.machine = "x86_64";
  f.kernel_release = "7.3.0-1-amd64";
  f.cpuid_invlpgb = true;
  f.vulnerabilities["meltdown"] = "Not affected";
  const DoctorFinding on = check_broadcast_flush(f);
  EXPECT_EQ(on.status, W);
  EXPECT_TRUE(on.undermines_numbers);
  EXPECT_EQ(on.found, "AMD INVLPGB broadcast flush on (kernel 7.3.0-1-amd64, CPUID 0x80000008 EBX[3])");
  EXPECT_NE(on.advice.find("TLBSYNC"), std::string::npos);
  EXPECT_NE(on.advice.find("clearcpuid=419"), std::string::npos);

  auto with = [&](auto change) {
    DoctorFacts g = f;
    change(g);
    return check_broadcast_flush(g);
  };
  EXPECT_EQ(with([](DoctorFacts& g) { g.kernel_release = "6.14.11-amd64"; }).status, P);
  EXPECT_EQ(with([](DoctorFacts& g) { g.kernel_release = "6.15.0-1-amd64"; }).status, W);
  EXPECT_EQ(with([](DoctorFacts& g) { g.kernel_release = "6.1.0-57-amd64"; }).found,
            "CPU has INVLPGB; kernel 6.1.0-57-amd64 flushes by IPI (broadcast flush: Linux 6.15+)");
  EXPECT_EQ(with([](DoctorFacts& g) { g.cpuid_invlpgb = false; }).status, P);
  EXPECT_EQ(with([](DoctorFacts& g) { g.cpuid_invlpgb.reset(); }).status, P);
  EXPECT_EQ(with([](DoctorFacts& g) { g.broadcast_config = false; }).status, P);
  EXPECT_EQ(with([](DoctorFacts& g) { g.broadcast_config = true; }).status, W);
  EXPECT_EQ(with([](DoctorFacts& g) { g.vulnerabilities["meltdown"] = "Mitigation: PTI"; }).status, P);
  EXPECT_EQ(with([](DoctorFacts& g) { g.cmdline = "ro quiet clearcpuid=419"; }).status, P);
  EXPECT_EQ(with([](DoctorFacts& g) { g.cmdline = "ro clearcpuid=pku,invlpgb"; }).found,
            "CPU has INVLPGB; turned off on the command line (clearcpuid=invlpgb)");
  EXPECT_EQ(with([](DoctorFacts& g) { g.cmdline = "ro clearcpuid=4190"; }).status, W);

  EXPECT_EQ(kernel_version_code("6.12.118+deb12-amd64"), 6012);
  EXPECT_EQ(kernel_version_code("7.3.0-1-amd64"), 7003);
  EXPECT_EQ(kernel_version_code("6.15"), 6015);
  EXPECT_EQ(kernel_version_code("linux"), 0);

  const DoctorFinding arm = with([](DoctorFacts& g) { g.machine = "aarch64"; });
  EXPECT_EQ(arm.status, W);
  EXPECT_EQ(arm.found, "arm64: remote TLB flushes are broadcast TLBI instructions, no IPI");
  EXPECT_NE(arm.advice.find("no tlb:tlb_flush event"), std::string::npos);

  // Intel RAR: only a kernel whose BTF names RAR code can send remote action
  // requests (no mainline kernel up to 7.3 has it).
  auto intel = [&](auto change) {
    return with([&](DoctorFacts& g) {
      g.cpuid_invlpgb = false;
      g.kernel_release = "7.9.0-1-amd64";
      change(g);
    });
  };
  const DoctorFinding none = intel([](DoctorFacts& g) { g.kernel_rar = false; });
  EXPECT_EQ(none.status, P);
  EXPECT_EQ(none.found, "no INVLPGB in this CPU, no Intel RAR in this kernel: remote flushes are IPIs");
  const DoctorFinding rar_cpu = intel([](DoctorFacts& g) {
    g.kernel_rar = true;
    g.cpu_flags.insert("rar");
  });
  EXPECT_EQ(rar_cpu.status, W);
  EXPECT_EQ(rar_cpu.found,
            "Intel RAR remote flush on (kernel 7.9.0-1-amd64 carries RAR code, its BTF names it; CPU flag rar)");
  EXPECT_NE(flushes_without_ipis_note(rar_cpu).find("Intel RAR"), std::string::npos);
  const DoctorFinding rar_maybe = intel([](DoctorFacts& g) { g.kernel_rar = true; });
  EXPECT_EQ(rar_maybe.status, W);
  EXPECT_NE(rar_maybe.found.find("CPU support not listed"), std::string::npos);
  // An AMD CPU with INVLPGB on a kernel that also has RAR code: INVLPGB decides.
  EXPECT_NE(with([](DoctorFacts& g) {
              g.kernel_rar = true;
              g.kernel_release = "7.9.0-1-amd64";
            }).found.find("AMD INVLPGB"),
            std::string::npos);
}

TEST(Doctor, AdviceNamesTheFix) {
  auto v = run_doctor_checks(facts_of("untuned"), {0, 1});
  // cpus = culprit 0, victim 1: only the victim is isolated, never CPU 0.
  EXPECT_NE(find(v, "isolcpus").advice.find("isolcpus=1 "), std::string::npos) << find(v, "isolcpus").advice;
  EXPECT_NE(find(v, "thp").advice.find("madvise"), std::string::npos);
  EXPECT_NE(find(v, "watchdogs").advice.find("kernel.nmi_watchdog=0"), std::string::npos);
  EXPECT_NE(find(v, "irq_affinity").advice.find("echo 2-3"), std::string::npos);
  EXPECT_NE(find(v, "clocksource").advice.find("echo tsc"), std::string::npos);
  EXPECT_TRUE(find(v, "vm").undermines_numbers);
  EXPECT_FALSE(find(v, "hugepages").undermines_numbers);
}

TEST(Doctor, TracingUnprivilegedFails) {
  auto f = facts_of("tuned");
  f.is_root = false;
  f.cap_perfmon = false;
  f.perf_event_paranoid = 2;
  EXPECT_EQ(check_tracing(f).status, F);
  f.perf_event_paranoid = -1;
  EXPECT_EQ(check_tracing(f).status, P);
  f.tracefs_mount.clear();
  EXPECT_EQ(check_tracing(f).status, P);  // will be mounted privately
}

TEST(Doctor, HandMadeEdges) {
  DoctorFacts f;
  f.online = {0, 1};
  f.cmdline = "rcu_nocbs=all";
  EXPECT_EQ(check_rcu_nocbs(f, {0, 1}).status, P);
  f.cmdline = "rcu_nocbs=0";  // culprit 0, victim 1: the victim is what counts
  EXPECT_EQ(check_rcu_nocbs(f, {0, 1}).status, W);
  f.nohz_full = std::vector<int>{1};
  EXPECT_EQ(check_rcu_nocbs(f, {0, 1}).status, P);  // nohz_full implies rcu_nocbs
  f.cpuidle_driver = "haltpoll";
  f.idle_states[0] = {{"POLL", 0, false}, {"haltpoll idle", 0, false}};
  EXPECT_EQ(check_cpuidle(f, {0}).status, P);
  f.idle_states[0].push_back({"C6", 200, true});  // disabled deep state
  EXPECT_EQ(check_cpuidle(f, {0}).status, P);
  f.clocksource = "acpi_pm";
  EXPECT_EQ(check_clocksource(f).status, F);
  f.kvm_pv_tlb_flush = false;
  f.hypervisor_vendor = "KVMKVMKVM";
  EXPECT_EQ(check_pv_tlb_flush(f).status, P);
  // Measured delivery decides: none of 256 arrived (a PVM or Hyper-V guest).
  f.tlb_delivery = DoctorFacts::TlbDelivery{0, 1, 256, 0};
  EXPECT_EQ(check_pv_tlb_flush(f).status, F);
  EXPECT_EQ(check_pv_tlb_flush(f).found, "0 of 256 remote flushes arrived as IPIs (cpu 0->1)");
  EXPECT_TRUE(check_pv_tlb_flush(f).undermines_numbers);
  f.tlb_delivery->delivered = 255;  // an IPI kernel: one lost to a preempted spinner
  EXPECT_EQ(check_pv_tlb_flush(f).status, P);
  f.tlb_delivery->delivered = 290;  // the row counts other processes' flushes too (lab, 6.12 smt-numa8)
  EXPECT_EQ(check_pv_tlb_flush(f).found, "256 of 256 remote flushes arrived as IPIs (cpu 0->1) +34 others");
  f.kvm_pv_tlb_flush = true;  // KVM's PV flush still warns: preempted vCPUs get none
  EXPECT_EQ(check_pv_tlb_flush(f).status, W);
  f.kvm_pv_tlb_flush = false;
  f.tlb_delivery.reset();
  EXPECT_EQ(check_vm(f).status, W);
  f.thp_enabled = "never";
  EXPECT_EQ(check_thp(f).status, P);
  f.thp_enabled = "";
  EXPECT_EQ(check_thp(f).status, W);
  f.memlock_soft = 4LL << 30;
  EXPECT_EQ(check_memlock(f).status, P);
  f.cmdline = "mitigations=off";
  f.vulnerabilities = {{"spectre_v2", "Mitigation: Retpolines"}};
  EXPECT_EQ(check_mitigations(f).status, P);
  f.stat_interval = 10;
  EXPECT_EQ(check_stat_interval(f).status, P);
}

TEST(Doctor, CmdlineParsing) {
  const std::string cl = "ro isolcpus=nohz,domain,2-3 quiet nosoftlockup rcu_nocbs=4 -- isolcpus=9";
  EXPECT_EQ(cmdline_param(cl, "isolcpus"), std::optional<std::string>("nohz,domain,2-3"));
  EXPECT_EQ(cmdline_cpus(*cmdline_param(cl, "isolcpus"), {}), (std::vector<int>{2, 3}));
  EXPECT_TRUE(cmdline_flag(cl, "nosoftlockup"));
  EXPECT_FALSE(cmdline_flag(cl, "nosmt"));
  EXPECT_EQ(cmdline_param(cl, "rcu_nocbs"), std::optional<std::string>("4"));
  EXPECT_EQ(cmdline_cpus("all", {0, 1}), (std::vector<int>{0, 1}));
  EXPECT_TRUE(cmdline_cpus("nohz", {0, 1}).empty());
}

TEST(Doctor, SuggestedCmdline) {
  auto f = facts_of("untuned");
  std::string note;
  // Culprit 1, victims 3 and 2: the culprit stays a housekeeping CPU.
  const std::string s = suggest_cmdline(f, {1, 3, 2}, &note);
  EXPECT_NE(s.find("isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3"), std::string::npos) << s;
  EXPECT_NE(s.find("irqaffinity=0-1"), std::string::npos) << s;
  EXPECT_NE(s.find("nosmt"), std::string::npos) << s;
  EXPECT_NE(s.find("nmi_watchdog=0"), std::string::npos);
}

// Issue 13 (c): doctor advised isolcpus=0 nohz_full=0 for a victim on CPU 0.
TEST(Doctor, NeverAdvisesIsolatingCpu0OrTheCulprit) {
  auto f = facts_of("untuned");
  f.nohz_full = std::vector<int>{};  // a NO_HZ_FULL kernel without nohz_full=
  std::string note;
  // Victim on CPU 0 (culprit 2): nothing to isolate, the fix is another CPU.
  std::string s = suggest_cmdline(f, {2, 0}, &note);
  EXPECT_EQ(s.find("isolcpus="), std::string::npos) << s;
  EXPECT_EQ(s.find("nohz_full="), std::string::npos) << s;
  EXPECT_NE(note.find("CPU 0"), std::string::npos) << note;
  auto v = run_doctor_checks(f, {2, 0});
  for (const char* name : {"isolcpus", "nohz_full", "rcu_nocbs"}) {
    const auto d = find(v, name);
    EXPECT_EQ(d.advice.find("=0"), std::string::npos) << name << ": " << d.advice;
    EXPECT_NE(d.advice.find("off CPU 0"), std::string::npos) << name << ": " << d.advice;
  }
  // Culprit 0, victim 1: the culprit and CPU 0 are never in the lists.
  s = suggest_cmdline(f, {0, 1}, &note);
  EXPECT_NE(s.find("isolcpus=1 nohz_full=1 rcu_nocbs=1 "), std::string::npos) << s;
  EXPECT_NE(s.find("irqaffinity=0"), std::string::npos) << s;
  v = run_doctor_checks(f, {3, 1});
  EXPECT_NE(find(v, "isolcpus").advice.find("isolcpus=1 "), std::string::npos) << find(v, "isolcpus").advice;
  EXPECT_NE(find(v, "nohz_full").advice.find("nohz_full=1 "), std::string::npos) << find(v, "nohz_full").advice;
  EXPECT_EQ(isolation_targets({0, 1, 0, 2}), (std::vector<int>{1, 2}));
  EXPECT_EQ(isolation_targets({0}), std::vector<int>{});
  EXPECT_EQ(isolation_targets({3}), std::vector<int>{3});
}

TEST(Doctor, TableFitsIn80Columns) {
  for (const char* fx : {"tuned", "untuned", "broken"}) {
    const std::string t = sink::format_doctor_table(run_doctor_checks(facts_of(fx), {0, 1}));
    std::istringstream in(t);
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      EXPECT_LT(line.size(), 80u) << fx << ": " << line;
      ++lines;
    }
    EXPECT_GT(lines, 23);
  }
}

TEST(Doctor, FlushesWithoutIpisNoteOnlyWhenBroadcastIsOn) {
  DoctorFinding f;
  f.name = "tlb_broadcast";
  f.status = DoctorStatus::kPass;
  f.found = "no INVLPGB in this CPU: remote flushes are IPIs";
  EXPECT_EQ(flushes_without_ipis_note(f), "");
  f.status = DoctorStatus::kWarn;
  f.found = "AMD INVLPGB broadcast flush on (Linux 6.15, CPUID 0x80000008 EBX[3])";
  const std::string n = flushes_without_ipis_note(f);
  EXPECT_EQ(n.rfind(f.found, 0), 0u);
  EXPECT_NE(n.find("no IPI"), std::string::npos);
  EXPECT_NE(n.find("shootdown doctor: tlb_broadcast"), std::string::npos);
}
