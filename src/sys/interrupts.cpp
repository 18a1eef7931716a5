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

Expected<InterruptsSnapshot> parse_interrupts(const std::string& text) {
  InterruptsSnapshot snap;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return Error{"empty /proc/interrupts"};
  {
    std::istringstream hdr(line);
    std::string tok;
    while (hdr >> tok) {
      if (tok.rfind("CPU", 0) != 0) return Error{"unexpected header token '" + tok + "'"};
      try {
        snap.cpus.push_back(std::stoi(tok.substr(3)));
      } catch (...) {
        return Error{"bad CPU column '" + tok + "'"};
      }
    }
  }
  if (snap.cpus.empty()) return Error{"no CPU columns in /proc/interrupts header"};
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

Expected<InterruptsSnapshot> read_interrupts() {
  timespec ts{};
  auto text = read_file("/proc/interrupts");
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (!text) return Error{"cannot read /proc/interrupts"};
  auto snap = parse_interrupts(*text);
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

Expected<InterruptsSnapshot> InterruptsCapture::snapshot() const {
  if (!captured_) return Error{file_.error().empty() ? "/proc/interrupts not captured" : file_.error()};
  auto snap = parse_interrupts(std::string(file_.text()));
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
