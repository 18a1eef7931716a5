// SPDX-License-Identifier: Apache-2.0
// Builds core::BlameInput from one sampling session (see blame_input.hpp).
#include "cmd/blame_input.hpp"

#include <algorithm>
#include <fmt/core.h>
#include <map>
#include <set>
#include <unordered_map>

#include "sys/kallsyms.hpp"

namespace shootdown::cmd {

BlameInput blame_input(int target, const std::string& command, sys::SamplerData& data, sys::UserSymbols& syms,
                       const sys::InterruptsSnapshot* irq0, const sys::InterruptsSnapshot* irq1) {
  BlameInput in;
  // The target and its descendants (PERF_RECORD_FORK, in time order).
  std::set<int> pids{target};
  std::set<int> tids;
  std::stable_sort(data.forks.begin(), data.forks.end(), [](auto& a, auto& b) { return a.mono_ns < b.mono_ns; });
  for (const auto& f : data.forks) {
    if (!pids.count(f.ppid)) continue;
    if (f.pid != f.ppid) pids.insert(f.pid);
    tids.insert(f.tid);
  }
  for (const auto& m : data.mmaps)
    if (pids.count(m.pid)) syms.add_mapping(m);
  const sys::Kallsyms ksyms = sys::Kallsyms::load();

  in.pid = target;
  in.command = command;
  in.start_ns = data.start_ns;
  in.end_ns = data.stop_ns;
  in.lost = data.lost;
  in.processes = static_cast<int>(pids.size());
  in.has_csd = std::none_of(data.missing.begin(), data.missing.end(),
                            [](const std::string& m) { return m.rfind("csd:csd_queue_cpu", 0) == 0; });
  for (auto& m : data.missing) in.notes.push_back("missing: " + m);
  if (data.dropped)
    in.notes.push_back(fmt::format("{} flush samples over the in-memory limit were not kept", data.dropped));
  if (ksyms.empty()) in.notes.push_back("kernel symbols unavailable (/proc/kallsyms hidden): syscalls unknown");

  std::map<std::pair<int, std::uint64_t>, UserFrame> cache;
  auto frame = [&](int pid, std::uint64_t ip, bool ret) {
    auto key = std::make_pair(pid, ip * 2 + (ret ? 1 : 0));
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    UserFrame f = syms.symbolize(pid, ip, ret);
    cache.emplace(key, f);
    return f;
  };
  std::int64_t cut_stacks = 0;
  // Symbolized once per distinct callchain (data.stacks), copied per flush.
  struct Symbolized {
    std::vector<std::string> kernel;
    std::vector<UserFrame> user;
    bool cut = false;
  };
  std::unordered_map<std::uint32_t, Symbolized> by_stack;
  auto symbolized = [&](std::uint32_t index) -> const Symbolized& {
    auto [it, fresh] = by_stack.try_emplace(index);
    if (!fresh) return it->second;
    Symbolized& out = it->second;
    const sys::SampledStack& st = data.stacks[index];
    for (auto ip : st.kernel_ips) {
      std::string fn = ksyms.function(ip);
      out.kernel.push_back(fn.empty() ? fmt::format("{:#x}", ip) : fn);
    }
    // Frames that are real code addresses (core user_frames: the walk ends
    // at the first address outside every executable mapping of the target;
    // the caller a frameless leaf hides comes from the stack copy).
    const auto raw = user_frames(
        st.user_ips, st.has_sp_word ? &st.sp_word : nullptr,
        [&](std::uint64_t ip) { return syms.executable(st.pid, ip); }, &out.cut);
    for (const RawFrame& r : raw) {
      UserFrame u = frame(st.pid, r.ip, r.return_address);
      u.recovered = r.recovered;
      out.user.push_back(std::move(u));
    }
    return out;
  };
  for (const auto& s : data.flushes) {
    if (!pids.count(s.pid) || s.stack >= data.stacks.size()) continue;
    tids.insert(s.tid);
    FlushSample f;
    f.mono_ns = s.mono_ns;
    f.cpu = s.cpu;
    f.pid = s.pid;
    f.tid = s.tid;
    f.pages = s.pages;
    const Symbolized& sym = symbolized(s.stack);
    if (sym.cut) ++cut_stacks;
    f.kernel = sym.kernel;
    f.user = sym.user;
    in.flushes.push_back(std::move(f));
  }
  if (cut_stacks > 0)
    in.notes.push_back(fmt::format(
        "{} of {} user stacks cut at a frame outside every executable mapping of the target (code without frame "
        "pointers: the walk read data as return addresses); the frames kept are real code addresses",
        cut_stacks, in.flushes.size()));
  for (const auto& ipi : data.ipis) {
    if (!pids.count(ipi.pid)) continue;
    IpiSend s;
    s.mono_ns = ipi.mono_ns;
    s.cpu = ipi.cpu;
    s.tid = ipi.tid;
    s.targets = ipi.targets;
    s.callback = ksyms.function(ipi.callback);
    s.queued = ipi.queued;
    s.tlb = s.callback == "flush_tlb_func";
    in.ipis.push_back(s);
  }
  for (const auto& [key, n] : data.received) {
    in.received_all[key.first] += n;
    if (pids.count(key.second)) in.received_by_target[key.first] += n;
  }
  if (irq0 && irq1)
    for (int cpu : irq1->cpus) in.interrupts_tlb[cpu] = sys::interrupts_delta(*irq0, *irq1, "TLB", cpu);
  in.threads = static_cast<int>(tids.size());
  if (in.threads == 0) in.threads = 1;
  return in;
}

}  // namespace shootdown::cmd
