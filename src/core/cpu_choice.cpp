// SPDX-License-Identifier: Apache-2.0
#include "core/cpu_choice.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace shootdown {

const CpuInfo* Topology::find(int cpu) const {
  for (const auto& c : cpus)
    if (c.cpu == cpu) return &c;
  return nullptr;
}

bool Topology::is_online(int cpu) const {
  return std::find(online.begin(), online.end(), cpu) != online.end();
}

bool Topology::smt_siblings(int a, int b) const {
  if (a == b) return false;
  const CpuInfo* ca = find(a);
  if (!ca) return false;
  return std::find(ca->siblings.begin(), ca->siblings.end(), b) != ca->siblings.end();
}

bool Topology::housekeeping(int cpu) const {
  const CpuInfo* c = find(cpu);
  return c && c->online && !c->isolated && !c->nohz_full;
}

std::vector<int> CpuChoice::cpus() const {
  std::vector<int> v;
  if (culprit >= 0) v.push_back(culprit);
  v.insert(v.end(), victims.begin(), victims.end());
  return v;
}

namespace {

// Victim rank: isolated and nohz_full (3) > isolated (2) > nohz_full (1) > 0.
int tier(const CpuInfo& c) {
  return (c.isolated ? 2 : 0) + (c.nohz_full ? 1 : 0);
}

struct NodePick {
  std::vector<int> victims;
  int culprit = -1;
  int score = 0;  // sum of victim tiers
};

bool shares_core(const Topology& t, int cpu, const std::vector<int>& with) {
  for (int x : with)
    if (x == cpu || t.smt_siblings(x, cpu)) return true;
  return false;
}

// Culprit among `list` (sorted by preference): housekeeping first, then the lowest number.
int pick_culprit(const Topology& t, const std::vector<const CpuInfo*>& list, const std::vector<int>& victims) {
  int best = -1;
  bool best_hk = false;
  for (const CpuInfo* c : list) {
    if (shares_core(t, c->cpu, victims)) continue;
    const bool hk = t.housekeeping(c->cpu);
    if (best < 0 || (hk && !best_hk) || (hk == best_hk && c->cpu < best)) {
      best = c->cpu;
      best_hk = hk;
    }
  }
  return best;
}

std::vector<int> pick_victims(const Topology& t, const std::vector<const CpuInfo*>& ranked, int count,
                              const std::vector<int>& avoid) {
  std::vector<int> chosen;
  for (const CpuInfo* c : ranked) {
    if (shares_core(t, c->cpu, avoid) || shares_core(t, c->cpu, chosen)) continue;
    chosen.push_back(c->cpu);
    if (static_cast<int>(chosen.size()) == count) break;
  }
  return chosen;
}

NodePick pick_in_node(const Topology& t, std::vector<const CpuInfo*> list, int count) {
  std::stable_sort(list.begin(), list.end(), [](const CpuInfo* a, const CpuInfo* b) {
    return std::make_tuple(-tier(*a), a->cpu == 0, a->cpu) < std::make_tuple(-tier(*b), b->cpu == 0, b->cpu);
  });
  NodePick p;
  // Victims first (they get the best CPUs), then a culprit off their cores.
  p.victims = pick_victims(t, list, count, {});
  if (static_cast<int>(p.victims.size()) == count) p.culprit = pick_culprit(t, list, p.victims);
  if (p.culprit < 0) {
    // No CPU left for the culprit: reserve one first (housekeeping preferred), then victims.
    std::vector<const CpuInfo*> by_cpu = list;
    std::sort(by_cpu.begin(), by_cpu.end(), [&](const CpuInfo* a, const CpuInfo* b) {
      return std::make_tuple(!t.housekeeping(a->cpu), a->cpu) < std::make_tuple(!t.housekeeping(b->cpu), b->cpu);
    });
    for (const CpuInfo* c : by_cpu) {
      auto v = pick_victims(t, list, count, {c->cpu});
      if (static_cast<int>(v.size()) == count) {
        p.victims = v;
        p.culprit = c->cpu;
        break;
      }
    }
  }
  if (p.culprit < 0 || static_cast<int>(p.victims.size()) != count) return NodePick{};
  for (int v : p.victims) p.score += tier(*t.find(v));
  return p;
}

std::string describe(const Topology& t, int cpu) {
  const CpuInfo* c = t.find(cpu);
  std::vector<std::string> w;
  if (c->isolated) w.push_back("isolated");
  if (c->nohz_full) w.push_back("nohz_full");
  if (w.empty()) w.push_back(cpu == 0 ? "housekeeping, CPU 0" : "not isolated");
  std::string s;
  for (const auto& x : w) s += (s.empty() ? "" : ", ") + x;
  return std::to_string(cpu) + " (" + s + ")";
}

}  // namespace

CpuChoice choose_cpus(const Topology& topo, int victims) {
  CpuChoice out;
  if (victims < 1) {
    out.why = "no victim requested";
    return out;
  }
  std::map<int, std::vector<const CpuInfo*>> by_node;
  for (const auto& c : topo.cpus)
    if (c.online) by_node[c.node].push_back(&c);
  NodePick best;
  int best_node = -1;
  for (auto& [node, list] : by_node) {
    NodePick p = pick_in_node(topo, list, victims);
    if (p.culprit < 0) continue;
    const bool hk = topo.housekeeping(p.culprit);
    const bool best_hk = best.culprit >= 0 && topo.housekeeping(best.culprit);
    if (best_node < 0 || p.score > best.score || (p.score == best.score && hk && !best_hk)) {
      best = p;
      best_node = node;
    }
  }
  if (best_node < 0) {
    out.why = "no NUMA node has " + std::to_string(victims + 1) + " online CPUs on distinct cores (a culprit and " +
              std::to_string(victims) + (victims == 1 ? " victim" : " victims") + ")";
    return out;
  }
  out.culprit = best.culprit;
  out.victims = best.victims;
  std::string v;
  for (int c : out.victims) v += (v.empty() ? "" : ", ") + describe(topo, c);
  out.why = std::string(out.victims.size() == 1 ? "victim " : "victims ") + v + "; culprit " +
            std::to_string(out.culprit) +
            (topo.housekeeping(out.culprit) ? " (housekeeping)" : " (no housekeeping CPU left)") + "; node " +
            std::to_string(best_node) + ", no two on one core";
  return out;
}

}  // namespace shootdown
