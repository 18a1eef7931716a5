// SPDX-License-Identifier: Apache-2.0
#include "sys/interrupts.hpp"

#include <ctime>
#include <sstream>

#include "sys/fs.hpp"
#include "sys/tsc.hpp"

namespace shootdown::sys {

std::optional<std::int64_t> InterruptsSnapshot::get(const std::string& row, int cpu) const {
  auto it = rows.find(row);
  if (it == rows.end()) return std::nullopt;
  for (std::size_t i = 0; i < cpus.size() && i < it->second.size(); ++i)
    if (cpus[i] == cpu) return it->second[i];
  return std::nullopt;
}

std::optional<InterruptsSnapshot> parse_interrupts(const std::string& text, std::string* why) {
  InterruptsSnapshot snap;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) {
    if (why) *why = "empty /proc/interrupts";
    return std::nullopt;
  }
  {
    std::istringstream hdr(line);
    std::string tok;
    while (hdr >> tok) {
      if (tok.rfind("CPU", 0) != 0) {
        if (why) *why = "unexpected header token '" + tok + "'";
        return std::nullopt;
      }
      try {
        snap.cpus.push_back(std::stoi(tok.substr(3)));
      } catch (...) {
        if (why) *why = "bad CPU column '" + tok + "'";
        return std::nullopt;
      }
    }
  }
  if (snap.cpus.empty()) {
    if (why) *why = "no CPU columns in /proc/interrupts header";
    return std::nullopt;
  }
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = trim(line.substr(0, colon));
    std::istringstream rest(line.substr(colon + 1));
    std::vector<std::int64_t> counts;
    // Rows like ERR/MIS have a single column; the others one per CPU.
    for (std::size_t i = 0; i < snap.cpus.size(); ++i) {
      std::string tok;
      auto pos = rest.tellg();
      if (!(rest >> tok)) break;
      char* end = nullptr;
      long long v = std::strtoll(tok.c_str(), &end, 10);
      if (end == tok.c_str() || *end != '\0') {
        rest.clear();
        rest.seekg(pos);
        break;
      }
      counts.push_back(v);
    }
    std::string desc;
    std::getline(rest, desc);
    snap.rows[name] = std::move(counts);
    snap.descriptions[name] = trim(desc);
  }
  return snap;
}

std::optional<InterruptsSnapshot> read_interrupts(std::string* why) {
  timespec ts{};
  auto text = read_file("/proc/interrupts");
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (!text) {
    if (why) *why = "cannot read /proc/interrupts";
    return std::nullopt;
  }
  auto snap = parse_interrupts(*text, why);
  if (snap) snap->mono_ns = static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  return snap;
}

InterruptsCapture::InterruptsCapture() : file_("/proc/interrupts") {}

bool InterruptsCapture::capture() {
  const std::int64_t before = mono_now_ns();
  captured_ = file_.read();
  mono_ns_ = mono_now_ns();
  read_ns_ = mono_ns_ - before;
  return captured_;
}

std::optional<InterruptsSnapshot> InterruptsCapture::snapshot(std::string* why) const {
  if (!captured_) {
    if (why) *why = file_.error().empty() ? "/proc/interrupts not captured" : file_.error();
    return std::nullopt;
  }
  auto snap = parse_interrupts(std::string(file_.text()), why);
  if (snap) snap->mono_ns = mono_ns_;
  return snap;
}

std::int64_t interrupts_delta(const InterruptsSnapshot& before, const InterruptsSnapshot& after, const std::string& row,
                              int cpu) {
  auto a = before.get(row, cpu);
  auto b = after.get(row, cpu);
  if (!a || !b) return 0;
  return *b - *a;
}

}  // namespace shootdown::sys
