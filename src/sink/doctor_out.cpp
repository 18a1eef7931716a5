// SPDX-License-Identifier: Apache-2.0
#include "sink/doctor_out.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/cpulist.hpp"

namespace shootdown::sink {

namespace {
// Word-wrap `text` to lines of at most `width` columns, each prefixed.
void wrap_into(std::ostringstream& out, const std::string& prefix, const std::string& text, int width) {
  const std::size_t avail =
      width > static_cast<int>(prefix.size()) + 10 ? static_cast<std::size_t>(width) - prefix.size() : 40;
  std::istringstream words(text);
  std::string w, line;
  bool first = true;
  auto flush = [&] {
    if (line.empty()) return;
    out << (first ? prefix : std::string(prefix.size(), ' ')) << line << '\n';
    first = false;
    line.clear();
  };
  while (words >> w) {
    if (!line.empty() && line.size() + 1 + w.size() > avail) flush();
    if (w.size() > avail) w = w.substr(0, avail);
    line += (line.empty() ? "" : " ") + w;
  }
  flush();
}
}  // namespace

std::string format_doctor_table(const std::vector<DoctorFinding>& findings, int width) {
  std::ostringstream out;
  const std::size_t name_w = 14;
  const std::size_t found_w = static_cast<std::size_t>(width > 40 ? width : 40) - 6 - name_w;
  out << "STAT  CHECK         FOUND\n";
  for (const auto& d : findings) {
    std::string name = d.name.substr(0, name_w - 1);
    std::string found = d.found.size() > found_w ? d.found.substr(0, found_w - 3) + "..." : d.found;
    out << to_string(d.status) << "  " << name << std::string(name_w - name.size(), ' ') << found << '\n';
    if (d.status != DoctorStatus::kPass && !d.advice.empty()) wrap_into(out, "      fix: ", d.advice, width);
  }
  return out.str();
}

namespace {

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

}  // namespace

std::string doctor_json(const DoctorReport& r) {
  nlohmann::json j = {{"schema", "shootdown.doctor/1"},
                      {"cpus", r.cpus},
                      {"cpu_choice", r.cpu_choice},
                      {"findings", to_json(r.findings)},
                      {"summary", {{"pass", r.summary.pass}, {"warn", r.summary.warn}, {"fail", r.summary.fail}}},
                      {"suggested_cmdline", r.cmdline},
                      {"suggested_cmdline_note", r.cmdline_note}};
  return j.dump(2) + "\n";
}

std::string doctor_text(const DoctorReport& r) {
  std::string out = fmt::format("shootdown doctor: CPUs {} ({})\n\n", format_cpulist(r.cpus), r.cpu_choice);
  out += format_doctor_table(r.findings);
  out += fmt::format("\n{} pass, {} warn, {} fail\n", r.summary.pass, r.summary.warn, r.summary.fail);
  out += fmt::format("\nSuggested kernel command line for CPUs {}:\n  {}\n", format_cpulist(r.cpus), r.cmdline);
  if (!r.cmdline_note.empty()) out += "  (" + r.cmdline_note + ")\n";
  return out;
}

}  // namespace shootdown::sink
