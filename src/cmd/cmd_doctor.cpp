// SPDX-License-Identifier: Apache-2.0
// shootdown doctor: plan (CPUs) -> read facts (and measure whether remote TLB
// flushes arrive as IPIs) -> pure checks -> report. Changes nothing on the
// machine.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/core.h>

#include "cli/common_options.hpp"
#include "cmd/commands.hpp"
#include "cmd/driver.hpp"
#include "sink/doctor_out.hpp"
#include "core/cpulist.hpp"
#include "core/doctor.hpp"
#include "experiment/tlb_delivery.hpp"
#include "sys/cpus.hpp"
#include "sys/facts.hpp"
#include "sys/fs.hpp"

namespace shootdown::cmd {

namespace {

constexpr int kTlbDeliveryRequests = 256;  // munmaps of one page: a few ms

struct DoctorOptions {
  std::string cpus;
  bool json = false;
  bool strict = false;
  std::string root;  // hidden: fixture tree (tests)
};

class DoctorTool final : public Tool {
 public:
  explicit DoctorTool(const DoctorOptions& o) : o_(o) {}

  void plan() override {
    if (!o_.cpus.empty()) {
      auto l = parse_cpulist(o_.cpus);
      if (!l || l->empty())
        throw UsageError(fmt::format("--cpus value '{}' is not a CPU list ({}); accepted: e.g. 0,1 or 2-3", o_.cpus,
                                     l ? std::string("empty") : l.error()));
      // Every CPU named must be one this machine (or the --root fixture) has
      // online: doctor measures on them and advises isolating them.
      if (!o_.root.empty()) sys::set_root(o_.root);
      const sys::Topology topo = sys::read_topology();
      for (const int cpu : *l) {
        if (topo.is_online(cpu)) continue;
        throw UsageError(fmt::format("--cpus {}: CPU {} {} (online CPUs: {})", o_.cpus, cpu,
                                     topo.find(cpu) ? "is offline" : "does not exist on this machine",
                                     format_cpulist(topo.online)));
      }
      r_.cpus = *l;
      r_.cpu_choice = "given";
    }
  }

  void prepare() override {
    if (!o_.root.empty()) sys::set_root(o_.root);
    facts_ = sys::read_doctor_facts();
    if (r_.cpus.empty()) {
      const sys::Topology topo = sys::read_topology();
      const CpuChoice pick = choose_cpus(topo, 1);
      r_.cpus = pick.cpus();
      if (r_.cpus.empty()) r_.cpus = topo.online.empty() ? std::vector<int>{0} : std::vector<int>{topo.online.front()};
      r_.cpu_choice = "default choice of run: " + pick.why;
    }
    // The one measured fact: do remote flushes reach the victim as IPIs?
    if (o_.root.empty()) {
      if (r_.cpus.size() < 2)
        facts_.tlb_delivery_error = "one CPU: no remote flush to send";
      else if (auto measured = exp::measure_tlb_delivery(r_.cpus[0], r_.cpus[1], kTlbDeliveryRequests))
        facts_.tlb_delivery = *measured;
      else
        facts_.tlb_delivery_error = measured.error();
    }
  }

  void analyze() override {
    r_.findings = run_doctor_checks(facts_, r_.cpus);
    r_.summary = summarize(r_.findings);
    r_.cmdline = suggest_cmdline(facts_, r_.cpus, &r_.cmdline_note);
  }

  int report() override {
    std::fputs((o_.json ? sink::doctor_json(r_) : sink::doctor_text(r_)).c_str(), stdout);
    if (o_.strict && r_.summary.fail > 0) return kExitGateFailed;
    return kExitOk;
  }

 private:
  const DoctorOptions& o_;
  DoctorFacts facts_;
  sink::DoctorReport r_;
};

}  // namespace

Command add_doctor(CLI::App& root) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* app = root.add_subcommand("doctor", "Check this machine against the low-latency tuning list");
  app->add_option("--cpus", opts->cpus, "CPUs a run would use (culprit first), e.g. 0,1; default: run's choice");
  cli::add_json_flag(*app, opts->json, "the findings", "the checklist");
  app->add_flag("--strict", opts->strict, "Exit 3 when any check FAILs (CI gate)");
  app->add_option("--root", opts->root, "Read /proc and /sys under this directory (fixture trees)")->group("");
  return tool_command<DoctorTool>(
      app, opts,
      {.notes = "Each check prints PASS, WARN or FAIL, what was found and the fix. Nothing is\n"
                "changed on the machine. One check measures: pv_tlb_flush unmaps 256 pages on\n"
                "the first CPU while a thread spins on the second and counts the TLB IPIs that\n"
                "arrive (a hypervisor's paravirtual flush sends none the guest can see).\n"
                "Exit status: 0; with --strict 3 when a check FAILs.",
       .examples = {"shootdown doctor                  check the CPUs 'run' would choose",
                    "shootdown doctor --cpus 2,3       check CPUs 2 and 3, print a cmdline isolating them",
                    "shootdown doctor --json | jq '.findings[] | select(.status != \"pass\")'",
                    "shootdown doctor --strict         CI gate: exit 3 on any FAIL"},
       .exit_status = ""});
}

}  // namespace shootdown::cmd
