// shootdown doctor: plan (CPUs) -> read facts -> pure checks -> report.
// Changes nothing on the machine.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cmd/commands.hpp"
#include "core/cpulist.hpp"
#include "core/doctor.hpp"
#include "sys/cpus.hpp"
#include "sys/facts.hpp"
#include "sys/fs.hpp"

namespace shootdown::cmd {

namespace {

struct DoctorOptions {
  std::string cpus;
  bool json = false;
  bool strict = false;
  std::string root;  // hidden: fixture tree (tests)
};

nlohmann::json to_json(const std::vector<DoctorFinding>& findings) {
  auto arr = nlohmann::json::array();
  for (const auto& d : findings) {
    std::string status = to_string(d.status);
    for (auto& c : status) c = static_cast<char>(c - 'A' + 'a');
    arr.push_back({{"status", status},
                   {"name", d.name},
                   {"found", d.found},
                   {"advice", d.advice},
                   {"undermines_numbers", d.undermines_numbers}});
  }
  return arr;
}

int run_doctor(const DoctorOptions& o) {
  if (!o.root.empty()) sys::set_root(o.root);
  const DoctorFacts facts = sys::read_doctor_facts();

  std::vector<int> cpus;
  std::string choice;
  if (!o.cpus.empty()) {
    std::string why;
    auto l = parse_cpulist(o.cpus, &why);
    if (!l || l->empty())
      throw UsageError(fmt::format("--cpus value '{}' is not a CPU list ({}); accepted: e.g. 0,1 or 2-3", o.cpus,
                                   why.empty() ? "empty" : why));
    cpus = *l;
    choice = "given";
  } else {
    const sys::Topology topo = sys::read_topology();
    const CpuChoice pick = choose_cpus(topo, 1);
    cpus = pick.cpus();
    if (cpus.empty()) cpus = topo.online.empty() ? std::vector<int>{0} : std::vector<int>{topo.online.front()};
    choice = "default choice of run: " + pick.why;
  }

  const auto findings = run_doctor_checks(facts, cpus);
  const auto sum = summarize(findings);
  std::string note;
  const std::string cmdline = suggest_cmdline(facts, cpus, &note);

  if (o.json) {
    nlohmann::json j = {{"schema", "shootdown.doctor/1"},
                        {"cpus", cpus},
                        {"cpu_choice", choice},
                        {"findings", to_json(findings)},
                        {"summary", {{"pass", sum.pass}, {"warn", sum.warn}, {"fail", sum.fail}}},
                        {"suggested_cmdline", cmdline},
                        {"suggested_cmdline_note", note}};
    std::fputs((j.dump(2) + "\n").c_str(), stdout);
  } else {
    std::string out = fmt::format("shootdown doctor: CPUs {} ({})\n\n", format_cpulist(cpus), choice);
    out += format_doctor_table(findings);
    out += fmt::format("\n{} pass, {} warn, {} fail\n", sum.pass, sum.warn, sum.fail);
    out += fmt::format("\nSuggested kernel command line for CPUs {}:\n  {}\n", format_cpulist(cpus), cmdline);
    if (!note.empty()) out += "  (" + note + ")\n";
    std::fputs(out.c_str(), stdout);
  }
  if (o.strict && sum.fail > 0) return kExitGateFailed;
  return kExitOk;
}

}  // namespace

Command add_doctor(CLI::App& root) {
  auto opts = std::make_shared<DoctorOptions>();
  CLI::App* app = root.add_subcommand("doctor", "Check this machine against the low-latency tuning list");
  app->add_option("--cpus", opts->cpus, "CPUs a run would use (culprit first), e.g. 0,1; default: run's choice");
  app->add_flag("--json", opts->json, "Print the findings as JSON");
  app->add_flag("--strict", opts->strict, "Exit 3 when any check FAILs (CI gate)");
  app->add_option("--root", opts->root, "Read /proc and /sys under this directory (fixture trees)")->group("");
  app->footer(
      "Each check prints PASS, WARN or FAIL, what was found and the fix. Nothing is\n"
      "changed on the machine. Exit status: 0; with --strict 3 when a check FAILs.\n\n"
      "EXAMPLES:\n"
      "  shootdown doctor                  check the CPUs 'run' would choose\n"
      "  shootdown doctor --cpus 2,3       check CPUs 2 and 3, print a cmdline isolating them\n"
      "  shootdown doctor --json | jq '.findings[] | select(.status != \"pass\")'\n"
      "  shootdown doctor --strict         CI gate: exit 3 on any FAIL");
  return {app, [opts]() { return run_doctor(*opts); }};
}

}  // namespace shootdown::cmd
